//! The `--kernel FILE.cu:ENTRY,key=value,...` option and the `[[kernel]]` config section: read
//! and checked for syntax here; whether the entry, its parameter list and the launch options
//! fit the file is checked when the kernel is loaded, in that order.

use super::expr::Expr;
use super::signature::{self, Signature};
use kernel::{Dtype, Precision, Workload};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// How the grid is derived from the shape.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Grid {
    /// One block per `rows x cols` tile of the output's last two dimensions (`tile:64x64`;
    /// grid.x over columns, grid.y over rows, grid.z over the leading dimensions), or per
    /// `n` elements of the flattened output (`tile:256`).
    Tile(Vec<usize>),
    /// Explicit x, y, z expressions of the shape's dimensions.
    Exprs(Vec<Expr>),
}

impl Grid {
    /// The option as it is written: `grid=tile:64x64` or `grid=(cdiv(N,64),cdiv(M,64))`.
    pub fn option(&self) -> String {
        let join = |parts: Vec<String>, sep: &str| parts.join(sep);
        match self {
            Self::Tile(t) => format!(
                "grid=tile:{}",
                join(t.iter().map(ToString::to_string).collect(), "x")
            ),
            Self::Exprs(e) => format!(
                "grid=({})",
                join(e.iter().map(ToString::to_string).collect(), ",")
            ),
        }
    }
}

/// Threads per block: numbers, or expressions of the shape evaluated for each, as host code
/// that picks its block from the shape computes it (`min(N,1024)`, `D`).
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Block {
    Fixed([u32; 3]),
    Exprs(Vec<Expr>),
}

impl Block {
    /// The block at the dimensions `vars`, or why no GPU launches it.
    pub fn at(&self, vars: &[(&str, usize)]) -> Result<[u32; 3], String> {
        let exprs = match self {
            Self::Fixed(b) => return Ok(*b),
            Self::Exprs(e) => e,
        };
        let mut block = [1u32; 3];
        for (axis, (slot, e)) in block.iter_mut().zip(exprs).enumerate() {
            let n = e.eval(vars).map_err(|m| format!("block {m}"))?;
            if n < 1 {
                return Err(format!(
                    "block {} = {e} = {n} is not a positive number",
                    XYZ[axis]
                ));
            }
            *slot = u32::try_from(n).map_err(|_| {
                format!(
                    "block {} = {e} = {n} threads; a block holds at most 1024",
                    XYZ[axis]
                )
            })?;
        }
        let text = exprs
            .iter()
            .map(|e| e.to_string())
            .collect::<Vec<_>>()
            .join(", ");
        check_block(block, &format!("({text}) = {}", block_text(block)))?;
        Ok(block)
    }

    /// The expressions, for the checks of the names they use.
    pub fn exprs(&self) -> &[Expr] {
        match self {
            Self::Fixed(_) => &[],
            Self::Exprs(e) => e,
        }
    }
}

const XYZ: [&str; 3] = ["x", "y", "z"];

/// How a matrix (GEMM's A, B or C; a head's K or V) lies in memory.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Layout {
    /// Row-major, `B[K][N]`: the workload's own.
    #[default]
    Row,
    /// Column-major, `B[n * K + k]`: each column contiguous (a K-major B, as cuBLAS and most
    /// tensor-core kernels take it).
    Col,
}

/// How attention's Q, K, V and O order their dimensions.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum HeadLayout {
    /// `[B][H][S][D]`, the workload's own: each head's rows contiguous.
    #[default]
    Bhsd,
    /// `[B][S][H][D]`, as FlashAttention's API and `(batch, seq, heads, dim)` tensors take
    /// them: the heads of one position side by side.
    Bshd,
}

/// One launch of the kernel's plan, the first (the spec's own options) or one `then=` adds
/// after it: which kernel of the file, what it is passed and how it is launched.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct LaunchSpec {
    pub entry: String,
    pub args: Option<String>,
    pub block: Option<Block>,
    pub grid: Option<Grid>,
    pub smem: Option<Expr>,
    pub cooperative: bool,
}

/// The options that belong to one launch: after a `then=`, they are that launch's.
pub const LAUNCH_KEYS: [&str; 5] = ["args", "block", "grid", "smem", "launch"];

impl LaunchSpec {
    fn new(entry: &str) -> Self {
        Self {
            entry: entry.to_string(),
            args: None,
            block: None,
            grid: None,
            smem: None,
            cooperative: false,
        }
    }

    /// The block and grid, which every launch needs: checked after the entry and its
    /// parameter list, so that the first error a user meets is the first thing to fix.
    pub fn launch(&self) -> Result<(&Block, &Grid), (String, String)> {
        let block = self.block.as_ref().ok_or_else(|| {
            (
                "block".to_string(),
                "missing block=THREADS (256, 16x16, 32x8x1, or expressions of the shape such \
                 as (min(N,1024))): the block size it is launched with"
                    .to_string(),
            )
        })?;
        let grid = self.grid.as_ref().ok_or_else(|| {
            (
                "grid".to_string(),
                "missing grid: grid=tile:64x64 (one block per 64x64 tile of the output) or \
                 grid=(cdiv(N,64),cdiv(M,64)) (expressions of the shape's dimensions and \
                 SMS, the GPU's SM count)"
                    .to_string(),
            )
        })?;
        Ok((block, grid))
    }

    /// `then=reduce: ` for launch `at` after the first, for messages; empty for the entry.
    pub fn prefix(&self, at: usize) -> String {
        match at {
            0 => String::new(),
            _ => format!("then={}: ", self.entry),
        }
    }

    /// The expressions of its launch options, each with its key.
    fn exprs(&self) -> Vec<(&'static str, &Expr)> {
        let mut exprs: Vec<(&str, &Expr)> = self.smem.iter().map(|e| ("smem", e)).collect();
        if let Some(Grid::Exprs(g)) = &self.grid {
            exprs.extend(g.iter().map(|e| ("grid", e)));
        }
        if let Some(b) = &self.block {
            exprs.extend(b.exprs().iter().map(|e| ("block", e)));
        }
        exprs
    }
}

/// A user kernel as written on the command line or in the config, checked for syntax.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct UserKernelSpec {
    pub file: PathBuf,
    /// The function to call: `name`, `ns::name` or `name<args>`.
    pub entry: String,
    pub workload: Option<Workload>,
    pub signature: Option<String>,
    /// A parameter list of the kernel's own, `(Q, K, V, S, D, cdiv(S,32), scale, l, m, O)`,
    /// instead of a signature.
    pub args: Option<String>,
    /// Threads per block; required, but reported after the entry and its parameters.
    pub block: Option<Block>,
    /// `cluster=XxYxZ`: blocks per thread block cluster, as host code sets them at launch
    /// (`cudaLaunchKernelEx` with `cudaLaunchAttributeClusterDimension`) for a kernel that
    /// declares no `__cluster_dims__` of its own.
    pub cluster: Option<[u32; 3]>,
    pub grid: Option<Grid>,
    /// Dynamic shared memory in bytes.
    pub smem: Option<Expr>,
    /// The error bound the row is judged by; default: that of its coarsest buffer type.
    pub precision: Option<Precision>,
    /// Element types: `(None, t)` for every tensor of the workload, `(Some(name), t)` for
    /// one buffer; later entries win.
    pub dtype: Vec<(Option<String>, Dtype)>,
    /// A's, B's and C's layouts (GEMM).
    pub a: Option<Layout>,
    pub b: Option<Layout>,
    pub c: Option<Layout>,
    /// Attention's order of dimensions (`layout=`), and K's and V's layouts within a head
    /// (`k=`, `v=`; column-major is `[D][S]`, K or V transposed).
    pub layout: Option<HeadLayout>,
    pub k: Option<Layout>,
    pub v: Option<Layout>,
    /// BLAS `alpha` and `beta` (signatures that pass them).
    pub alpha: Option<f32>,
    pub beta: Option<f32>,
    pub id: Option<String>,
    /// `-D NAME=VALUE` for each shape: NAME and an expression of the shape's dimensions, so
    /// that a kernel specialized at compile time (`#define TILE`, `KS` for the filter size) is
    /// compiled for the shape it runs.
    pub defines: Vec<(String, Expr)>,
    /// `constant=SYMBOL:BUFFER`: a `__constant__` array of the file that the lab fills with a
    /// buffer of the workload before each launch, as host code's `cudaMemcpyToSymbol` would.
    pub constants: Vec<(String, String)>,
    /// `launch=cooperative`: a cooperative launch (`cudaLaunchCooperativeKernel`), every block
    /// resident at once, which `cooperative_groups::this_grid().sync()` needs.
    pub cooperative: bool,
    /// `against=RUNG`: the rung it is set beside, as a rung beside its parent (checked
    /// against the registry when the kernel is loaded).
    pub against: Option<String>,
    /// `output=`: what the output holds when each run starts, where host code sets it.
    pub output_start: OutputStart,
    /// `include=DIR` (repeatable): folders the file's headers lie in, as nvcc's `-I` names
    /// them.
    pub includes: Vec<PathBuf>,
    /// `input=NAME:VALUE` (repeatable): an input of the workload filled with this value rather
    /// than random ones, for a kernel that takes it as one number (a layer normalization's
    /// scale `g` and shift `b`); the kernel's reference is computed with it.
    pub fixed_inputs: Vec<(String, f32)>,
    /// `then=ENTRY` and the launch options after it: kernels of the same file launched after
    /// the entry, in order, on the same stream, as host code launches a reduction after a
    /// split-K GEMM. They share the entry's module (its `__device__` variables) and the
    /// workspaces its `args=` declares.
    pub then: Vec<LaunchSpec>,
    /// The options as written (`key`, `value`), in order: what a run records to load the
    /// kernel again ([`super::record::KernelRecord`]).
    #[serde(skip)]
    pub options: Vec<(String, String)>,
    /// Where a `[[kernel]]` section of a config wrote it (`cfg.toml:12`), for messages.
    #[serde(skip)]
    pub origin: Option<String>,
}

/// The options a spec may carry, for messages.
pub const KEYS: [&str; 26] = [
    "workload",
    "signature",
    "args",
    "block",
    "cluster",
    "grid",
    "smem",
    "dtype",
    "a",
    "b",
    "c",
    "layout",
    "k",
    "v",
    "alpha",
    "beta",
    "precision",
    "id",
    "define",
    "constant",
    "launch",
    "against",
    "output",
    "include",
    "input",
    "then",
];

/// Brackets open around a point of C++ text. A `>` closes a `<` only where that `<` is the
/// innermost open bracket, and a closing parenthesis or brace closes every `<` opened inside
/// it, so a comparison in parentheses (`k<(BM > 64), 2>`) is not taken for the end of a
/// template's arguments.
#[derive(Default)]
pub struct Nesting(Vec<char>);

impl Nesting {
    /// Takes in one character; true if it closed the outermost open bracket.
    pub fn step(&mut self, c: char) -> bool {
        let before = self.0.len();
        match c {
            '<' | '(' | '[' | '{' => self.0.push(c),
            '>' if self.0.last() == Some(&'<') => {
                self.0.pop();
            }
            ')' | ']' | '}' => {
                let open = match c {
                    ')' => '(',
                    ']' => '[',
                    _ => '{',
                };
                if let Some(at) = self.0.iter().rposition(|&o| o == open) {
                    self.0.truncate(at);
                }
            }
            _ => {}
        }
        before > 0 && self.0.is_empty()
    }

    pub fn depth(&self) -> usize {
        self.0.len()
    }
}

/// The end (one past) of the bracket that opens `text`, or `text.len()` if it never closes.
pub fn bracket_end(text: &str) -> usize {
    let mut nesting = Nesting::default();
    text.char_indices()
        .find(|&(_, c)| nesting.step(c))
        .map_or(text.len(), |(i, c)| i + c.len_utf8())
}

/// Splits at commas outside `<>`, `()`, `[]` and `{}`.
pub fn split_top(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let (mut nesting, mut start) = (Nesting::default(), 0);
    for (i, c) in text.char_indices() {
        nesting.step(c);
        if c == ',' && nesting.depth() == 0 {
            out.push(&text[start..i]);
            start = i + 1;
        }
    }
    out.push(&text[start..]);
    out
}

/// A block as the option writes it: `16x16` for [16, 16, 1], `128` for [128, 1, 1].
pub fn block_text(block: [u32; 3]) -> String {
    let used = block.iter().rposition(|&n| n != 1).map_or(1, |i| i + 1);
    block[..used]
        .iter()
        .map(u32::to_string)
        .collect::<Vec<_>>()
        .join("x")
}

/// Whether `v` is written as numbers only, `X`, `XxY` or `XxYxZ`.
fn is_dims(v: &str) -> bool {
    !v.contains(|c: char| !(c.is_ascii_digit() || c == 'x' || c == ' '))
}

/// `X`, `XxY` or `XxYxZ` positive numbers, of what `option` counts.
fn parse_dims(option: &str, v: &str, what: &str) -> Result<[u32; 3], String> {
    if !is_dims(v) {
        return Err(format!(
            "{option} {v:?}: expected X, XxY or XxYxZ {what} as numbers; {option}= takes no \
             expression of the shape (a launcher that picks it from the shape needs a row for \
             each choice)"
        ));
    }
    let parts: Vec<&str> = v.split('x').map(str::trim).collect();
    if parts.is_empty() || parts.len() > 3 {
        return Err(format!("{option} {v:?}: expected X, XxY or XxYxZ {what}"));
    }
    let mut dims = [1u32; 3];
    for (b, p) in dims.iter_mut().zip(&parts) {
        // All digits: a number, however large (which the limits below then refuse).
        let n: u64 = match p.parse() {
            Ok(n) => n,
            Err(_) if !p.is_empty() => u64::MAX,
            Err(_) => return Err(format!("{option} {v:?}: {p:?} is not a positive number")),
        };
        if n == 0 {
            return Err(format!("{option} {v:?}: {p:?} is not a positive number"));
        }
        *b = u32::try_from(n)
            .map_err(|_| format!("{option} {v:?}: {p} {what} are more than any launch can have"))?;
    }
    Ok(dims)
}

/// What a GPU launches: x and y up to 1024 threads, z up to 64, 1024 in all.
fn check_block(block: [u32; 3], text: &str) -> Result<(), String> {
    let threads: u64 = block.iter().map(|&b| u64::from(b)).product();
    if threads > 1024 {
        return Err(format!(
            "block {text} has {threads} threads; a block holds at most 1024"
        ));
    }
    for (axis, (&n, limit)) in block.iter().zip([1024, 1024, 64]).enumerate() {
        if n > limit {
            return Err(format!(
                "block {text}: {} is {n} threads, more than the {limit} a block's {} may have",
                XYZ[axis], XYZ[axis]
            ));
        }
    }
    Ok(())
}

/// `256`, `16x16`, `32x8x1`, or `(x, y, z)` expressions of the shape (parentheses optional
/// for one), as `grid=` takes them.
fn parse_block(v: &str) -> Result<Block, String> {
    if is_dims(v) {
        let block = parse_dims("block", v, "threads")?;
        check_block(block, &format!("{v:?}"))?;
        return Ok(Block::Fixed(block));
    }
    let exprs = parse_exprs("block", v)?;
    // Expressions of numbers alone are numbers.
    let block = Block::Exprs(exprs);
    match block.at(&[]) {
        Ok(fixed) => Ok(Block::Fixed(fixed)),
        Err(_)
            if block
                .exprs()
                .iter()
                .any(|e| !e.unknown_names(&[]).is_empty()) =>
        {
            Ok(block)
        }
        Err(e) => Err(e),
    }
}

/// `(x, y, z)`: one to three expressions (parentheses optional).
fn parse_exprs(option: &str, v: &str) -> Result<Vec<Expr>, String> {
    let inner = v
        .trim()
        .strip_prefix('(')
        .and_then(|r| r.strip_suffix(')'))
        .unwrap_or(v);
    let exprs = split_top(inner)
        .into_iter()
        .map(Expr::parse)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| format!("{option}: {e}"))?;
    if exprs.is_empty() || exprs.len() > 3 {
        return Err(format!(
            "{option} {v:?}: expected 1 to 3 expressions, (x, y, z)"
        ));
    }
    Ok(exprs)
}

/// `row` or `col` for the operand `option` names: `row` holds it as `row_major`, `col` as
/// `col_major`.
fn parse_layout(option: &str, v: &str, row_major: &str, col_major: &str) -> Result<Layout, String> {
    match v {
        "row" => Ok(Layout::Row),
        "col" => Ok(Layout::Col),
        _ => Err(format!(
            "{option} {v:?}: expected row ({row_major}, the default) or col (column-major, \
             {col_major})"
        )),
    }
}

fn parse_head_layout(v: &str) -> Result<HeadLayout, String> {
    match v {
        "bhsd" => Ok(HeadLayout::Bhsd),
        "bshd" => Ok(HeadLayout::Bshd),
        _ => Err(format!(
            "layout {v:?}: expected bhsd (Q, K, V and O as [B][H][S][D], the default) or bshd \
             ([B][S][H][D], the heads of a position side by side)"
        )),
    }
}

fn parse_cluster(v: &str) -> Result<[u32; 3], String> {
    let cluster = parse_dims("cluster", v, "blocks")?;
    let blocks: u32 = cluster.iter().product();
    if blocks > 8 {
        return Err(format!(
            "cluster {v:?} has {blocks} blocks; a portable cluster holds at most 8"
        ));
    }
    Ok(cluster)
}

/// `NAME:VALUE`: an input and the number that fills it.
fn parse_fixed_input(v: &str) -> Result<(String, f32), String> {
    let usage = "expected input=NAME:VALUE, such as input=gamma:1 (the input filled with VALUE)";
    let (name, value) = v.split_once(':').ok_or_else(|| format!("{v:?}: {usage}"))?;
    let name = name.trim();
    if name.is_empty() {
        return Err(format!("{v:?}: {usage}"));
    }
    Ok((name.to_string(), parse_number("input", value.trim())?))
}

/// `launch=cooperative`, the one launch mode to ask for.
fn parse_launch(v: &str) -> Result<bool, String> {
    if v != "cooperative" {
        return Err(format!(
            "launch {v:?}: the one launch mode to ask for is cooperative \
             (cudaLaunchCooperativeKernel: every block resident at once, for grid.sync())"
        ));
    }
    Ok(true)
}

fn parse_grid(v: &str) -> Result<Grid, String> {
    if let Some(t) = v.strip_prefix("tile:") {
        let tile: Vec<usize> = t
            .split('x')
            .map(|p| p.trim().parse().ok().filter(|&n| n >= 1))
            .collect::<Option<_>>()
            .filter(|t: &Vec<usize>| (1..=2).contains(&t.len()))
            .ok_or_else(|| {
                format!("grid {v:?}: expected tile:ROWSxCOLS (an output tile per block) or tile:N")
            })?;
        return Ok(Grid::Tile(tile));
    }
    Ok(Grid::Exprs(parse_exprs("grid", v)?))
}

/// `f32`, `f16`, `bf16`, `e4m3`, `e5m2`, `i32` or `s8` (and the usual other spellings).
pub fn parse_dtype(v: &str) -> Option<Dtype> {
    match v.trim() {
        "f32" | "fp32" | "float" => Some(Dtype::F32),
        "f16" | "fp16" | "half" => Some(Dtype::F16),
        "bf16" | "bfloat16" => Some(Dtype::Bf16),
        "e4m3" | "fp8_e4m3" | "fp8e4m3" => Some(Dtype::E4m3),
        "e5m2" | "fp8_e5m2" | "fp8e5m2" => Some(Dtype::E5m2),
        "i32" | "int" | "int32" | "s32" => Some(Dtype::I32),
        "s8" | "i8" | "int8" => Some(Dtype::S8),
        _ => None,
    }
}

/// `f16`, or `A:f16,B:f16,C:f32` (a first bare type is the default for every buffer).
fn parse_dtypes(v: &str) -> Result<Vec<(Option<String>, Dtype)>, String> {
    let inner = v
        .trim()
        .strip_prefix('(')
        .and_then(|r| r.strip_suffix(')'))
        .unwrap_or(v);
    let bad = |t: &str| {
        format!(
            "dtype {t:?}: expected f32, f16, bf16, e4m3, e5m2, i32 or s8, for all buffers or per buffer \
             (A:f16)"
        )
    };
    inner
        .split(',')
        .map(|item| match item.split_once(':') {
            Some((name, t)) => Ok((
                Some(name.trim().to_string()),
                parse_dtype(t).ok_or_else(|| bad(item))?,
            )),
            None => Ok((None, parse_dtype(item).ok_or_else(|| bad(item))?)),
        })
        .collect()
}

/// `NAME=EXPR`: a C identifier and an expression of the shape's dimensions.
/// `Mc:filter`: the `__constant__` array and the buffer that fills it.
fn parse_constant(v: &str) -> Result<(String, String), String> {
    let (symbol, buffer) = v.split_once(':').ok_or_else(|| {
        format!("constant {v:?}: expected SYMBOL:BUFFER, e.g. constant=Mc:filter")
    })?;
    let (symbol, buffer) = (symbol.trim(), buffer.trim());
    let ident = |t: &str| {
        t.chars()
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
            && t.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
    };
    if !ident(symbol) {
        return Err(format!("constant {v:?}: {symbol:?} is not a variable name"));
    }
    if buffer.is_empty() {
        return Err(format!("constant {v:?}: which buffer fills {symbol}?"));
    }
    Ok((symbol.to_string(), buffer.to_string()))
}

fn parse_define(v: &str) -> Result<(String, Expr), String> {
    let (name, value) = v.split_once('=').ok_or_else(|| {
        format!("define {v:?}: expected NAME=VALUE, e.g. define=TILE=64 or define=KS=K")
    })?;
    let name = name.trim();
    let ident = name
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    if !ident {
        return Err(format!("define {v:?}: {name:?} is not a macro name"));
    }
    Ok((name.to_string(), Expr::parse(value)?))
}

fn parse_number(key: &str, v: &str) -> Result<f32, String> {
    v.parse::<f32>()
        .ok()
        .filter(|x| x.is_finite())
        .ok_or_else(|| format!("{key} {v:?} is not a finite number"))
}

impl UserKernelSpec {
    /// The id its rows carry: `id=`, or the file's name and the entry (`my.cu:sgemm<64>`).
    pub fn id(&self) -> String {
        self.id.clone().unwrap_or_else(|| {
            let file = self
                .file
                .file_name()
                .map_or(self.file.display().to_string(), |n| {
                    n.to_string_lossy().into_owned()
                });
            format!("{file}:{}", self.entry)
        })
    }

    /// How messages name it: `"my.cu:sgemm"`, and where a config wrote it, the section's
    /// place (`"my.cu:sgemm" (the [[kernel]] at cfg.toml:12)`).
    pub fn label(&self) -> String {
        let name = format!("{:?}", format!("{}:{}", self.file.display(), self.entry));
        match &self.origin {
            Some(at) => format!("{name} (the [[kernel]] at {at})"),
            None => name,
        }
    }

    /// Reads `FILE.cu:ENTRY[,key=value]...` (see `docs/your-kernel.md`). An item without
    /// `=` after `dtype=` continues its list (`dtype=A:f16,B:f16,C:f32`).
    pub fn parse(text: &str) -> Result<Self, super::UserKernelError> {
        let err = |message: String| super::UserKernelError::Spec {
            spec: format!("{text:?}"),
            message,
        };
        let split = [".cu:", ".cuh:", ".h:"]
            .iter()
            .find_map(|ext| text.find(ext).map(|i| i + ext.len() - 1))
            .or_else(|| text.find(':'))
            .ok_or_else(|| err("expected FILE.cu:ENTRY, e.g. my_gemm.cu:sgemm<64,64,8>".into()))?;
        let file = &text[..split];
        if file.trim().is_empty() {
            return Err(err(
                "no file before the `:`: expected FILE.cu:ENTRY, e.g. my_gemm.cu:sgemm<64,64,8>"
                    .into(),
            ));
        }
        let mut parts = split_top(&text[split + 1..]).into_iter();
        let entry = parts.next().unwrap_or("").trim();
        // `k<64,block=256`: every option would read as a template argument.
        if entry.matches('<').count() > entry.matches('>').count() {
            return Err(err(format!(
                "the entry's template arguments are not closed: {:?} has no `>`",
                entry.split(',').next().unwrap_or(entry)
            )));
        }
        let mut pairs: Vec<(String, String)> = Vec::new();
        for p in parts {
            match p.split_once('=') {
                Some((k, v)) => pairs.push((k.trim().to_string(), v.trim().to_string())),
                None if p.contains(':') && pairs.last().is_some_and(|(k, _)| k == "dtype") => {
                    if let Some((_, v)) = pairs.last_mut() {
                        v.push(',');
                        v.push_str(p.trim());
                    }
                }
                None => {
                    return Err(err(format!(
                        "option {p:?} is not key=value; keys: {}",
                        KEYS.join(", ")
                    )));
                }
            }
        }
        Self::from_pairs(PathBuf::from(file), entry, &pairs).map_err(|(_, m)| err(m))
    }

    /// Builds a spec from its options; an error names the key at fault.
    pub fn from_pairs(
        file: PathBuf,
        entry: &str,
        pairs: &[(String, String)],
    ) -> Result<Self, (String, String)> {
        if entry.is_empty() {
            return Err(("entry".into(), "no entry: expected FILE.cu:ENTRY".into()));
        }
        let mut spec = Self {
            file,
            entry: entry.to_string(),
            workload: None,
            signature: None,
            args: None,
            block: None,
            cluster: None,
            grid: None,
            smem: None,
            precision: None,
            dtype: Vec::new(),
            a: None,
            b: None,
            c: None,
            layout: None,
            k: None,
            v: None,
            alpha: None,
            beta: None,
            id: None,
            defines: Vec::new(),
            constants: Vec::new(),
            cooperative: false,
            against: None,
            output_start: OutputStart::Poison,
            includes: Vec::new(),
            fixed_inputs: Vec::new(),
            then: Vec::new(),
            options: pairs.to_vec(),
            origin: None,
        };
        // Where the options of the launch being read start: after the last `then=`.
        let mut segment = 0;
        for (i, (k, v)) in pairs.iter().enumerate() {
            // An option after a `then=` is that launch's, and its messages say which.
            let prefix = match spec.then.last() {
                Some(l) if k != "then" => l.prefix(spec.then.len()),
                _ => String::new(),
            };
            let at = |m: String| (k.clone(), format!("{prefix}{m}"));
            // Options that hold one value: a second would silently win over the first.
            let repeatable = matches!(
                k.as_str(),
                "define" | "constant" | "include" | "dtype" | "input" | "then"
            );
            if !repeatable && let Some((_, first)) = pairs[segment..i].iter().find(|(p, _)| p == k)
            {
                return Err(at(format!(
                    "{k} is given twice ({k}={first} and {k}={v}): give it once"
                )));
            }
            if k == "then" {
                if v.is_empty() {
                    return Err(at(
                        "then= names the next kernel of the file to launch, such as \
                         then=reduce,block=256,grid=(cdiv(M*N,256))"
                            .into(),
                    ));
                }
                if v.matches('<').count() > v.matches('>').count() {
                    return Err(at(format!(
                        "the template arguments of then={v} are not closed: it has no `>`"
                    )));
                }
                spec.then.push(LaunchSpec::new(v));
                segment = i;
                continue;
            }
            if let Some(next) = spec.then.last_mut() {
                if !LAUNCH_KEYS.contains(&k.as_str()) {
                    return Err(at(format!(
                        "{k}= is an option of the whole kernel, not of one launch: give it \
                         before the first then= (a launch after then= takes {})",
                        LAUNCH_KEYS.map(|k| format!("{k}=")).join(", ")
                    )));
                }
                match k.as_str() {
                    "args" => next.args = Some(v.clone()),
                    "block" => next.block = Some(parse_block(v).map_err(at)?),
                    "grid" => next.grid = Some(parse_grid(v).map_err(at)?),
                    "smem" => next.smem = Some(Expr::parse(v).map_err(at)?),
                    _ => next.cooperative = parse_launch(v).map_err(at)?,
                }
                continue;
            }
            match k.as_str() {
                "workload" => {
                    spec.workload = Some(
                        Workload::parse(v).ok_or_else(|| at(crate::select::unknown_workload(v)))?,
                    )
                }
                "signature" => {
                    let sig = Signature::named(v).ok_or_else(|| {
                        let all: Vec<&str> = signature::ALL.iter().map(|s| s.name).collect();
                        at(format!(
                            "unknown signature {v:?}; valid: {}",
                            all.join(", ")
                        ))
                    })?;
                    spec.signature = Some(sig.name.to_string());
                }
                "args" => spec.args = Some(v.clone()),
                "block" => spec.block = Some(parse_block(v).map_err(at)?),
                "cluster" => spec.cluster = Some(parse_cluster(v).map_err(at)?),
                "grid" => spec.grid = Some(parse_grid(v).map_err(at)?),
                "smem" => spec.smem = Some(Expr::parse(v).map_err(at)?),
                "dtype" => {
                    for (buffer, t) in parse_dtypes(v).map_err(at)? {
                        if let Some((_, earlier)) = spec.dtype.iter().find(|(b, _)| *b == buffer) {
                            return Err(at(format!(
                                "dtype of {} is given twice ({} and {}): give it once",
                                buffer.as_deref().unwrap_or("every buffer"),
                                format!("{earlier:?}").to_lowercase(),
                                format!("{t:?}").to_lowercase()
                            )));
                        }
                        spec.dtype.push((buffer, t));
                    }
                }
                "a" => spec.a = Some(parse_layout("a", v, "A[M][K]", "A[k*M + m]").map_err(at)?),
                "b" => spec.b = Some(parse_layout("b", v, "B[K][N]", "B[n*K + k]").map_err(at)?),
                "c" => spec.c = Some(parse_layout("c", v, "C[M][N]", "C[n*M + m]").map_err(at)?),
                "layout" => spec.layout = Some(parse_head_layout(v).map_err(at)?),
                "k" => {
                    spec.k =
                        Some(parse_layout("k", v, "a head's K[S][D]", "K[d*S + s]").map_err(at)?)
                }
                "v" => {
                    spec.v =
                        Some(parse_layout("v", v, "a head's V[S][D]", "V[d*S + s]").map_err(at)?)
                }
                "alpha" => spec.alpha = Some(parse_number("alpha", v).map_err(at)?),
                "beta" => spec.beta = Some(parse_number("beta", v).map_err(at)?),
                "precision" => {
                    spec.precision = Some(Precision::parse(v).ok_or_else(|| {
                        at(format!(
                            "unknown precision {v:?}; valid: {}",
                            Precision::ALL.map(Precision::name).join(", ")
                        ))
                    })?)
                }
                "id" if v.is_empty() => {
                    return Err(at("id= needs a name for the row, such as id=my-gemm".into()));
                }
                "id" => spec.id = Some(v.clone()),
                "against" => spec.against = Some(v.clone()),
                "define" => {
                    let (name, e) = parse_define(v).map_err(at)?;
                    if spec.defines.iter().any(|(n, _)| *n == name) {
                        return Err(at(format!("{name} is defined twice")));
                    }
                    spec.defines.push((name, e));
                }
                "constant" => {
                    let (symbol, buffer) = parse_constant(v).map_err(at)?;
                    if spec.constants.iter().any(|(s, _)| *s == symbol) {
                        return Err(at(format!("__constant__ {symbol} is filled twice")));
                    }
                    spec.constants.push((symbol, buffer));
                }
                "launch" => spec.cooperative = parse_launch(v).map_err(at)?,
                "input" => {
                    let (name, value) = parse_fixed_input(v).map_err(at)?;
                    if spec.fixed_inputs.iter().any(|(n, _)| *n == name) {
                        return Err(at(format!("input {name} is given twice: give it once")));
                    }
                    spec.fixed_inputs.push((name, value));
                }
                "output" => spec.output_start = OutputStart::parse(v).map_err(at)?,
                "include" => {
                    let dir = PathBuf::from(v);
                    if !dir.is_dir() {
                        return Err(at(format!(
                            "include {v:?}: no such folder (from {})",
                            std::env::current_dir()
                                .map_or_else(|_| ".".into(), |d| d.display().to_string())
                        )));
                    }
                    spec.includes.push(dir);
                }
                other => {
                    return Err(at(format!(
                        "unknown option {other:?}; valid: {}",
                        KEYS.join(", ")
                    )));
                }
            }
        }
        if spec.args.is_some() && spec.signature.is_some() {
            return Err((
                "args".into(),
                "give signature= or args=, not both: args= is a list of the kernel's own".into(),
            ));
        }
        Ok(spec)
    }

    /// Every launch of its plan, in order: the entry's, then each `then=`'s.
    pub fn launches(&self) -> Vec<LaunchSpec> {
        let first = LaunchSpec {
            entry: self.entry.clone(),
            args: self.args.clone(),
            block: self.block.clone(),
            grid: self.grid.clone(),
            smem: self.smem.clone(),
            cooperative: self.cooperative,
        };
        std::iter::once(first).chain(self.then.clone()).collect()
    }

    /// Whether the grid and shared-memory expressions only use `workload`'s names; an error
    /// names the key.
    pub fn check_names(&self, workload: Workload) -> Result<(), (String, String)> {
        let probe = super::vars(&workload.probe_shape(), super::SIM_SMS);
        let names: Vec<&str> = probe.iter().map(|(n, _)| *n).collect();
        let launches = self.launches();
        let mut exprs: Vec<(&str, &Expr)> = launches.iter().flat_map(LaunchSpec::exprs).collect();
        exprs.extend(self.defines.iter().map(|(_, e)| ("define", e)));
        for (key, e) in exprs {
            let unknown = e.unknown_names(&names);
            if !unknown.is_empty() {
                return Err((
                    key.to_string(),
                    format!(
                        "`{e}` uses {}; expressions for {workload} may use {}",
                        unknown.join(", "),
                        super::names_in_words(&probe)
                    ),
                ));
            }
        }
        Ok(())
    }
}

/// What the output holds when each run starts (`output=`).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum OutputStart {
    /// NaN, so that an element the kernel never writes shows.
    #[default]
    Poison,
    /// `output=zero`: zeros, as host code that clears it before the launch (`cudaMemset`)
    /// leaves it, for a kernel that adds into it (atomicAdd, split-K).
    Zero,
    /// `output=NAME`: a copy of the workload's input NAME, as host code that copies it over
    /// (`cudaMemcpy`) leaves it, for a kernel that works in place: it reads the output
    /// buffer as its input and overwrites it.
    CopyOf(String),
}

impl OutputStart {
    fn parse(v: &str) -> Result<Self, String> {
        let ident = |c: char| c == '_' || c.is_ascii_alphanumeric();
        match v {
            "zero" => Ok(Self::Zero),
            _ if !v.is_empty()
                && v.chars().all(ident)
                && !v.starts_with(|c: char| c.is_ascii_digit()) =>
            {
                Ok(Self::CopyOf(v.to_string()))
            }
            _ => Err(format!(
                "output {v:?}: give zero (output=zero: the output cleared before each run, \
                 for a kernel that adds into it) or an input's name (output=x: the output \
                 starts as a copy of x, for a kernel that works in place)"
            )),
        }
    }

    /// The input the output starts as a copy of.
    pub fn copy_of(&self) -> Option<&str> {
        match self {
            Self::CopyOf(name) => Some(name),
            Self::Poison | Self::Zero => None,
        }
    }
}

/// A `[[kernel]]` section of the config file.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawUserKernel {
    pub file: String,
    pub entry: String,
    pub workload: Option<String>,
    pub signature: Option<String>,
    pub args: Option<GridValue>,
    pub block: Option<BlockValue>,
    pub cluster: Option<Scalar>,
    pub grid: Option<GridValue>,
    pub smem: Option<Scalar>,
    pub precision: Option<String>,
    /// `"f16"`, `"A:f16,B:f16,C:f32"` or `{ A = "f16", C = "f32" }`.
    pub dtype: Option<DtypeValue>,
    pub a: Option<String>,
    pub b: Option<String>,
    pub c: Option<String>,
    pub layout: Option<String>,
    pub k: Option<String>,
    pub v: Option<String>,
    pub alpha: Option<Number>,
    pub beta: Option<Number>,
    pub id: Option<String>,
    /// `define = { TILE = 64, KS = "K" }`: values or expressions of the shape's dimensions.
    pub define: Option<BTreeMap<String, Scalar>>,
    /// `constant = { Mc = "filter" }`: `__constant__` arrays and the buffers that fill them.
    pub constant: Option<BTreeMap<String, String>>,
    /// `launch = "cooperative"`.
    pub launch: Option<String>,
    /// `against = "gemm-regblock-1d"`: the rung it is set beside.
    pub against: Option<String>,
    /// `output = "zero"`: the output starts at zero; `output = "x"`: as a copy of input x.
    pub output: Option<String>,
    /// `include = ["include"]`: folders the file's headers lie in, relative to the config.
    pub include: Option<Vec<String>>,
    /// `input = { gamma = 1.5, beta = 0 }`: inputs filled with a value, not random ones.
    pub input: Option<BTreeMap<String, Number>>,
    /// `then = [{ entry = "reduce", block = 256, grid = ["cdiv(M*N,256)"], args = [...] }]`:
    /// kernels of the file launched after the entry, in order.
    pub then: Option<Vec<RawLaunch>>,
}

/// A launch after the entry in a `[[kernel]]` section: `then`'s items.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawLaunch {
    pub entry: String,
    pub args: Option<GridValue>,
    pub block: Option<BlockValue>,
    pub grid: Option<GridValue>,
    pub smem: Option<Scalar>,
    pub launch: Option<String>,
}

/// A number or a string (`block = 256`, `block = "16x16"`).
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub enum Scalar {
    Int(i64),
    Text(String),
}

impl Scalar {
    fn text(&self) -> String {
        match self {
            Self::Int(i) => i.to_string(),
            Self::Text(t) => t.clone(),
        }
    }
}

/// `alpha = 2` or `alpha = 0.5`.
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub enum Number {
    Int(i64),
    Float(f64),
}

impl Number {
    fn text(&self) -> String {
        match self {
            Self::Int(i) => i.to_string(),
            Self::Float(f) => f.to_string(),
        }
    }
}

/// `dtype = "f16"` or `dtype = { A = "f16", B = "f16", C = "f32" }`.
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub enum DtypeValue {
    Text(String),
    Table(BTreeMap<String, String>),
}

/// `grid = "tile:64x64"` or `grid = ["cdiv(N,64)", "cdiv(M,64)"]`.
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub enum GridValue {
    Text(String),
    List(Vec<Scalar>),
}

/// `block = 256`, `block = "16x16"` or `block = [32, "min(cdiv(N,32),32)"]`.
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub enum BlockValue {
    Int(i64),
    Text(String),
    List(Vec<Scalar>),
}

impl RawUserKernel {
    /// The spec, with `file` relative to `base` (the config file's folder); an error names
    /// its key.
    pub fn resolve(&self, base: &Path) -> Result<UserKernelSpec, (String, String)> {
        let mut pairs = Vec::new();
        let mut put = |k: &str, v: Option<String>| {
            if let Some(v) = v {
                pairs.push((k.to_string(), v));
            }
        };
        put("workload", self.workload.clone());
        put("signature", self.signature.clone());
        let items = |l: &[Scalar]| {
            let items: Vec<String> = l.iter().map(Scalar::text).collect();
            format!("({})", items.join(", "))
        };
        let list = |g: &GridValue| match g {
            GridValue::Text(t) => t.clone(),
            GridValue::List(l) => items(l),
        };
        let block = |b: &BlockValue| match b {
            BlockValue::Int(i) => i.to_string(),
            BlockValue::Text(t) => t.clone(),
            BlockValue::List(l) => items(l),
        };
        put("args", self.args.as_ref().map(list));
        put("block", self.block.as_ref().map(block));
        put("cluster", self.cluster.as_ref().map(Scalar::text));
        put("grid", self.grid.as_ref().map(list));
        put("smem", self.smem.as_ref().map(Scalar::text));
        put(
            "dtype",
            self.dtype.as_ref().map(|d| match d {
                DtypeValue::Text(t) => t.clone(),
                DtypeValue::Table(t) => {
                    let items: Vec<String> = t.iter().map(|(k, v)| format!("{k}:{v}")).collect();
                    items.join(",")
                }
            }),
        );
        put("a", self.a.clone());
        put("b", self.b.clone());
        put("c", self.c.clone());
        put("layout", self.layout.clone());
        put("k", self.k.clone());
        put("v", self.v.clone());
        put("alpha", self.alpha.as_ref().map(Number::text));
        put("beta", self.beta.as_ref().map(Number::text));
        put("precision", self.precision.clone());
        put("id", self.id.clone());
        put("launch", self.launch.clone());
        put("against", self.against.clone());
        put("output", self.output.clone());
        for dir in self.include.iter().flatten() {
            pairs.push(("include".into(), base.join(dir).display().to_string()));
        }
        for (name, v) in self.define.iter().flatten() {
            pairs.push(("define".into(), format!("{name}={}", v.text())));
        }
        for (symbol, buffer) in self.constant.iter().flatten() {
            pairs.push(("constant".into(), format!("{symbol}:{buffer}")));
        }
        for (name, value) in self.input.iter().flatten() {
            pairs.push(("input".into(), format!("{name}:{}", value.text())));
        }
        // Last: every option after a `then` is that launch's.
        for next in self.then.iter().flatten() {
            pairs.push(("then".into(), next.entry.clone()));
            let mut put = |k: &str, v: Option<String>| {
                if let Some(v) = v {
                    pairs.push((k.to_string(), v));
                }
            };
            put("args", next.args.as_ref().map(list));
            put("block", next.block.as_ref().map(block));
            put("grid", next.grid.as_ref().map(list));
            put("smem", next.smem.as_ref().map(Scalar::text));
            put("launch", next.launch.clone());
        }
        let spec = UserKernelSpec::from_pairs(base.join(&self.file), &self.entry, &pairs)
            // A later launch's options are written in the `then` list, under that key.
            .map_err(|(key, message)| match message.starts_with("then=") {
                true => ("then".to_string(), message),
                false => (key, message),
            })?;
        let workload = spec.workload.or_else(|| {
            let sig = spec.signature.as_deref().and_then(Signature::named);
            sig.map(|s| s.workload)
        });
        if let Some(w) = workload {
            spec.check_names(w)?;
        }
        Ok(spec)
    }
}

/// The 1-based line of `key` in the `index`th `[[kernel]]` section of a TOML text (the
/// section's own line when the key is not written there).
pub fn locate(text: &str, index: usize, key: &str) -> Option<usize> {
    let mut seen = None;
    let mut header = None;
    for (i, line) in text.lines().enumerate() {
        let l = line.trim();
        if l.starts_with('[') {
            if l.replace(' ', "") == "[[kernel]]" {
                seen = Some(seen.map_or(0, |s| s + 1));
                if seen == Some(index) {
                    header = Some(i + 1);
                }
            } else if seen == Some(index) {
                break;
            }
            continue;
        }
        if seen == Some(index)
            && l.split_once('=')
                .is_some_and(|(k, _)| k.trim().trim_matches('"') == key)
        {
            return Some(i + 1);
        }
    }
    header
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn specs_read_templates_options_and_explicit_grids() {
        let s = UserKernelSpec::parse(
            "ex/my gemm.cu:sgemm<64,64,8>,block=16x16,grid=(cdiv(N,64),cdiv(M,64)),smem=2*64*8*4,\
             signature=gemm-blas,precision=tf32",
        )
        .unwrap();
        assert_eq!(s.file, PathBuf::from("ex/my gemm.cu"));
        assert_eq!(s.entry, "sgemm<64,64,8>");
        assert_eq!(s.block, Some(Block::Fixed([16, 16, 1])));
        assert!(matches!(&s.grid, Some(Grid::Exprs(e)) if e.len() == 2));
        assert_eq!(s.precision, Some(Precision::Tf32));
        let t = UserKernelSpec::parse("k.cu:ns::k,block=256,grid=tile:32x64").unwrap();
        assert_eq!(
            (t.entry.as_str(), &t.grid),
            ("ns::k", &Some(Grid::Tile(vec![32, 64])))
        );
    }

    #[test]
    fn a_block_is_numbers_or_expressions_of_the_shape_checked_as_a_gpu_would() {
        let block = |v: &str| UserKernelSpec::parse(&format!("k.cu:k,block={v}")).map(|s| s.block);
        let err = |v: &str| block(v).unwrap_err().to_string();
        // Numbers, and expressions of numbers alone, are fixed.
        assert_eq!(block("32x8").unwrap(), Some(Block::Fixed([32, 8, 1])));
        assert_eq!(block("(32, 4*2)").unwrap(), Some(Block::Fixed([32, 8, 1])));
        assert!(
            err("1x1x65").contains("z is 65 threads, more than the 64"),
            "{}",
            err("1x1x65")
        );
        assert!(
            err("64x32").contains("has 2048 threads"),
            "{}",
            err("64x32")
        );
        assert!(
            err("(0)").contains("= 0 is not a positive number"),
            "{}",
            err("(0)")
        );
        // A number too large for any launch is said to be too large, not not a number.
        let e = err("99999999999");
        assert!(
            e.contains("99999999999 threads are more than any launch can have"),
            "{e}"
        );
        let e = err("99999999999999999999999");
        assert!(
            e.contains("threads are more than any launch can have"),
            "{e}"
        );
        let e = err("(4294967297)");
        assert!(
            e.contains("= 4294967297 threads; a block holds at most 1024"),
            "{e}"
        );
        // Expressions of the shape are evaluated for each.
        let b = block("(32, min(N/32,32))").unwrap().unwrap();
        assert_eq!(b.at(&[("N", 100)]), Ok([32, 3, 1]));
        assert_eq!(b.at(&[("N", 5000)]), Ok([32, 32, 1]));
        assert!(
            b.at(&[("N", 10)])
                .unwrap_err()
                .contains("block y = min(N/32,32) = 0")
        );
        let b = block("N").unwrap().unwrap();
        assert_eq!(
            b.at(&[("N", 2048)]),
            Err("block (N) = 2048 has 2048 threads; a block holds at most 1024".into())
        );
        // Their names are checked as the grid's are, and given in the config as a list.
        let bad = UserKernelSpec::parse("k.cu:k,block=(S),grid=1").unwrap();
        let (key, message) = bad.check_names(Workload::Softmax).unwrap_err();
        assert_eq!(
            (key.as_str(), message.contains("`S` uses S")),
            ("block", true),
            "{message}"
        );
        let raw: RawUserKernel = toml::from_str(
            "file = \"k.cu\"\nentry = \"k\"\nworkload = \"softmax\"\nblock = [32, \"min(N/32,32)\"]",
        )
        .unwrap();
        let spec = raw.resolve(Path::new("cfg")).unwrap();
        assert_eq!(spec.block.unwrap().at(&[("N", 100)]), Ok([32, 3, 1]));
        let raw: RawUserKernel =
            toml::from_str("file = \"k.cu\"\nentry = \"k\"\nblock = 256").unwrap();
        let spec = raw.resolve(Path::new("cfg")).unwrap();
        assert_eq!(spec.block, Some(Block::Fixed([256, 1, 1])));
        let raw: RawUserKernel = toml::from_str(
            "file = \"k.cu\"\nentry = \"k\"\nlayout = \"bshd\"\nk = \"row\"\nv = \"col\"",
        )
        .unwrap();
        let spec = raw.resolve(Path::new("cfg")).unwrap();
        assert_eq!(
            (spec.layout, spec.k, spec.v),
            (Some(HeadLayout::Bshd), Some(Layout::Row), Some(Layout::Col))
        );
    }

    #[test]
    fn a_comparison_in_template_arguments_is_not_their_end() {
        let s = UserKernelSpec::parse("k.cu:k<16, (16 > 8)>,block=256,grid=tile:64").unwrap();
        assert_eq!(s.entry, "k<16, (16 > 8)>");
        assert_eq!(s.block, Some(Block::Fixed([256, 1, 1])));
        let s = UserKernelSpec::parse("k.cu:k<(32>16)*16, f<1>>,block=64").unwrap();
        assert_eq!(s.entry, "k<(32>16)*16, f<1>>");
        assert_eq!(split_top("a<(x<y), 2>, b"), vec!["a<(x<y), 2>", " b"]);
        assert_eq!(bracket_end("<int N, bool W = (N > 4)> rest"), 25);
        assert_eq!(bracket_end("<never closed"), 13);
    }

    #[test]
    fn defines_are_read_checked_and_taken_from_the_config() {
        let s = UserKernelSpec::parse("k.cu:k,define=TILE=64,define=KS=K,block=256,grid=tile:64")
            .unwrap();
        let d: Vec<(&str, String)> = s
            .defines
            .iter()
            .map(|(n, e)| (n.as_str(), e.to_string()))
            .collect();
        assert_eq!(d, [("TILE", "64".to_string()), ("KS", "K".to_string())]);
        let err = |text: &str| UserKernelSpec::parse(text).unwrap_err().to_string();
        assert!(
            err("k.cu:k,define=TILE").contains("expected NAME=VALUE"),
            "{}",
            err("k.cu:k,define=TILE")
        );
        assert!(err("k.cu:k,define=2X=1").contains("\"2X\" is not a macro name"));
        assert!(err("k.cu:k,define=T=1,define=T=2").contains("T is defined twice"));
        let e = err("k.cu:tk<1,block=256,grid=1");
        assert!(
            e.contains("template arguments are not closed: \"tk<1\" has no `>`"),
            "{e}"
        );
        // One-value options given twice are refused, not silently the last.
        let e = err("k.cu:k,block=16x16,block=32,grid=tile:16x16");
        assert!(
            e.contains("block is given twice (block=16x16 and block=32)"),
            "{e}"
        );
        assert!(err("k.cu:k,block=32,grid=1,smem=100,smem=200").contains("smem is given twice"));
        let e = err("k.cu:k,block=32,grid=1,dtype=f16,dtype=f32");
        assert!(
            e.contains("dtype of every buffer is given twice (f16 and f32)"),
            "{e}"
        );
        assert!(UserKernelSpec::parse("k.cu:k,block=32,grid=1,dtype=A:f16,dtype=B:bf16").is_ok());
        assert!(err("k.cu:k,define=T=(").contains("cannot read the expression"));
        let raw: RawUserKernel = toml::from_str(
            "file = \"k.cu\"\nentry = \"k\"\nworkload = \"conv\"\ndefine = { KS = \"K\", FILTER_IN_CONSTANT = 0 }",
        )
        .unwrap();
        let spec = raw.resolve(Path::new("cfg")).unwrap();
        let d: Vec<(&str, String)> = spec
            .defines
            .iter()
            .map(|(n, e)| (n.as_str(), e.to_string()))
            .collect();
        assert_eq!(
            d,
            [
                ("FILTER_IN_CONSTANT", "0".to_string()),
                ("KS", "K".to_string())
            ]
        );
        // Names outside the workload's are refused with the key.
        let bad = UserKernelSpec::parse("k.cu:k,define=KS=Q").unwrap();
        let (key, message) = bad.check_names(Workload::Conv).unwrap_err();
        assert_eq!(key, "define");
        assert!(message.contains("`Q` uses Q"), "{message}");
    }

    #[test]
    fn then_starts_the_options_of_a_launch_after_the_entry() {
        let s = UserKernelSpec::parse(
            "k.cu:partial<64>,block=16x16,grid=(cdiv(N,16),cdiv(M,16),3),dtype=f16,C:f32,\
             args=(A,B,scratch(P,4*M*N)),then=reduce<4,2>,block=256,grid=(cdiv(M*N,256)),\
             args=(P,C,M*N),smem=64,then=reduce<4,2>,block=32,grid=1,launch=cooperative",
        )
        .unwrap();
        let launches = s.launches();
        let entries: Vec<&str> = launches.iter().map(|l| l.entry.as_str()).collect();
        assert_eq!(entries, ["partial<64>", "reduce<4,2>", "reduce<4,2>"]);
        assert_eq!(launches[0].block, Some(Block::Fixed([16, 16, 1])));
        assert_eq!(launches[1].args.as_deref(), Some("(P,C,M*N)"));
        assert!(launches[1].smem.is_some() && !launches[1].cooperative);
        assert!(launches[2].args.is_none() && launches[2].cooperative);
        assert_eq!(s.dtype.len(), 2, "dtype= belongs to the whole kernel");
        // The options as written, then= and all: what a run records to load it again.
        let again = UserKernelSpec::from_pairs(s.file.clone(), &s.entry, &s.options).unwrap();
        assert_eq!(again.launches(), launches);
        let err = |text: &str| UserKernelSpec::parse(text).unwrap_err().to_string();
        let e = err("k.cu:k,block=1,grid=1,then=r,block=2,dtype=f16");
        assert!(
            e.contains("dtype= is an option of the whole kernel, not of one launch: give it before the first then="),
            "{e}"
        );
        let e = err("k.cu:k,block=1,then=r,block=2,block=4");
        assert!(
            e.contains("block is given twice (block=2 and block=4)"),
            "{e}"
        );
        assert!(err("k.cu:k,then=").contains("then= names the next kernel"));
        assert!(err("k.cu:k,then=r<4").contains("template arguments of then=r<4 are not closed"));
        // A config's `then` is a list of tables, one per launch.
        let raw: RawUserKernel = toml::from_str(
            "file = \"k.cu\"\nentry = \"partial\"\nblock = 256\ngrid = \"tile:256\"\n\
             then = [{ entry = \"reduce\", block = 128, grid = [\"cdiv(M*N,128)\"], args = [\"P\", \"C\", \"M*N\"] }]",
        )
        .unwrap();
        let spec = raw.resolve(Path::new("cfg")).unwrap();
        assert_eq!(spec.then.len(), 1);
        assert_eq!(spec.then[0].args.as_deref(), Some("(P, C, M*N)"));
        assert_eq!(spec.then[0].block, Some(Block::Fixed([128, 1, 1])));
        let bad: Result<RawUserKernel, _> = toml::from_str(
            "file = \"k.cu\"\nentry = \"k\"\nthen = [{ entry = \"r\", dtype = \"f16\" }]",
        );
        assert!(
            bad.unwrap_err()
                .to_string()
                .contains("unknown field `dtype`")
        );
    }

    #[test]
    fn input_fills_an_input_with_a_number() {
        let s = UserKernelSpec::parse("k.cu:k,input=gamma:1.5,input=beta:-0.25").unwrap();
        assert_eq!(
            s.fixed_inputs,
            [("gamma".to_string(), 1.5), ("beta".to_string(), -0.25)]
        );
        let err = |text: &str| UserKernelSpec::parse(text).unwrap_err().to_string();
        assert!(err("k.cu:k,input=gamma").contains("expected input=NAME:VALUE"));
        assert!(err("k.cu:k,input=:1").contains("expected input=NAME:VALUE"));
        assert!(err("k.cu:k,input=gamma:one").contains("input \"one\" is not a finite number"));
        assert!(err("k.cu:k,input=g:1,input=g:2").contains("input g is given twice"));
        let raw: RawUserKernel =
            toml::from_str("file = \"k.cu\"\nentry = \"k\"\ninput = { gamma = 2, beta = -0.5 }")
                .unwrap();
        let spec = raw.resolve(Path::new("cfg")).unwrap();
        assert_eq!(
            spec.fixed_inputs,
            [("beta".to_string(), -0.5), ("gamma".to_string(), 2.0)]
        );
    }

    #[test]
    fn against_is_read_from_the_option_and_the_config_and_kept_as_written() {
        let s = UserKernelSpec::parse("k.cu:k,block=256,against=gemm-tiled").unwrap();
        assert_eq!(s.against.as_deref(), Some("gemm-tiled"));
        assert_eq!(
            s.options,
            [
                ("block".to_string(), "256".to_string()),
                ("against".to_string(), "gemm-tiled".to_string())
            ]
        );
        let raw: RawUserKernel =
            toml::from_str("file = \"k.cu\"\nentry = \"k\"\nagainst = \"gemm-tiled\"").unwrap();
        let spec = raw.resolve(Path::new("cfg")).unwrap();
        assert_eq!(spec.against.as_deref(), Some("gemm-tiled"));
    }

    #[test]
    fn constants_name_an_array_and_the_buffer_that_fills_it() {
        let s = UserKernelSpec::parse("k.cu:k,constant=Mc:filter,constant=bias_c:bias").unwrap();
        assert_eq!(
            s.constants,
            [
                ("Mc".to_string(), "filter".to_string()),
                ("bias_c".to_string(), "bias".to_string())
            ]
        );
        let err = |text: &str| UserKernelSpec::parse(text).unwrap_err().to_string();
        assert!(err("k.cu:k,constant=Mc").contains("expected SYMBOL:BUFFER"));
        assert!(err("k.cu:k,constant=1M:filter").contains("\"1M\" is not a variable name"));
        assert!(err("k.cu:k,constant=Mc:").contains("which buffer fills Mc?"));
        assert!(err("k.cu:k,constant=Mc:x,constant=Mc:filter").contains("Mc is filled twice"));
        let raw: RawUserKernel = toml::from_str(
            "file = \"k.cu\"\nentry = \"k\"\nworkload = \"conv\"\nconstant = { Mc = \"filter\" }",
        )
        .unwrap();
        let spec = raw.resolve(Path::new("cfg")).unwrap();
        assert_eq!(spec.constants, [("Mc".to_string(), "filter".to_string())]);
    }

    #[test]
    fn buffer_types_layout_and_scalars_are_read() {
        let s = UserKernelSpec::parse(
            "h.cu:hgemm<128>,dtype=f16,C:f32,b=col,alpha=0.5,beta=-2,block=128,grid=tile:64x64",
        )
        .unwrap();
        assert_eq!(
            s.dtype,
            vec![(None, Dtype::F16), (Some("C".into()), Dtype::F32)]
        );
        assert_eq!(
            (s.b, s.alpha, s.beta),
            (Some(Layout::Col), Some(0.5), Some(-2.0))
        );
        let per = UserKernelSpec::parse("h.cu:k,dtype=A:bf16,B:bf16,C:f32,block=64").unwrap();
        assert_eq!(per.dtype.len(), 3);
        assert_eq!(per.dtype[1], (Some("B".into()), Dtype::Bf16));
        let e = |s: &str| UserKernelSpec::parse(s).unwrap_err().to_string();
        assert!(e("k.cu:k,dtype=f8").contains("expected f32, f16, bf16, e4m3, e5m2, i32 or s8"));
        assert!(e("k.cu:k,b=transposed").contains("expected row"));
        assert!(e("k.cu:k,alpha=one").contains("not a finite number"));
    }

    #[test]
    fn spec_errors_name_the_option_and_launch_options_are_checked_apart() {
        let e = |s: &str| UserKernelSpec::parse(s).unwrap_err().to_string();
        assert!(e("k.cu:k,block=2048,grid=tile:8").contains("at most 1024"));
        assert!(e("k.cu:k,block=256,grid=tile:8,blok=3").contains("unknown option \"blok\""));
        let nameless = e(":k,block=256");
        assert!(nameless.contains("no file before the `:`"), "{nameless}");
        let bad = e("k.cu:k,block=256+768*max(0;N),grid=8");
        assert!(
            bad.contains("block: cannot read the expression `256+768*max(0;N)`"),
            "{bad}"
        );
        let pair = UserKernelSpec::parse("k.cu:k,block=128,grid=8,cluster=2").unwrap();
        assert_eq!(pair.cluster, Some([2, 1, 1]));
        assert!(e("k.cu:k,block=128,grid=8,cluster=4x4").contains("at most 8"));
        assert!(e("k.cu:k,block=256,grid=tile:8,signature=sgemm").contains("gemm-blas"));
        assert!(e("k.cu:k,block=256,grid=8,launch=coop").contains("is cooperative"));
        assert!(e("k.cu:k,block=256,grid=8,output=1.5").contains("give zero"));
        assert!(e("k.cu:k,block=256,grid=8,output=").contains("or an input's name"));
        let start = |o: &str| {
            UserKernelSpec::parse(&format!("k.cu:k,block=256,grid=8,output={o}"))
                .unwrap()
                .output_start
        };
        assert_eq!(start("zero"), OutputStart::Zero);
        assert_eq!(start("x"), OutputStart::CopyOf("x".into()));
        assert_eq!(start("x").copy_of(), Some("x"));
        assert_eq!(
            UserKernelSpec::parse("k.cu:k,block=256,grid=8")
                .unwrap()
                .output_start,
            OutputStart::Poison
        );
        let coop = UserKernelSpec::parse("k.cu:k,block=256,grid=8,launch=cooperative").unwrap();
        assert!(coop.cooperative);
        assert!(
            !UserKernelSpec::parse("k.cu:k,block=256,grid=8")
                .unwrap()
                .cooperative
        );
        assert!(e("nothing").contains("FILE.cu:ENTRY"));
        let no_block = UserKernelSpec::parse("k.cu:k,grid=tile:8").unwrap();
        assert!(
            no_block.launches()[0]
                .launch()
                .unwrap_err()
                .1
                .contains("missing block=")
        );
        let no_grid = UserKernelSpec::parse("k.cu:k,block=256").unwrap();
        assert!(
            no_grid.launches()[0]
                .launch()
                .unwrap_err()
                .1
                .contains("missing grid")
        );
    }

    #[test]
    fn locates_keys_in_the_nth_kernel_section() {
        let text = "seed = 1\n[[kernel]]\nfile = \"a.cu\"\nblock = 1\n\n[[kernel]]\nfile = \"b.cu\"\nblok = 2\n";
        assert_eq!(locate(text, 0, "block"), Some(4));
        assert_eq!(locate(text, 1, "file"), Some(7));
        assert_eq!(locate(text, 1, "grid"), Some(6));
    }
}
