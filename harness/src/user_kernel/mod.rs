//! A kernel the user brings: `harness run --kernel FILE.cu:ENTRY,block=..,grid=..` or a
//! `[[kernel]]` section of the config. The file is read at run time, its host code blanked,
//! and an `extern "C"` wrapper with the workload's parameter list (see [`signature`]), or the
//! kernel's own (`args=`), calls the entry, which may be a template instantiation
//! (`sgemm<128,128,8>`). From there it is a row like any rung: compiled, validated on
//! poisoned output, timed, reported as `user`. `docs/your-kernel.md` is the user's guide.

pub mod expr;
pub mod run;
pub mod signature;
pub mod source;

use expr::Expr;
use kernel::cuda::nvrtc;
use kernel::{
    CudaPlan, CudaSource, DeviceError, Dtype, Kernel, KernelInfo, Launch, Precision, Role, Scratch,
    Shape, Stage, Step, Unsupported, Workload,
};
use serde::{Deserialize, Serialize};
use signature::Signature;
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
    pub block: [u32; 3],
    pub grid: Grid,
    /// Dynamic shared memory in bytes.
    pub smem: Option<Expr>,
    /// What the kernel claims; it picks the error bound (buffers are FP32 either way).
    pub precision: Precision,
    pub id: Option<String>,
}

/// Anything wrong with a user kernel, in words that say what to do.
#[derive(Debug, thiserror::Error)]
pub enum UserKernelError {
    #[error("kernel {spec:?}: {message}")]
    Spec { spec: String, message: String },
    #[error("cannot read the kernel file {file}: {error}")]
    Read { file: String, error: std::io::Error },
    #[error(
        "{compiler} could not compile {file} for {arch}; its log (lines are those of your \
         file):\n{log}"
    )]
    Compile {
        file: String,
        compiler: String,
        arch: String,
        log: String,
    },
    #[error("{0}")]
    Signature(Box<SignatureMismatch>),
    #[error("{0}")]
    Device(DeviceError),
}

/// A kernel whose parameter list is not the signature's: both lists, and the compiler's words.
#[derive(Debug, thiserror::Error)]
#[error(
    "{file}: the parameters of `{entry}` do not match the `{signature}` signature of the \
     {workload} workload.\n  the lab calls:   {entry}{calls}\n  {declared}\nName the \
     signature the kernel was written for (`signature=NAME`; {workload}: {choices}) or \
     change its parameter list.\n{compiler} said:\n{log}"
)]
pub struct SignatureMismatch {
    pub file: String,
    pub entry: String,
    pub signature: String,
    pub workload: Workload,
    pub calls: String,
    pub declared: String,
    pub choices: String,
    pub compiler: String,
    pub log: String,
}

/// The options a spec may carry, for messages.
const KEYS: [&str; 8] = [
    "workload",
    "signature",
    "args",
    "block",
    "grid",
    "smem",
    "precision",
    "id",
];

/// Splits at commas outside `<>`, `()` and `[]`.
fn split_top(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let (mut depth, mut start) = (0i32, 0);
    for (i, c) in text.char_indices() {
        match c {
            '<' | '(' | '[' => depth += 1,
            '>' | ')' | ']' => depth -= 1,
            ',' if depth == 0 => {
                out.push(&text[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    out.push(&text[start..]);
    out
}

fn parse_block(v: &str) -> Result<[u32; 3], String> {
    let parts: Vec<&str> = v.split('x').map(str::trim).collect();
    if parts.is_empty() || parts.len() > 3 {
        return Err(format!("block {v:?}: expected X, XxY or XxYxZ threads"));
    }
    let mut block = [1u32; 3];
    for (b, p) in block.iter_mut().zip(&parts) {
        *b = p
            .parse()
            .ok()
            .filter(|&n| n >= 1)
            .ok_or_else(|| format!("block {v:?}: {p:?} is not a positive number"))?;
    }
    let threads: u64 = block.iter().map(|&b| u64::from(b)).product();
    if threads > 1024 {
        return Err(format!(
            "block {v:?} has {threads} threads; a block holds at most 1024"
        ));
    }
    Ok(block)
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
    let inner = v
        .trim()
        .strip_prefix('(')
        .and_then(|r| r.strip_suffix(')'))
        .unwrap_or(v);
    let exprs = split_top(inner)
        .into_iter()
        .map(Expr::parse)
        .collect::<Result<Vec<_>, _>>()?;
    if exprs.is_empty() || exprs.len() > 3 {
        return Err(format!(
            "grid {v:?}: expected 1 to 3 expressions, (x, y, z)"
        ));
    }
    Ok(Grid::Exprs(exprs))
}

impl UserKernelSpec {
    /// Reads `FILE.cu:ENTRY[,key=value]...` (see `docs/your-kernel.md`).
    pub fn parse(text: &str) -> Result<Self, UserKernelError> {
        let err = |message: String| UserKernelError::Spec {
            spec: text.to_string(),
            message,
        };
        let split = [".cu:", ".cuh:", ".h:"]
            .iter()
            .find_map(|ext| text.find(ext).map(|i| i + ext.len() - 1))
            .or_else(|| text.find(':'))
            .ok_or_else(|| err("expected FILE.cu:ENTRY, e.g. my_gemm.cu:sgemm<64,64,8>".into()))?;
        let file = &text[..split];
        let mut parts = split_top(&text[split + 1..]).into_iter();
        let entry = parts.next().unwrap_or("").trim();
        let mut pairs = Vec::new();
        for p in parts {
            let (k, v) = p.split_once('=').ok_or_else(|| {
                err(format!(
                    "option {p:?} is not key=value; keys: {}",
                    KEYS.join(", ")
                ))
            })?;
            pairs.push((k.trim().to_string(), v.trim().to_string()));
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
            block: [0; 3],
            grid: Grid::Tile(Vec::new()),
            smem: None,
            precision: Precision::Fp32,
            id: None,
        };
        let (mut block, mut grid) = (false, false);
        for (k, v) in pairs {
            let at = |m: String| (k.clone(), m);
            match k.as_str() {
                "workload" => {
                    spec.workload = Some(Workload::parse(v).ok_or_else(|| {
                        at(format!(
                            "unknown workload {v:?}; valid: {}",
                            Workload::ALL.map(Workload::name).join(", ")
                        ))
                    })?)
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
                "block" => {
                    spec.block = parse_block(v).map_err(at)?;
                    block = true;
                }
                "grid" => {
                    spec.grid = parse_grid(v).map_err(at)?;
                    grid = true;
                }
                "smem" => spec.smem = Some(Expr::parse(v).map_err(at)?),
                "precision" => {
                    spec.precision = Precision::parse(v).ok_or_else(|| {
                        at(format!(
                            "unknown precision {v:?}; valid: {}",
                            Precision::ALL.map(Precision::name).join(", ")
                        ))
                    })?
                }
                "id" => spec.id = Some(v.clone()),
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
        if !block {
            return Err((
                "block".into(),
                "missing block=THREADS (256, 16x16 or 32x8x1): the block size it is launched with"
                    .into(),
            ));
        }
        if !grid {
            return Err((
                "grid".into(),
                "missing grid: grid=tile:64x64 (one block per 64x64 tile of the output) or \
                 grid=(cdiv(N,64),cdiv(M,64)) (expressions of the shape's dimensions)"
                    .into(),
            ));
        }
        Ok(spec)
    }
}

impl UserKernelSpec {
    /// Whether the grid and shared-memory expressions only use `workload`'s names; an error
    /// names the key.
    pub fn check_names(&self, workload: Workload) -> Result<(), (String, String)> {
        let probe = vars(&workload.probe_shape());
        let names: Vec<&str> = probe.iter().map(|(n, _)| *n).collect();
        let mut exprs: Vec<(&str, &Expr)> = self.smem.iter().map(|e| ("smem", e)).collect();
        if let Grid::Exprs(g) = &self.grid {
            exprs.extend(g.iter().map(|e| ("grid", e)));
        }
        for (key, e) in exprs {
            let unknown = e.unknown_names(&names);
            if !unknown.is_empty() {
                return Err((
                    key.to_string(),
                    format!(
                        "`{e}` uses {}; expressions for {workload} may use {}",
                        unknown.join(", "),
                        names.join(", ")
                    ),
                ));
            }
        }
        Ok(())
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
    pub block: Option<Scalar>,
    pub grid: Option<GridValue>,
    pub smem: Option<Scalar>,
    pub precision: Option<String>,
    pub id: Option<String>,
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

/// `grid = "tile:64x64"` or `grid = ["cdiv(N,64)", "cdiv(M,64)"]`.
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub enum GridValue {
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
        let list = |g: &GridValue| match g {
            GridValue::Text(t) => t.clone(),
            GridValue::List(l) => {
                let items: Vec<String> = l.iter().map(Scalar::text).collect();
                format!("({})", items.join(", "))
            }
        };
        put("args", self.args.as_ref().map(list));
        put("block", self.block.as_ref().map(Scalar::text));
        put("grid", self.grid.as_ref().map(list));
        put("smem", self.smem.as_ref().map(Scalar::text));
        put("precision", self.precision.clone());
        put("id", self.id.clone());
        let spec = UserKernelSpec::from_pairs(base.join(&self.file), &self.entry, &pairs)?;
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

/// The compiler a compile check uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Compiler<'a> {
    /// NVRTC for this architecture.
    Nvrtc(&'a str),
    /// The simulator's host C++ compiler.
    Sim,
}

/// A user kernel ready to run: its file read and turned into a compilation unit.
pub struct UserKernel {
    pub spec: UserKernelSpec,
    pub workload: Workload,
    pub signature: &'static Signature,
    /// What the wrapper passes: the signature's list or the kernel's own.
    list: signature::ArgList,
    id: String,
    rung: u32,
    source: CudaSource,
    wrapper: String,
}

impl std::fmt::Debug for UserKernel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.id)
    }
}

/// The names a geometry expression may use for `shape`: its dimensions, and a convolution's
/// output size `HO`, `WO`.
fn vars(shape: &Shape) -> Vec<(&'static str, usize)> {
    let mut v = shape.dims();
    if let Shape::Conv { h, w, k, .. } = *shape {
        let (ho, wo) = Shape::conv_out(h, w, k);
        v.extend([("HO", ho), ("WO", wo)]);
    }
    v
}

/// Dynamic shared memory a block may have on the largest GPUs the lab knows (sm_90).
const MAX_SMEM: i64 = 227 * 1024;

impl UserKernel {
    /// Reads the file of `spec`; `workload` is the one `--workload` named, used when the spec
    /// names neither a workload nor a signature. `rung` orders user rows.
    pub fn load(
        spec: &UserKernelSpec,
        workload: Option<Workload>,
        rung: u32,
    ) -> Result<Self, UserKernelError> {
        let err = |message: String| UserKernelError::Spec {
            spec: format!("{}:{}", spec.file.display(), spec.entry),
            message,
        };
        let named = spec.signature.as_deref().and_then(Signature::named);
        let workload = spec
            .workload
            .or(named.map(|s| s.workload))
            .or(workload)
            .ok_or_else(|| {
                err(
                    "which workload does it compute? add workload=gemm (or linear, conv, \
                     attention), or run it with a single --workload"
                        .into(),
                )
            })?;
        let sig = match named {
            Some(s) if s.workload != workload => {
                return Err(err(format!(
                    "signature {} belongs to {}, not {workload}; {workload} has: {}",
                    s.name,
                    s.workload,
                    Signature::list_for(workload)
                )));
            }
            Some(s) => s,
            None => Signature::default_for(workload),
        };
        spec.check_names(workload).map_err(|(_, m)| err(m))?;
        let (list, sig) = match &spec.args {
            Some(text) => signature::ArgList::parse(text, workload).map_err(err)?,
            None => (signature::ArgList::of(sig), sig),
        };
        let code = std::fs::read_to_string(&spec.file).map_err(|error| UserKernelError::Read {
            file: spec.file.display().to_string(),
            error,
        })?;
        let file = spec.file.display().to_string();
        let threads = spec.block.iter().product();
        let dir = spec
            .file
            .parent()
            .filter(|d| !d.as_os_str().is_empty())
            .unwrap_or(Path::new("."))
            .to_path_buf();
        let standins = source::standin_dir().map_err(err)?;
        let file_name = spec
            .file
            .file_name()
            .map_or(file.clone(), |n| n.to_string_lossy().into_owned());
        Ok(Self {
            id: spec
                .id
                .clone()
                .unwrap_or_else(|| format!("{file_name}:{}", spec.entry)),
            workload,
            signature: sig,
            rung,
            wrapper: source::wrapper_name(&spec.entry),
            source: CudaSource {
                code: source::unit(&code, &file, &spec.entry, &list, sig, threads).into(),
                file: file.into(),
                defines: Vec::new(),
                include_dirs: vec![dir, standins],
                arch: None,
            },
            list,
            spec: spec.clone(),
        })
    }

    pub fn id(&self) -> &str {
        &self.id
    }

    /// The compilation unit the lab builds (the user's file, blanked host code, wrapper).
    pub fn source(&self) -> &CudaSource {
        &self.source
    }

    /// Grid and dynamic shared memory for `shape`, or why it cannot be launched.
    pub fn geometry(&self, shape: &Shape) -> Result<([u32; 3], u32), Unsupported> {
        let v = vars(shape);
        let grid = match &self.spec.grid {
            Grid::Tile(t) => {
                let dims = shape.output().dims;
                if let [n] = t[..] {
                    [kernel::div_ceil(shape.output().len(), n), 1, 1]
                } else {
                    let cols = dims.last().copied().unwrap_or(1);
                    let rows = dims.len().checked_sub(2).map_or(1, |i| dims[i]);
                    let rest: usize = dims.iter().rev().skip(2).product();
                    [
                        kernel::div_ceil(cols, t[1]),
                        kernel::div_ceil(rows, t[0]),
                        rest as u32,
                    ]
                }
            }
            Grid::Exprs(exprs) => {
                let mut g = [1u32; 3];
                for (axis, (slot, e)) in g.iter_mut().zip(exprs).enumerate() {
                    let limit = if axis == 0 {
                        i64::from(i32::MAX)
                    } else {
                        65535
                    };
                    let n = e.eval(&v).map_err(|m| Unsupported(format!("grid {m}")))?;
                    if !(1..=limit).contains(&n) {
                        return Err(Unsupported(format!(
                            "grid {} = {e} = {n} is outside 1..={limit}",
                            ["x", "y", "z"][axis]
                        )));
                    }
                    *slot = n as u32;
                }
                g
            }
        };
        if grid[1] > 65535 || grid[2] > 65535 {
            return Err(Unsupported(format!(
                "grid {grid:?}: y and z are limited to 65535 blocks"
            )));
        }
        self.list.args(shape).map_err(Unsupported)?;
        let smem = match &self.spec.smem {
            None => 0,
            Some(e) => {
                let n = e.eval(&v).map_err(|m| Unsupported(format!("smem {m}")))?;
                if !(0..=MAX_SMEM).contains(&n) {
                    return Err(Unsupported(format!(
                        "dynamic shared memory {e} = {n} bytes is outside 0..={MAX_SMEM}"
                    )));
                }
                n as u32
            }
        };
        Ok((grid, smem))
    }

    /// Compiles the kernel once, turning a failure into the message a user can act on: the
    /// compiler's log with their file and line, or both parameter lists when the kernel does
    /// not take the signature's arguments.
    pub fn compile_check(&self, with: Compiler<'_>) -> Result<(), UserKernelError> {
        let result = match with {
            Compiler::Nvrtc(arch) => nvrtc::compile(&self.source, arch).map(|_| ()),
            Compiler::Sim => {
                kernel::sim::compile::translation_unit(&self.source).and_then(|(tu, _)| {
                    let cxx = kernel::sim::compile::compiler();
                    kernel::sim::compile::build(&self.source, &tu, &cxx).map(|_| ())
                })
            }
        };
        match result {
            Ok(()) => Ok(()),
            Err(DeviceError::Compile {
                compiler,
                file,
                arch,
                log,
            }) => Err(self.explain(compiler, file, arch, log)),
            Err(e) => Err(UserKernelError::Device(e)),
        }
    }

    /// Checks the kernel compiles with NVRTC when it is installed, else with the simulator's
    /// compiler.
    pub fn preflight(&self) -> Result<(), UserKernelError> {
        if nvrtc::version().is_ok() {
            self.compile_check(Compiler::Nvrtc("sm_80"))
        } else {
            self.compile_check(Compiler::Sim)
        }
    }

    fn explain(
        &self,
        compiler: String,
        file: String,
        arch: String,
        log: String,
    ) -> UserKernelError {
        let marker = source::wrapper_file(&self.list, self.signature);
        let at_wrapper = log
            .lines()
            .any(|l| l.starts_with(&marker) && l.contains("error"));
        if !at_wrapper {
            return UserKernelError::Compile {
                file,
                compiler,
                arch,
                log,
            };
        }
        let code = std::fs::read_to_string(&self.spec.file).unwrap_or_default();
        let declared = match source::kernel_declaration(&code, &self.spec.entry) {
            Some((line, params)) => format!(
                "{}:{line} declares: {}{params}",
                self.spec.file.display(),
                self.spec
                    .entry
                    .split('<')
                    .next()
                    .unwrap_or(&self.spec.entry)
            ),
            None => format!(
                "no `__global__` definition of `{}` was found in {}",
                self.spec.entry,
                self.spec.file.display()
            ),
        };
        UserKernelError::Signature(Box::new(SignatureMismatch {
            file: self.spec.file.display().to_string(),
            entry: self.spec.entry.clone(),
            signature: self
                .list
                .custom
                .as_ref()
                .map_or(self.signature.name.to_string(), |c| format!("args={c}")),
            workload: self.workload,
            calls: self.list.c_params(),
            declared,
            choices: Signature::list_for(self.workload),
            compiler: format!("{compiler} ({arch})"),
            log,
        }))
    }

    /// When `shape`'s output is not a whole number of the kernel's output tiles, a line saying
    /// so, naming the first bad element when it lies in the partial tiles: the usual reason a
    /// kernel that passes on round sizes fails.
    pub fn tail_hint(&self, shape: &Shape, first_bad: Option<usize>) -> Option<String> {
        let Grid::Tile(t) = &self.spec.grid else {
            return None;
        };
        let [tr, tc] = t[..] else { return None };
        let out = shape.output();
        let cols = *out.dims.last()?;
        let rows = out.dims.len().checked_sub(2).map_or(1, |i| out.dims[i]);
        if rows.is_multiple_of(tr) && cols.is_multiple_of(tc) {
            return None;
        }
        let mut hint = format!(
            "{} is {rows}x{cols}, not a whole number of {tr}x{tc} tiles: a kernel that assumes \
             divisible sizes fails in the last, partial tiles (rows from {}, columns from {})",
            out.name,
            rows / tr * tr,
            cols / tc * tc
        );
        if let Some(i) = first_bad {
            let (r, c) = ((i / cols) % rows, i % cols);
            let in_tail = r >= rows / tr * tr || c >= cols / tc * tc;
            hint.push_str(&format!(
                "; the first bad element, row {r} column {c}, {}",
                if in_tail {
                    "is in that tail"
                } else {
                    "is not in the tail"
                }
            ));
        }
        Some(hint)
    }
}

impl Kernel for UserKernel {
    fn info(&self) -> KernelInfo {
        KernelInfo {
            id: self.id.clone().into(),
            workload: self.workload,
            stage: Stage::User,
            precision: self.spec.precision,
            role: Role::User,
            rung: self.rung,
            summary: format!(
                "{} ({}), your kernel",
                self.spec.file.display(),
                match &self.list.custom {
                    Some(c) => format!("args={c}"),
                    None => format!("{} signature", self.signature.name),
                }
            )
            .into(),
        }
    }

    fn supports(&self, shape: &Shape) -> Result<(), Unsupported> {
        self.geometry(shape).map(|_| ())
    }

    fn cuda(&self, shape: &Shape) -> Option<CudaPlan> {
        // A shape the geometry refuses is declined by `supports`; the plan still exists.
        let (grid, dynamic_smem) = self.geometry(shape).unwrap_or(([1, 1, 1], 0));
        let len = self.signature.scratch_len(shape);
        Some(CudaPlan {
            inputs: vec![Dtype::F32; shape.inputs().len()],
            output: Dtype::F32,
            output_fill: self.signature.output_fill,
            scratch: self
                .signature
                .scratch
                .iter()
                .map(|s| Scratch {
                    name: s.name.into(),
                    dtype: Dtype::F32,
                    len,
                    fill: s.fill,
                })
                .collect(),
            steps: vec![Step::Kernel(Launch {
                source: self.source.clone(),
                entry: self.wrapper.clone().into(),
                grid,
                block: self.spec.block,
                dynamic_smem,
                args: self.list.args(shape).unwrap_or_default(),
            })],
            pipeline: None,
        })
    }
}

/// The user kernels of a run: the config's `[[kernel]]` sections, then each `--kernel`,
/// loaded and compile-checked (an error stops the run before anything is measured).
pub fn load_all(
    config_kernels: &[UserKernelSpec],
    cli: &[String],
    workloads: &[String],
) -> Result<Vec<UserKernel>, UserKernelError> {
    let single = match workloads {
        [w] => Workload::parse(w),
        _ => None,
    };
    let mut specs = config_kernels.to_vec();
    for text in cli {
        specs.push(UserKernelSpec::parse(text)?);
    }
    let mut out = Vec::new();
    for (i, spec) in specs.iter().enumerate() {
        let k = UserKernel::load(spec, single, i as u32 + 1)?;
        if out.iter().any(|o: &UserKernel| o.id == k.id) {
            return Err(UserKernelError::Spec {
                spec: format!("{}:{}", spec.file.display(), spec.entry),
                message: format!(
                    "another kernel is already called {:?}: name one of them with id=NAME",
                    k.id
                ),
            });
        }
        k.preflight()?;
        out.push(k);
    }
    Ok(out)
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
        assert_eq!(s.block, [16, 16, 1]);
        assert!(matches!(&s.grid, Grid::Exprs(e) if e.len() == 2));
        assert_eq!(s.precision, Precision::Tf32);
        let t = UserKernelSpec::parse("k.cu:ns::k,block=256,grid=tile:32x64").unwrap();
        assert_eq!(
            (t.entry.as_str(), &t.grid),
            ("ns::k", &Grid::Tile(vec![32, 64]))
        );
    }

    #[test]
    fn spec_errors_name_the_option() {
        let e = |s: &str| UserKernelSpec::parse(s).unwrap_err().to_string();
        assert!(e("k.cu:k,grid=tile:8").contains("missing block="));
        assert!(e("k.cu:k,block=256").contains("missing grid"));
        assert!(e("k.cu:k,block=2048,grid=tile:8").contains("at most 1024"));
        assert!(e("k.cu:k,block=256,grid=tile:8,blok=3").contains("unknown option \"blok\""));
        assert!(e("k.cu:k,block=256,grid=tile:8,signature=sgemm").contains("gemm-blas"));
        assert!(e("nothing").contains("FILE.cu:ENTRY"));
    }

    fn example(options: &str, workload: Workload) -> UserKernel {
        let file = concat!(env!("CARGO_MANIFEST_DIR"), "/../examples/attention_rows.cu");
        let spec = UserKernelSpec::parse(&format!("{file}:attention_rows<32,64>,{options}"));
        UserKernel::load(&spec.unwrap(), Some(workload), 1).unwrap()
    }

    #[test]
    fn geometry_follows_the_shape_and_declines_what_cannot_launch() {
        let attention = Shape::Attention {
            b: 2,
            h: 3,
            s: 100,
            d: 24,
            causal: false,
        };
        // Tiles over (S, D) of O[B,H,S,D], the leading B*H on z.
        let k = example(
            "block=32,grid=tile:32x24,smem=2*32*D*4",
            Workload::Attention,
        );
        assert_eq!(k.geometry(&attention), Ok(([1, 4, 6], 2 * 32 * 24 * 4)));
        let k = example("block=32,grid=(cdiv(S,32),B*H)", Workload::Attention);
        assert_eq!(k.geometry(&attention), Ok(([4, 6, 1], 0)));
        let k = example("block=32,grid=(1,S*1000)", Workload::Attention);
        let why = k.supports(&attention).unwrap_err().0;
        assert!(
            why.contains("grid y = S*1000 = 100000 is outside 1..=65535"),
            "{why}"
        );
        let k = example("block=32,grid=tile:32,smem=S*D*1000", Workload::Attention);
        let why = k.supports(&attention).unwrap_err().0;
        assert!(why.contains("dynamic shared memory"), "{why}");
        let e = UserKernel::load(
            &UserKernelSpec::parse("x.cu:k,block=32,grid=(cdiv(N,32))").unwrap(),
            Some(Workload::Attention),
            1,
        )
        .unwrap_err()
        .to_string();
        assert!(
            e.contains("`cdiv(N,32)` uses N; expressions for attention may use B, H, S, D"),
            "{e}"
        );
    }

    #[test]
    fn the_tail_hint_says_whether_the_first_bad_element_is_in_the_tail() {
        let k = example("block=32,grid=tile:16x16", Workload::Gemm);
        let shape = Shape::gemm(100, 37, 8);
        let hint = k.tail_hint(&shape, Some(99 * 37)).unwrap();
        assert!(hint.contains("row 99 column 0, is in that tail"), "{hint}");
        let hint = k.tail_hint(&shape, Some(0)).unwrap();
        assert!(hint.contains("is not in the tail"), "{hint}");
        assert_eq!(k.tail_hint(&Shape::gemm(64, 32, 5), Some(0)), None);
    }

    #[test]
    fn locates_keys_in_the_nth_kernel_section() {
        let text = "seed = 1\n[[kernel]]\nfile = \"a.cu\"\nblock = 1\n\n[[kernel]]\nfile = \"b.cu\"\nblok = 2\n";
        assert_eq!(locate(text, 0, "block"), Some(4));
        assert_eq!(locate(text, 1, "file"), Some(7));
        assert_eq!(locate(text, 1, "grid"), Some(6));
    }
}
