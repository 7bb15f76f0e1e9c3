//! The fixed parameter lists a user kernel may take, per workload. The lab passes exactly these
//! arguments; the generated wrapper calls the user's kernel with them, so a kernel written for
//! another list fails to compile instead of reading garbage.

use super::buffers::{Buffers, c_name};
use super::expr::Expr;
use kernel::{Arg, Buf, Fill, Shape, TensorMap, TmaSwizzle, Workload};

/// One parameter of a signature.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Param {
    /// The workload's input `i` ([`Shape::inputs`] order).
    Input(usize),
    /// The workload's output.
    Output,
    /// Scratch buffer `i` of the signature.
    Scratch(usize),
    /// A dimension of the shape, by its name in [`Shape::dims`] (`M`, `N`, `K`, `S`, `D`...).
    Dim(&'static str),
    /// BLAS `alpha` (1 unless `alpha=` says otherwise).
    Alpha,
    /// BLAS `beta` (0 unless `beta=` says otherwise: then C starts at known random values).
    Beta,
    /// Attention's softmax scale, 1/sqrt(D).
    Scale,
    /// Attention's causal flag (0 or 1).
    Causal,
    /// Linear's activation: 0 relu, 1 gelu (tanh approximation).
    Act,
}

/// A scratch buffer a signature passes, with what it holds when each run starts.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ScratchSpec {
    pub name: &'static str,
    /// Elements per (batch x head x row) of attention, or in all, see [`Signature::scratch_len`].
    pub fill: Fill,
}

/// A workload's parameter list.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Signature {
    pub name: &'static str,
    pub workload: Workload,
    pub params: &'static [(&'static str, Param)],
    /// What the output holds when each run starts.
    pub output_fill: Fill,
    pub scratch: &'static [ScratchSpec],
    /// One line for the docs and error messages.
    pub about: &'static str,
}

/// What a BLAS-style kernel finds in C before `C = alpha*A*B + beta*C`: finite (so `beta*C` is
/// 0 when beta is 0), and not 0 (an element still holding it was never written).
pub const BLAS_C_FILL: f32 = -4096.5;

use Param::*;

/// Every signature; each workload's first is its default.
pub const ALL: &[Signature] = &[
    Signature {
        name: "gemm",
        workload: Workload::Gemm,
        params: &[
            ("A", Input(0)),
            ("B", Input(1)),
            ("C", Output),
            ("M", Dim("M")),
            ("N", Dim("N")),
            ("K", Dim("K")),
        ],
        output_fill: Fill::Nan,
        scratch: &[],
        about: "row-major C[M,N] = A[M,K] B[K,N], the ladder's own list",
    },
    Signature {
        name: "gemm-blas",
        workload: Workload::Gemm,
        params: &[
            ("M", Dim("M")),
            ("N", Dim("N")),
            ("K", Dim("K")),
            ("alpha", Alpha),
            ("A", Input(0)),
            ("B", Input(1)),
            ("beta", Beta),
            ("C", Output),
        ],
        output_fill: Fill::Value(BLAS_C_FILL),
        scratch: &[],
        about: "C = alpha A B + beta C; alpha = 1 and beta = 0 (C starting at a finite \
                sentinel) unless alpha= and beta= say otherwise",
    },
    Signature {
        name: "linear",
        workload: Workload::Linear,
        params: &[
            ("X", Input(0)),
            ("W", Input(1)),
            ("bias", Input(2)),
            ("Y", Output),
            ("M", Dim("M")),
            ("N", Dim("N")),
            ("K", Dim("K")),
            ("act", Act),
        ],
        output_fill: Fill::Nan,
        scratch: &[],
        about: "Y[M,N] = act(X[M,K] W[N,K]^T + bias[N]), act 0 relu, 1 gelu (tanh)",
    },
    Signature {
        name: "conv",
        workload: Workload::Conv,
        params: &[
            ("x", Input(0)),
            ("filter", Input(1)),
            ("y", Output),
            ("B", Dim("B")),
            ("C", Dim("C")),
            ("M", Dim("M")),
            ("H", Dim("H")),
            ("W", Dim("W")),
            ("K", Dim("K")),
        ],
        output_fill: Fill::Nan,
        scratch: &[],
        about: "y[B,M,H-K+1,W-K+1] = x[B,C,H,W] * filter[M,C,K,K], stride 1, no padding",
    },
    Signature {
        name: "attention",
        workload: Workload::Attention,
        params: &[
            ("Q", Input(0)),
            ("K", Input(1)),
            ("V", Input(2)),
            ("O", Output),
            ("B", Dim("B")),
            ("H", Dim("H")),
            ("S", Dim("S")),
            ("D", Dim("D")),
            ("scale", Scale),
            ("causal", Causal),
        ],
        output_fill: Fill::Nan,
        scratch: &[],
        about: "O[B,H,S,D] = softmax(scale Q K^T) V, scale = 1/sqrt(D), causal 0 or 1",
    },
    Signature {
        name: "attention-lm",
        workload: Workload::Attention,
        params: &[
            ("Q", Input(0)),
            ("K", Input(1)),
            ("V", Input(2)),
            ("O", Output),
            ("l", Scratch(0)),
            ("m", Scratch(1)),
            ("B", Dim("B")),
            ("H", Dim("H")),
            ("S", Dim("S")),
            ("D", Dim("D")),
            ("scale", Scale),
            ("causal", Causal),
        ],
        output_fill: Fill::Zero,
        scratch: &[
            ScratchSpec {
                name: "l",
                fill: Fill::Zero,
            },
            ScratchSpec {
                name: "m",
                fill: Fill::Value(f32::NEG_INFINITY),
            },
        ],
        about: "as attention, for kernels that accumulate into O (starting at 0) with a running \
                sum l[B*H*S] (0) and maximum m[B*H*S] (minus infinity)",
    },
    Signature {
        name: "eltwise",
        workload: Workload::Eltwise,
        params: &[
            ("X", Input(0)),
            ("bias", Input(1)),
            ("R", Input(2)),
            ("Y", Output),
            ("M", Dim("M")),
            ("N", Dim("N")),
        ],
        output_fill: Fill::Nan,
        scratch: &[],
        about: "Y[M,N] = gelu(X[M,N] + bias[N]) + R[M,N], gelu with the tanh approximation",
    },
    Signature {
        name: "rbf",
        workload: Workload::Rbf,
        params: &[
            ("d", Input(0)),
            ("out", Output),
            ("n", Dim("n")),
            ("K", Dim("K")),
        ],
        output_fill: Fill::Nan,
        scratch: &[],
        about: "out[n,K] = exp(-gamma (d[n] - mu_k)^2) 0.5 (cos(pi d[n] / r_c) + 1) for d < r_c, \
                else 0; mu_k = k r_c / (K - 1), r_c = 0.5, gamma = 10",
    },
    Signature {
        name: "layernorm",
        workload: Workload::Layernorm,
        params: &[
            ("X", Input(0)),
            ("gamma", Input(1)),
            ("beta", Input(2)),
            ("Y", Output),
            ("M", Dim("M")),
            ("N", Dim("N")),
        ],
        output_fill: Fill::Nan,
        scratch: &[],
        about: "Y[M,N] = (X - mean) / sqrt(var + 1e-5) * gamma[N] + beta[N] per row of X[M,N], \
                biased variance",
    },
    Signature {
        name: "softmax",
        workload: Workload::Softmax,
        params: &[
            ("X", Input(0)),
            ("Y", Output),
            ("M", Dim("M")),
            ("N", Dim("N")),
        ],
        output_fill: Fill::Nan,
        scratch: &[],
        about: "Y[M,N] = exp(X - max) / sum(exp(X - max)) per row of X[M,N]",
    },
    Signature {
        name: "pool",
        workload: Workload::Pool,
        params: &[
            ("x", Input(0)),
            ("y", Output),
            ("B", Dim("B")),
            ("C", Dim("C")),
            ("H", Dim("H")),
            ("W", Dim("W")),
            ("P", Dim("P")),
        ],
        output_fill: Fill::Nan,
        scratch: &[],
        about: "y[B,C,H/P,W/P] = max over each P x P window (stride P, no padding) of \
                max(x[B,C,H,W], 0)",
    },
    Signature {
        name: "reduce",
        workload: Workload::Reduce,
        params: &[("x", Input(0)), ("y", Output), ("N", Dim("N"))],
        output_fill: Fill::Nan,
        scratch: &[],
        about: "y[1] = x[0] + ... + x[N-1], x in [0, 1]; a kernel that adds into y with \
                atomicAdd takes output=zero",
    },
    Signature {
        name: "transpose",
        workload: Workload::Transpose,
        params: &[
            ("X", Input(0)),
            ("Y", Output),
            ("M", Dim("M")),
            ("N", Dim("N")),
        ],
        output_fill: Fill::Nan,
        scratch: &[],
        about: "Y[N,M] = X[M,N]^T: row i of X is column i of Y",
    },
];

impl Signature {
    /// The signature called `name`.
    pub fn named(name: &str) -> Option<&'static Signature> {
        ALL.iter().find(|s| s.name == name)
    }

    /// The signatures of `workload`, its default first.
    pub fn of(workload: Workload) -> impl Iterator<Item = &'static Signature> {
        ALL.iter().filter(move |s| s.workload == workload)
    }

    /// The default signature of `workload`; `None` for a network, which no one kernel
    /// computes.
    pub fn default_for(workload: Workload) -> Option<&'static Signature> {
        Self::of(workload).next()
    }

    /// `A, B, C, M, N, K`.
    pub fn names(&self) -> String {
        let list: Vec<&str> = self.params.iter().map(|(n, _)| *n).collect();
        list.join(", ")
    }

    /// Elements of each scratch buffer: one per attention row (B*H*S).
    pub fn scratch_len(&self, shape: &Shape) -> usize {
        match *shape {
            Shape::Attention { b, h, s, .. } => b * h * s,
            _ => shape.output().len(),
        }
    }

    /// The buffer parameter `name` of this signature, and its length in elements at `shape`;
    /// `None` when `name` is not one of its buffers.
    pub fn buffer(&self, name: &str, shape: &Shape) -> Option<(Param, usize)> {
        let &(_, p) = self.params.iter().find(|(n, _)| *n == name)?;
        let len = match p {
            Input(i) => shape.inputs().get(i)?.len(),
            Output => shape.output().len(),
            Scratch(_) => self.scratch_len(shape),
            _ => return None,
        };
        Some((p, len))
    }

    /// The first of `workload`'s signatures (or `only`, where the kernel names one) that has
    /// every parameter in `used`: the one whose buffers (fills, scratch) a list uses.
    pub fn holding(
        workload: Workload,
        used: &[&str],
        only: Option<&'static Signature>,
    ) -> Result<&'static Signature, String> {
        let mut candidates: Vec<&'static Signature> = match only {
            Some(s) => vec![s],
            None => Self::of(workload).collect(),
        };
        candidates.retain(|s| used.iter().all(|u| s.params.iter().any(|(n, _)| n == u)));
        candidates.first().copied().ok_or_else(|| {
            let mut seen: Vec<&str> = Vec::new();
            for u in used {
                if !seen.contains(u) {
                    seen.push(u);
                }
            }
            let used = seen;
            match only {
                Some(s) => format!(
                    "args: the {} signature (signature=) has no {}",
                    s.name,
                    used.iter()
                        .filter(|u| !s.params.iter().any(|(n, _)| n == *u))
                        .copied()
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
                None => format!(
                    "args: no {workload} signature has all of {}; {}",
                    used.join(", "),
                    Signature::list_for(workload)
                ),
            }
        })
    }

    /// `gemm (A, B, C, M, N, K); gemm-blas (M, N, K, alpha, A, B, beta, C)`.
    pub fn list_for(workload: Workload) -> String {
        let all: Vec<String> = Self::of(workload)
            .map(|s| format!("{} ({})", s.name, s.names()))
            .collect();
        all.join("; ")
    }
}

impl Param {
    /// The argument this parameter passes for `shape`, with `buffers`' scalars.
    pub fn arg(self, shape: &Shape, buffers: &Buffers) -> Arg {
        match self {
            Input(i) => Arg::Ptr(Buf::Input(i)),
            Output => Arg::Ptr(Buf::Output),
            Scratch(i) => Arg::Ptr(Buf::Scratch(i)),
            Dim(d) => Arg::I32(
                shape
                    .dims()
                    .iter()
                    .find(|(n, _)| *n == d)
                    .map_or(0, |(_, v)| *v as i32),
            ),
            Alpha => Arg::F32(buffers.alpha),
            Beta => Arg::F32(buffers.beta),
            Scale => Arg::F32(match *shape {
                Shape::Attention { d, .. } => 1.0 / (d as f32).sqrt(),
                _ => 1.0,
            }),
            Causal => Arg::I32(matches!(shape, Shape::Attention { causal: true, .. }) as i32),
            // The code the lab's own linear rungs take (0 relu, 1 gelu, 2 none).
            Act => Arg::I32(match *shape {
                Shape::Linear { act, .. } => fusion::act_code(act),
                _ => 0,
            }),
        }
    }
}

/// One argument of a user's own list (`args=`): a parameter of the workload's signatures by
/// name, an integer expression of the shape's dimensions, or a workspace ([`Workspaces`]),
/// passed as whatever pointer the kernel takes there.
#[derive(Clone, Debug, PartialEq)]
pub enum ArgItem {
    /// A parameter of the workload's signatures, for a buffer from an element on (`X+N`, as
    /// host code passes `x + n`) when an offset is given.
    Named(&'static str, Param, Option<Expr>),
    Int(Expr),
    /// A `float` constant (`1e-5`, `0.5f`): an epsilon or a scale the kernel takes beyond the
    /// signature's parameters.
    Float(f32),
    /// `nullptr` (or `NULL`): no buffer for an optional pointer, as host code passes one.
    Null,
    /// Workspace `index` of the kernel's [`Workspaces`], as the list writes it (`zeros(4*M)`,
    /// `scratch(P, 4*M*N)`, or `P` again).
    Workspace(usize, String),
    TensorMap(Box<MapArg>),
}

/// Memory of the kernel's own that its host code would allocate: a split-K semaphore's
/// counters, a decoupled look-back's flags, the partial sums one launch writes and the next
/// reads. Written in an `args=` list as
/// - `zeros(BYTES)` or `zeros(NAME, BYTES)`: zero-filled before every run, as after a
///   `cudaMemset`;
/// - `scratch(NAME, BYTES)` (or `scratch(BYTES)`): filled with NaN bytes before every run (every
///   byte 0xFF: NaN as a float, a half or a bfloat16, -1 as an integer), as `cudaMalloc` leaves
///   memory holding whatever was there, so that an element a launch reads before any launch
///   wrote it shows in the output;
/// - `NAME`: one declared earlier, in this list or an earlier launch's, passed again.
///
/// BYTES is an expression of the shape, rounded up to 16 so that any access of up to 16 bytes
/// is aligned and inside. They are the plan's scratch buffers after the signature's own.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Workspaces(Vec<Workspace>);

#[derive(Clone, Debug, PartialEq)]
pub struct Workspace {
    pub name: Option<String>,
    pub bytes: Expr,
    pub fill: Fill,
}

impl Workspace {
    /// As the list declares it: `zeros(4*M)`, `scratch(P, 4*M*N)`.
    pub fn text(&self) -> String {
        let f = if self.fill == Fill::Zero {
            "zeros"
        } else {
            "scratch"
        };
        match &self.name {
            Some(n) => format!("{f}({n}, {})", self.bytes),
            None => format!("{f}({})", self.bytes),
        }
    }
}

impl Workspaces {
    /// The size expressions, for the checks of the names they use.
    pub fn exprs(&self) -> impl Iterator<Item = &Expr> {
        self.0.iter().map(|w| &w.bytes)
    }

    /// Each workspace at `shape`: its name (`P`, or `zeros(4*M)` for one without), its size in
    /// 4-byte words (rounded up to 16 bytes) and its fill.
    pub fn at(&self, shape: &Shape, sms: usize) -> Result<Vec<(String, usize, Fill)>, String> {
        let dims = super::vars(shape, sms);
        self.0
            .iter()
            .map(|w| {
                let bytes = w.bytes.eval(&dims)?;
                let bytes = usize::try_from(bytes)
                    .ok()
                    .filter(|&b| b > 0)
                    .ok_or_else(|| {
                        format!(
                            "args: {} = {bytes} bytes; it takes a positive size",
                            w.text()
                        )
                    })?;
                let name = w.name.clone().unwrap_or_else(|| w.text());
                Ok((name, bytes.div_ceil(16) * 4, w.fill))
            })
            .collect()
    }

    /// Reads `zeros(...)` or `scratch(...)`'s inside (`4*M` or `P, 4*M*N`), declaring the
    /// workspace; `taken` says whether a name is the workload's or a dimension's already.
    fn declare(
        &mut self,
        part: &str,
        inner: &str,
        fill: Fill,
        taken: impl Fn(&str) -> bool,
    ) -> Result<(usize, Expr), String> {
        let parts = super::spec::split_top(inner);
        let (name, bytes) = match parts.as_slice() {
            [bytes] => (None, bytes.trim()),
            [name, bytes] => (Some(name.trim()), bytes.trim()),
            _ => {
                return Err(format!(
                    "args: {part}: takes BYTES or NAME, BYTES (a name a later launch passes                      it by)"
                ));
            }
        };
        if let Some(n) = name {
            let ident = n.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
                && n.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
            if !ident {
                return Err(format!(
                    "args: {part}: {n:?} is not a name (letters, digits and _)"
                ));
            }
            if taken(n) {
                return Err(format!(
                    "args: {part}: {n} is already a parameter or a dimension of the workload;                      give the workspace a name of its own"
                ));
            }
            if let Some(w) = self.named(n) {
                return Err(format!(
                    "args: {part}: {n} is declared already, by {}; pass it again as {n} alone",
                    self.0[w].text()
                ));
            }
        }
        let e = Expr::parse(bytes).map_err(|m| format!("args: {part}: {m}"))?;
        self.0.push(Workspace {
            name: name.map(str::to_string),
            bytes: e.clone(),
            fill,
        });
        Ok((self.0.len() - 1, e))
    }

    /// The names of those that start as NaN, as the list writes them.
    pub fn nan_names(&self) -> Vec<String> {
        self.0
            .iter()
            .filter(|w| w.fill == Fill::Nan)
            .map(|w| w.name.clone().unwrap_or_else(|| w.text()))
            .collect()
    }

    fn named(&self, name: &str) -> Option<usize> {
        self.0.iter().position(|w| w.name.as_deref() == Some(name))
    }
}

/// A TMA tensor map over a buffer of the workload, passed by value as a kernel's `const
/// __grid_constant__ CUtensorMap` (the map a host would encode with `cuTensorMapEncodeTiled`).
/// Two forms:
/// - `tmap(BUFFER, ROWS, COLS, BOX_ROWS, BOX_COLS{, SWIZZLE})`: the buffer as a row-major
///   ROWS x COLS matrix, copied in boxes of BOX_ROWS x BOX_COLS;
/// - `tmap(BUFFER, {DIMS}, {STRIDES}, {BOX}{, SWIZZLE})`: the driver's own arrays, innermost
///   dimension first: 1 to 5 dimensions in elements, one stride fewer in bytes (the innermost
///   dimension is contiguous), the box's edges in elements.
///
/// SWIZZLE is `none` (the default), `32B`, `64B` or `128B`.
#[derive(Clone, Debug, PartialEq)]
pub struct MapArg {
    pub buffer: &'static str,
    pub param: Param,
    pub form: MapForm,
    pub swizzle: TmaSwizzle,
    /// `&tmap(...)`: the map in global memory, passed by its address (`const CUtensorMap *`),
    /// as host code that copies the encoded map to the device passes it.
    pub by_address: bool,
}

#[derive(Clone, Debug, PartialEq)]
pub enum MapForm {
    /// ROWS, COLS, BOX_ROWS, BOX_COLS.
    Matrix(Box<[Expr; 4]>),
    /// Innermost first; strides in bytes.
    Tiled {
        dims: Vec<Expr>,
        strides: Vec<Expr>,
        boxes: Vec<Expr>,
    },
}

const MAP_USAGE: &str = "tmap(BUFFER, ROWS, COLS, BOX_ROWS, BOX_COLS, SWIZZLE) or tmap(BUFFER, \
                         {DIMS}, {STRIDES IN BYTES}, {BOX}, SWIZZLE), innermost dimension first, \
                         with SWIZZLE none, 32B, 64B or 128B";

impl MapArg {
    fn parse(
        inner: &str,
        known: impl Fn(&str) -> Option<(&'static str, Param)>,
    ) -> Result<Self, String> {
        let parts: Vec<&str> = super::spec::split_top(inner)
            .into_iter()
            .map(str::trim)
            .collect();
        fn braced(p: &str) -> Option<Vec<&str>> {
            p.strip_prefix('{')
                .and_then(|r| r.strip_suffix('}'))
                .map(|r| {
                    super::spec::split_top(r)
                        .into_iter()
                        .map(str::trim)
                        .collect()
                })
        }
        let tiled = parts.len() >= 4 && parts[1..4].iter().all(|p| braced(p).is_some());
        let count_ok = if tiled {
            (4..=5).contains(&parts.len())
        } else {
            (5..=6).contains(&parts.len())
        };
        if !count_ok {
            return Err(format!("args: tmap({inner}): takes {MAP_USAGE}"));
        }
        let (buffer, param) = known(parts[0])
            .filter(|(_, p)| matches!(p, Input(_) | Output | Scratch(_)))
            .ok_or_else(|| {
                format!(
                    "args: tmap({inner}): {} is no buffer of the workload",
                    parts[0]
                )
            })?;
        let swizzle_at = if tiled { 4 } else { 5 };
        let swizzle = match parts.get(swizzle_at).copied().unwrap_or("none") {
            "none" => TmaSwizzle::None,
            "32B" => TmaSwizzle::B32,
            "64B" => TmaSwizzle::B64,
            "128B" => TmaSwizzle::B128,
            other => {
                return Err(format!(
                    "args: tmap({inner}): swizzle {other}; it takes {MAP_USAGE}"
                ));
            }
        };
        let form = if tiled {
            let list = |k: usize| -> Result<Vec<Expr>, String> {
                braced(parts[k])
                    .unwrap_or_default()
                    .iter()
                    .map(|t| Expr::parse(t))
                    .collect()
            };
            let (dims, strides, boxes) = (list(1)?, list(2)?, list(3)?);
            let rank = dims.len();
            if !(1..=kernel::TMA_MAX_RANK).contains(&rank)
                || strides.len() + 1 != rank
                || boxes.len() != rank
            {
                return Err(format!(
                    "args: tmap({inner}): {rank} dimensions, {} strides and {} box edges; the TMA \
                     takes 1 to {} dimensions, one stride fewer (the innermost is contiguous) and \
                     a box edge each",
                    strides.len(),
                    boxes.len(),
                    kernel::TMA_MAX_RANK
                ));
            }
            MapForm::Tiled {
                dims,
                strides,
                boxes,
            }
        } else {
            let e = |k: usize| Expr::parse(parts[k]);
            MapForm::Matrix(Box::new([e(1)?, e(2)?, e(3)?, e(4)?]))
        };
        Ok(Self {
            buffer,
            param,
            form,
            swizzle,
            by_address: false,
        })
    }

    /// Every expression of the map: its sizes, strides and box edges.
    pub fn exprs(&self) -> Vec<&Expr> {
        match &self.form {
            MapForm::Matrix(m) => m.iter().collect(),
            MapForm::Tiled {
                dims,
                strides,
                boxes,
            } => dims.iter().chain(strides).chain(boxes).collect(),
        }
    }

    /// What expression `i` of [`Self::exprs`] gives, for messages, and whether it may be 0 (a
    /// stride may, as the driver allows: one of a dimension of one element is never used).
    fn part(&self, i: usize) -> (&'static str, bool) {
        match &self.form {
            MapForm::Matrix(_) => (["rows", "columns", "box rows", "box columns"][i], false),
            MapForm::Tiled { dims, .. } => {
                let rank = dims.len();
                match i {
                    i if i < rank => ("size", false),
                    i if i < 2 * rank - 1 => ("stride", true),
                    _ => ("box edge", false),
                }
            }
        }
    }

    /// The map at `shape`, its view checked against the buffer's elements and the driver's
    /// constraints (strides, box edges, swizzle span), as a declined shape's reason.
    pub fn at(
        &self,
        shape: &Shape,
        sms: usize,
        buffers: &Buffers,
        len: usize,
    ) -> Result<TensorMap, String> {
        let dims = super::vars(shape, sms);
        let mut v = Vec::new();
        for (i, e) in self.exprs().into_iter().enumerate() {
            let x = e.eval(&dims)?;
            let (what, zero) = self.part(i);
            let least = if zero { 0 } else { 1 };
            v.push(
                usize::try_from(x)
                    .ok()
                    .filter(|&x| x >= least)
                    .ok_or_else(|| {
                        let want = if zero { "0 or more" } else { "positive" };
                        format!(
                            "args: tmap({}): its {what} {e} = {x}; it takes a {want} number",
                            self.buffer
                        )
                    })?,
            );
        }
        let edge = |x: usize| u32::try_from(x).unwrap_or(u32::MAX);
        let Arg::Ptr(buf) = self.param.arg(shape, buffers) else {
            return Err(format!("tmap({}): not a buffer", self.buffer));
        };
        let dtype = buffers.of_param(self.param).unwrap_or(kernel::Dtype::F32);
        let map = match &self.form {
            MapForm::Matrix(_) => {
                TensorMap::matrix(buf, v[0], v[1], edge(v[2]), edge(v[3]), self.swizzle)
            }
            MapForm::Tiled { dims, .. } => {
                let rank = dims.len();
                let mut map = TensorMap::matrix(buf, 1, 1, 1, 1, self.swizzle);
                map.rank = rank;
                map.dims[..rank].copy_from_slice(&v[..rank]);
                for (i, &bytes) in v[rank..2 * rank - 1].iter().enumerate() {
                    if bytes % dtype.bytes() != 0 {
                        return Err(format!(
                            "tmap({}): a stride of {bytes} B is no whole number of {}-byte \
                             elements",
                            self.buffer,
                            dtype.bytes()
                        ));
                    }
                    map.strides[i] = bytes / dtype.bytes();
                }
                for (b, &x) in map.boxes.iter_mut().zip(&v[2 * rank - 1..]) {
                    *b = edge(x);
                }
                map
            }
        };
        map.encoding(dtype)
            .and_then(|_| map.fits(len))
            .map_err(|kernel::Unsupported(m)| format!("tmap({}): {m}", self.buffer))?;
        Ok(map)
    }
}

impl std::fmt::Display for MapArg {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let sw = match self.swizzle {
            TmaSwizzle::None => "none",
            TmaSwizzle::B32 => "32B",
            TmaSwizzle::B64 => "64B",
            TmaSwizzle::B128 => "128B",
        };
        let list = |v: &[Expr]| {
            let t: Vec<String> = v.iter().map(Expr::to_string).collect();
            format!("{{{}}}", t.join(", "))
        };
        if self.by_address {
            f.write_str("&")?;
        }
        match &self.form {
            MapForm::Matrix(m) => {
                let [rows, cols, box_rows, box_cols] = m.as_ref();
                write!(
                    f,
                    "tmap({}, {rows}, {cols}, {box_rows}, {box_cols}, {sw})",
                    self.buffer
                )
            }
            MapForm::Tiled {
                dims,
                strides,
                boxes,
            } => write!(
                f,
                "tmap({}, {}, {}, {}, {sw})",
                self.buffer,
                list(dims),
                list(strides),
                list(boxes)
            ),
        }
    }
}

/// The arguments a wrapper passes: a signature's list, or the user's own.
#[derive(Clone, Debug, PartialEq)]
pub struct ArgList {
    pub items: Vec<ArgItem>,
    /// `args=(...)` as written, for a list of the user's own.
    pub custom: Option<String>,
    /// The integer arguments passed as 64-bit values ([`ArgList::widen`]).
    pub wide: Vec<usize>,
    /// The kernel's parameters, in order, as made of the items: an item each, or a struct
    /// passed by value (`{A, B, M}` in `args=`, structs inside it too), which the wrapper
    /// builds from its fields in order.
    pub parts: Vec<Part>,
}

/// One parameter of a kernel, or one field of a struct it takes, as made of an [`ArgList`]'s
/// items.
#[derive(Clone, Debug, PartialEq)]
pub enum Part {
    /// Item `i` of the list.
    Item(usize),
    /// A struct built from these fields in order (none for an empty struct, `{}`).
    Struct(Vec<Part>),
}

impl ArgList {
    pub fn of(sig: &Signature) -> Self {
        Self {
            items: sig
                .params
                .iter()
                .map(|(n, p)| ArgItem::Named(n, *p, None))
                .collect(),
            custom: None,
            wide: Vec::new(),
            parts: (0..sig.params.len()).map(Part::Item).collect(),
        }
    }

    /// Reads `(Q, K, V, S, D, cdiv(S,32), scale, l, m, O)` for `workload`: names of its
    /// signatures' parameters and integer expressions. Also returns the signature whose
    /// buffers (fills, scratch) the list uses: the first that has every name.
    /// Workspaces it declares join `workspaces`, where a later launch's list finds them.
    pub fn parse(
        text: &str,
        workload: Workload,
        workspaces: &mut Workspaces,
    ) -> Result<(Self, &'static Signature), String> {
        let inner = text
            .trim()
            .strip_prefix('(')
            .and_then(|r| r.strip_suffix(')'))
            .unwrap_or(text);
        let sigs: Vec<&'static Signature> = Signature::of(workload).collect();
        let known = |name: &str| {
            sigs.iter()
                .flat_map(|s| s.params.iter())
                .find(|(n, _)| *n == name)
                .copied()
        };
        // The names an expression may use (the SM count's value is only a probe's).
        let dims = super::vars(&workload.probe_shape(), super::SIM_SMS);
        let names: Vec<&str> = dims.iter().map(|(n, _)| *n).collect();
        let mut item = |part: &str| -> Result<ArgItem, String> {
            let declared = [("zeros(", Fill::Zero), ("scratch(", Fill::Nan)]
                .into_iter()
                .find_map(|(f, fill)| {
                    let inner = part.strip_prefix(f)?.strip_suffix(')')?;
                    Some((inner, fill))
                });
            if let Some((inner, fill)) = declared {
                let taken = |n: &str| known(n).is_some() || names.contains(&n);
                let (at, e) = workspaces.declare(part, inner, fill, taken)?;
                let unknown = e.unknown_names(&names);
                if !unknown.is_empty() {
                    return Err(format!(
                        "args: {} is neither a parameter of {workload} nor an integer \
                         expression of {} (in {part})",
                        unknown.join(", "),
                        super::names_in_words(&dims)
                    ));
                }
                return Ok(ArgItem::Workspace(at, part.to_string()));
            }
            if let Some(at) = workspaces.named(part) {
                return Ok(ArgItem::Workspace(at, part.to_string()));
            }
            let (by_address, map_text) = match part.strip_prefix('&') {
                Some(rest) => (true, rest.trim_start()),
                None => (false, part),
            };
            if let Some(inner) = map_text
                .strip_prefix("tmap(")
                .and_then(|r| r.strip_suffix(')'))
            {
                let map = MapArg {
                    by_address,
                    ..MapArg::parse(inner, known)?
                };
                let unknown: Vec<String> = map
                    .exprs()
                    .iter()
                    .flat_map(|e| e.unknown_names(&names))
                    .collect();
                if !unknown.is_empty() {
                    return Err(format!(
                        "args: {part}: {} is no dimension of {workload}; expressions may use {}",
                        unknown.join(", "),
                        super::names_in_words(&dims)
                    ));
                }
                return Ok(ArgItem::TensorMap(Box::new(map)));
            }
            if let Some(v) = float_literal(part) {
                return Ok(ArgItem::Float(v));
            }
            if part == "nullptr" || part == "NULL" {
                return Ok(ArgItem::Null);
            }
            // C++'s `bool` literals are the integers a `bool` or `int` parameter takes.
            if let Some(v) = [("false", "0"), ("true", "1")]
                .iter()
                .find_map(|(word, v)| (part == *word).then_some(v))
            {
                return Ok(ArgItem::Int(Expr::parse(v)?));
            }
            if let Some((n, p)) = known(part) {
                return Ok(ArgItem::Named(n, p, None));
            }
            // `X+N`: a buffer from element N on, as host code passes `x + n`.
            if let Some((base, offset)) = part.split_once('+') {
                let base = base.trim();
                if let Some((n, p @ (Input(_) | Output | Scratch(_)))) = known(base) {
                    let e = Expr::parse(offset.trim())?;
                    let unknown = e.unknown_names(&names);
                    if !unknown.is_empty() {
                        return Err(format!(
                            "args: {part}: {} is no dimension of {workload}; an offset is an \
                             integer expression of {}",
                            unknown.join(", "),
                            super::names_in_words(&dims)
                        ));
                    }
                    return Ok(ArgItem::Named(n, p, Some(e)));
                }
                if workspaces.named(base).is_some() {
                    return Err(format!(
                        "args: {part}: an offset into a workspace is not given, since its \
                         elements have the type of the kernel's parameter, which the list does not \
                         know; declare the part as a workspace of its own"
                    ));
                }
            }
            let e = Expr::parse(part)?;
            let unknown = e.unknown_names(&names);
            if !unknown.is_empty() {
                let mut all: Vec<&str> = sigs
                    .iter()
                    .flat_map(|s| s.params.iter().map(|(n, _)| *n))
                    .collect();
                all.sort();
                all.dedup();
                // A name alone may be a workspace's, passed before it is declared.
                let bare = part.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
                let workspace = match bare {
                    true => format!(
                        "; a workspace is passed by its name after zeros({part}, BYTES) or \
                         scratch({part}, BYTES) declares it, earlier in this list or in an \
                         earlier launch's"
                    ),
                    false => String::new(),
                };
                return Err(format!(
                    "args: {} is neither a parameter of {workload} ({}) nor an integer \
                     expression of {}{workspace}",
                    unknown.join(", "),
                    all.join(", "),
                    super::names_in_words(&dims)
                ));
            }
            Ok(ArgItem::Int(e))
        };
        let mut items = Vec::new();
        // `{A, B, M}`: one parameter (or field), a struct taken by value, built from these
        // fields; `{}` an empty one.
        fn part(
            text: &str,
            whole: &str,
            items: &mut Vec<ArgItem>,
            item: &mut dyn FnMut(&str) -> Result<ArgItem, String>,
        ) -> Result<Part, String> {
            let Some(fields) = text.strip_prefix('{').and_then(|r| r.strip_suffix('}')) else {
                items.push(item(text)?);
                return Ok(Part::Item(items.len() - 1));
            };
            if fields.trim().is_empty() {
                return Ok(Part::Struct(Vec::new()));
            }
            let mut parts = Vec::new();
            for field in super::spec::split_top(fields) {
                let field = field.trim();
                if field.starts_with("tmap(") || field.starts_with("&tmap(") {
                    return Err(format!(
                        "args: {whole}: a struct's fields are buffers, numbers, workspaces and \
                         structs; a tensor map is not built into one"
                    ));
                }
                if field.is_empty() {
                    return Err(format!("args: {whole}: an empty field"));
                }
                parts.push(part(field, whole, items, item)?);
            }
            Ok(Part::Struct(parts))
        }
        let mut parts = Vec::new();
        for text in super::spec::split_top(inner) {
            let text = text.trim();
            parts.push(part(text, text, &mut items, &mut item)?);
        }
        let list = Self {
            items,
            custom: Some(text.trim().to_string()),
            wide: Vec::new(),
            parts,
        };
        let sig = Signature::holding(workload, &list.names(), None)?;
        Ok((list, sig))
    }

    /// The names of the workload's parameters it passes.
    pub fn names(&self) -> Vec<&'static str> {
        self.items
            .iter()
            .filter_map(|i| match i {
                ArgItem::Named(n, _, _) => Some(*n),
                ArgItem::TensorMap(m) => Some(m.buffer),
                ArgItem::Int(_) | ArgItem::Float(_) | ArgItem::Null | ArgItem::Workspace(..) => {
                    None
                }
            })
            .collect()
    }

    fn name(&self, i: usize) -> String {
        match &self.items[i] {
            // A dimension passed twice (`args=(M,N,K,alpha,A,K,...)`, a leading dimension):
            // the wrapper's parameters need names of their own.
            ArgItem::Named(n, _, _)
                if self.items[..i]
                    .iter()
                    .any(|e| matches!(e, ArgItem::Named(m, _, _) if m == n)) =>
            {
                format!("{n}_{i}")
            }
            ArgItem::Named(n, _, _) => n.to_string(),
            // A named workspace by its name (`arg3` stays the lab's), passed twice by a
            // name of its own each time.
            ArgItem::Workspace(w, text) => match workspace_name(text) {
                Some(n)
                    if !(n.starts_with("arg") && n[3..].bytes().all(|b| b.is_ascii_digit())) =>
                {
                    let again = self.items[..i]
                        .iter()
                        .any(|e| matches!(e, ArgItem::Workspace(v, _) if v == w));
                    match again {
                        true => format!("{n}_{i}"),
                        false => n.to_string(),
                    }
                }
                _ => format!("arg{i}"),
            },
            ArgItem::Int(_) | ArgItem::Float(_) | ArgItem::Null | ArgItem::TensorMap(_) => {
                format!("arg{i}")
            }
        }
    }

    /// The C++ type of argument `i`: `float *`, `half *`, `int`, `float`; `void *` for a
    /// workspace.
    pub fn c_type(&self, i: usize, buffers: &Buffers) -> String {
        if self.wide.contains(&i) {
            return "long long".to_string();
        }
        match &self.items[i] {
            ArgItem::Named(_, p, _) => match buffers.of_param(*p) {
                // Non-const pointers: they convert to a kernel's `const float *` as well.
                Some(d) => format!("{} *", c_name(d)),
                None => c_type(*p).to_string(),
            },
            ArgItem::Int(_) => "int".to_string(),
            ArgItem::Float(_) => "float".to_string(),
            ArgItem::Workspace(..) | ArgItem::Null => "void *".to_string(),
            ArgItem::TensorMap(m) if m.by_address => "const CUtensorMap *".to_string(),
            ArgItem::TensorMap(_) => "CUtensorMap".to_string(),
        }
    }

    /// Argument `i` as the wrapper passes it on: a workspace as the pointer type the kernel's
    /// parameter declares (`kernel_lab::workspace` converts to any).
    fn passed(&self, i: usize, buffers: &Buffers) -> String {
        match &self.items[i] {
            ArgItem::Workspace(..) => {
                format!("::kernel_lab::workspace{{{}}}", self.code_name(i))
            }
            ArgItem::Null => "nullptr".to_string(),
            ArgItem::Named(_, p, _) => match buffers.of_param(*p) {
                Some(d) => format!(
                    "::kernel_lab::elements<{}>{{{}}}",
                    c_name(d),
                    self.code_name(i)
                ),
                None if self.integer(i, buffers) => self.as_integer(i, &self.code_name(i), buffers),
                None => self.code_name(i),
            },
            ArgItem::Int(_) => self.as_integer(i, &self.code_name(i), buffers),
            _ => self.code_name(i),
        }
    }

    /// Whether argument `i` is an integer (a dimension, a flag, an expression).
    fn integer(&self, i: usize, buffers: &Buffers) -> bool {
        matches!(self.c_type(i, buffers).as_str(), "int" | "long long")
    }

    /// An integer `value` of argument `i`'s type, as the kernel's parameter takes it: a number
    /// converts to the parameter's type as host code's argument does, and to an enum as the
    /// host's `(ACTIVATION)1` does (darknet's `activate_array(x, n, RELU)`).
    fn as_integer(&self, i: usize, value: &str, buffers: &Buffers) -> String {
        format!(
            "::kernel_lab::loose<{}>{{{value}}}",
            self.c_type(i, buffers)
        )
    }

    /// Argument `i`'s name in the code the lab generates: `lab_M`. The user's file comes
    /// first in that code, and its macros (cuda-samples define `M`, `N` and `K` as sizes)
    /// would replace a plain `M`; NVRTC has no `#pragma push_macro` to set them aside.
    fn code_name(&self, i: usize) -> String {
        format!("lab_{}", self.name(i))
    }

    /// Item `i` as `args=` writes it: `A`, `cdiv(M,64)`, `zeros(4*M)`.
    pub fn item_text(&self, i: usize) -> String {
        match &self.items[i] {
            ArgItem::Named(n, _, None) => n.to_string(),
            ArgItem::Named(n, _, Some(e)) => format!("{n}+{e}"),
            ArgItem::Int(e) => e.to_string(),
            ArgItem::Float(v) => v.to_string(),
            ArgItem::Null => "nullptr".to_string(),
            ArgItem::Workspace(_, text) => text.clone(),
            ArgItem::TensorMap(m) => m.to_string(),
        }
    }

    /// `parameter 1 is a struct built from {A, B, C, M, N, K}`, for each struct of the list.
    pub fn struct_notes(&self) -> Vec<String> {
        self.parts
            .iter()
            .enumerate()
            .filter(|(_, p)| matches!(p, Part::Struct(_)))
            .map(|(at, p)| {
                let text = self.render(p, &|i| self.item_text(i), &|fields| {
                    format!("{{{}}}", fields.join(", "))
                });
                format!("parameter {} is a struct built from {text}", at + 1)
            })
            .collect()
    }

    /// Whether a parameter is a struct built from fields.
    pub fn has_structs(&self) -> bool {
        self.parts.iter().any(|p| matches!(p, Part::Struct(_)))
    }

    /// A value of each parameter's type, for the check that the kernel takes the list.
    pub fn sample_values(&self, buffers: &Buffers) -> Vec<String> {
        self.parts
            .iter()
            .map(|p| match p {
                Part::Item(i) => match &self.items[*i] {
                    ArgItem::Workspace(..) => "::kernel_lab::workspace{}".to_string(),
                    ArgItem::Null => "nullptr".to_string(),
                    ArgItem::Named(_, p, _) if buffers.of_param(*p).is_some() => {
                        let d = buffers.of_param(*p).map_or("float", c_name);
                        format!("::kernel_lab::elements<{d}>{{}}")
                    }
                    ArgItem::TensorMap(m) if !m.by_address => "CUtensorMap{}".to_string(),
                    _ if self.integer(*i, buffers) => self.as_integer(*i, "", buffers),
                    _ => format!("({})0", self.c_type(*i, buffers)),
                },
                // A struct's type, which converts to a struct its fields build.
                Part::Struct(_) => {
                    let ty = self.render(p, &|i| self.field_type(i, buffers), &|fields| {
                        format!("::kernel_lab::fields<{}>", fields.join(", "))
                    });
                    format!("{ty}{{}}")
                }
            })
            .collect()
    }

    /// The type a struct's field `i` is built from: one that converts to the field's type as
    /// a call's argument would, without the narrowing error of braces (an `int` into a
    /// `size_t`).
    fn field_type(&self, i: usize, buffers: &Buffers) -> String {
        match &self.items[i] {
            ArgItem::Workspace(..) => "::kernel_lab::workspace".to_string(),
            ArgItem::Null => "decltype(nullptr)".to_string(),
            _ => format!("::kernel_lab::loose<{}>", self.c_type(i, buffers)),
        }
    }

    /// `part`'s text: `item(i)` for item `i`, `fields(texts)` for a struct of fields with
    /// these texts.
    fn render(
        &self,
        part: &Part,
        item: &dyn Fn(usize) -> String,
        fields: &dyn Fn(Vec<String>) -> String,
    ) -> String {
        match part {
            Part::Item(i) => item(*i),
            Part::Struct(parts) => {
                fields(parts.iter().map(|p| self.render(p, item, fields)).collect())
            }
        }
    }

    /// Each parameter's text, in order: `top(i)` for an argument of its own, a struct's
    /// fields `field(i)` in braces.
    fn grouped(
        &self,
        top: impl Fn(usize) -> String,
        field: impl Fn(usize) -> String,
    ) -> Vec<String> {
        let braces = |fields: Vec<String>| format!("{{{}}}", fields.join(", "));
        self.parts
            .iter()
            .map(|p| match p {
                Part::Item(i) => top(*i),
                Part::Struct(_) => self.render(p, &field, &braces),
            })
            .collect()
    }

    /// Passes integer argument `i` as a 64-bit value, as the kernel's parameter is wide (a
    /// `size_t` or `int64_t` size): launched as it is, the kernel reads it at its own width.
    pub fn widen(&mut self, i: usize) {
        if !self.wide.contains(&i) {
            self.wide.push(i);
        }
    }

    /// `(float * A, float * B, float * C, int M, int N, int K)`, as messages show the list; a
    /// struct's fields in braces.
    pub fn c_params(&self, buffers: &Buffers) -> String {
        let param = |i| format!("{} {}", self.c_type(i, buffers), self.name(i));
        format!("({})", self.grouped(param, param).join(", "))
    }

    /// The wrapper's parameter list: each argument, a struct's fields too, with its name as
    /// the generated code spells it ([`ArgList::code_name`]).
    pub fn wrapper_params(&self, buffers: &Buffers) -> String {
        let list: Vec<String> = (0..self.items.len())
            .map(|i| format!("{} {}", self.c_type(i, buffers), self.code_name(i)))
            .collect();
        format!("({})", list.join(", "))
    }

    /// The named parameters passed, in order (`args=`'s integer expressions left out).
    pub fn params(&self) -> Vec<Param> {
        self.items
            .iter()
            .filter_map(|i| match i {
                ArgItem::Named(_, p, _) => Some(*p),
                ArgItem::TensorMap(m) => Some(m.param),
                ArgItem::Int(_) | ArgItem::Float(_) | ArgItem::Null | ArgItem::Workspace(..) => {
                    None
                }
            })
            .collect()
    }

    /// The tensor maps (`tmap(...)`) of the list.
    pub fn tensor_maps(&self) -> impl Iterator<Item = &MapArg> {
        self.items.iter().filter_map(|i| match i {
            ArgItem::TensorMap(m) => Some(m.as_ref()),
            _ => None,
        })
    }

    /// `A, B, C, M, N, K`: the wrapper's call; a struct as `{...}` of its fields, which
    /// copy-list-initializes the kernel's parameter.
    pub fn call(&self, buffers: &Buffers) -> String {
        let field = |i| match &self.items[i] {
            ArgItem::Workspace(..) | ArgItem::Null => self.passed(i, buffers),
            _ => format!("{}{{{}}}", self.field_type(i, buffers), self.code_name(i)),
        };
        self.grouped(|i| self.passed(i, buffers), field).join(", ")
    }

    /// The arguments for `shape` on a GPU with `sms` SMs, or the expression that cannot be
    /// evaluated. Workspaces are the scratch buffers after the signature's own
    /// ([`Workspaces`]).
    pub fn args(&self, shape: &Shape, sms: usize, buffers: &Buffers) -> Result<Vec<Arg>, String> {
        let dims = super::vars(shape, sms);
        self.items
            .iter()
            .enumerate()
            .map(|(at, i)| match i {
                ArgItem::Named(n, p, Some(e)) => {
                    let Arg::Ptr(buf) = p.arg(shape, buffers) else {
                        return Err(format!("args: {n}+{e}: {n} is no buffer"));
                    };
                    let offset = e.eval(&dims)?;
                    let len = match p {
                        Input(i) => shape.inputs().get(*i).map(|t| t.len()),
                        Output => Some(shape.output().len()),
                        _ => None,
                    };
                    match usize::try_from(offset) {
                        Ok(o) if len.is_none_or(|l| o < l) => Ok(Arg::PtrAt(buf.at(o))),
                        _ => Err(format!(
                            "args: {n}+{e} = {n}+{offset} is outside {n}, which holds {} elements",
                            len.unwrap_or(0)
                        )),
                    }
                }
                ArgItem::Named(_, p, None) => Ok(match p.arg(shape, buffers) {
                    Arg::I32(v) if self.wide.contains(&at) => Arg::I64(i64::from(v)),
                    other => other,
                }),
                ArgItem::TensorMap(m) => {
                    // The view is checked against the buffer where the plan is built.
                    let map = m.at(shape, sms, buffers, usize::MAX)?;
                    Ok(if m.by_address {
                        Arg::TensorMapAt(map)
                    } else {
                        Arg::TensorMap(map)
                    })
                }
                ArgItem::Workspace(w, _) => Ok(Arg::Ptr(Buf::Scratch(buffers.scratch.len() + w))),
                ArgItem::Float(v) => Ok(Arg::F32(*v)),
                ArgItem::Null => Ok(Arg::Null),
                ArgItem::Int(e) if self.wide.contains(&at) => e.eval(&dims).map(Arg::I64),
                ArgItem::Int(e) => {
                    let v = e.eval(&dims)?;
                    i32::try_from(v)
                        .map(Arg::I32)
                        .map_err(|_| format!("args: {e} = {v} does not fit an int"))
                }
            })
            .collect()
    }
}

/// The name of a workspace as a list writes it: `P` in `P` or `scratch(P, 4*M*N)`; `None` for
/// one without (`zeros(4*M)`).
fn workspace_name(text: &str) -> Option<&str> {
    let inner = ["zeros(", "scratch("]
        .iter()
        .find_map(|f| text.strip_prefix(f)?.strip_suffix(')'));
    match inner {
        Some(inner) => match super::spec::split_top(inner).as_slice() {
            [name, _] => Some(name.trim()),
            _ => None,
        },
        None => Some(text),
    }
}

/// `1e-5`, `0.5`, `-2.f`, `3e2f` as a finite `float`: a number with a point or an exponent (an
/// integer stays an integer expression).
fn float_literal(text: &str) -> Option<f32> {
    let t = text.trim();
    let digits = t.strip_suffix(['f', 'F']).unwrap_or(t);
    let looks = digits.contains(['.', 'e', 'E'])
        && digits.starts_with(|c: char| c.is_ascii_digit() || "+-.".contains(c));
    digits
        .parse::<f32>()
        .ok()
        .filter(|v| looks && v.is_finite())
}

fn c_type(p: Param) -> &'static str {
    match p {
        Input(_) | Output | Scratch(_) => "float *",
        Dim(_) | Causal | Act => "int",
        Alpha | Beta | Scale => "float",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::user_kernel::SIM_SMS;

    #[test]
    fn an_own_list_names_parameters_and_integer_expressions() {
        let (list, sig) = ArgList::parse(
            "(Q, K, V, S, D, cdiv(S,32), 32, scale, l, m, O)",
            Workload::Attention,
            &mut Workspaces::default(),
        )
        .unwrap();
        assert_eq!(sig.name, "attention-lm", "l and m are its scratch buffers");
        let f32s = Buffers::fp32(sig);
        assert_eq!(
            list.c_params(&f32s),
            "(float * Q, float * K, float * V, int S, int D, int arg5, int arg6, float scale, \
             float * l, float * m, float * O)"
        );
        // Buffers as elements, which convert to a pointer to a vector of them too; integers
        // as numbers, which convert to an enum too.
        let buf = |n: &str| format!("::kernel_lab::elements<float>{{lab_{n}}}");
        let int = |n: &str| format!("::kernel_lab::loose<int>{{lab_{n}}}");
        assert_eq!(
            list.call(&f32s),
            [
                buf("Q"),
                buf("K"),
                buf("V"),
                int("S"),
                int("D"),
                int("arg5"),
                int("arg6"),
                "lab_scale".into(),
                buf("l"),
                buf("m"),
                buf("O"),
            ]
            .join(", ")
        );
        let shape = Shape::Attention {
            b: 1,
            h: 1,
            s: 70,
            d: 16,
            causal: false,
        };
        let args = list.args(&shape, SIM_SMS, &f32s).unwrap();
        assert_eq!(
            (args[5], args[6], args[8]),
            (Arg::I32(3), Arg::I32(32), Arg::Ptr(Buf::Scratch(0)))
        );
        let e = ArgList::parse(
            "(Q, K, V, O, Tc)",
            Workload::Attention,
            &mut Workspaces::default(),
        )
        .unwrap_err();
        assert!(e.contains("Tc is neither a parameter of attention"), "{e}");
        let (plain, sig) = ArgList::parse(
            "(A, B, C, M, N, K)",
            Workload::Gemm,
            &mut Workspaces::default(),
        )
        .unwrap();
        assert_eq!((sig.name, plain.items.len()), ("gemm", 6));
        // A dimension passed twice, as a BLAS kernel's leading dimension: the wrapper's
        // parameters keep names of their own.
        let (blas, sig) = ArgList::parse(
            "(M, N, K, A, K, B, N, C, N)",
            Workload::Gemm,
            &mut Workspaces::default(),
        )
        .unwrap();
        assert_eq!(
            blas.c_params(&Buffers::fp32(sig)),
            "(int M, int N, int K, float * A, int K_4, float * B, int N_6, float * C, int N_8)"
        );
        assert_eq!(
            blas.call(&Buffers::fp32(sig)),
            [
                int("M"),
                int("N"),
                int("K"),
                buf("A"),
                int("K_4"),
                buf("B"),
                int("N_6"),
                buf("C"),
                int("N_8"),
            ]
            .join(", ")
        );
        // Float constants: a point or an exponent, with or without C's `f`; integers stay
        // integer expressions.
        let (list, sig) = ArgList::parse(
            "(X, gamma, beta, Y, M, N, 1e-5, 0.5f, -2.5E-1, 3)",
            Workload::Layernorm,
            &mut Workspaces::default(),
        )
        .unwrap();
        assert_eq!(
            list.c_params(&Buffers::fp32(sig)),
            "(float * X, float * gamma, float * beta, float * Y, int M, int N, float arg6, \
             float arg7, float arg8, int arg9)"
        );
        let shape = Shape::Layernorm { m: 3, n: 5 };
        let args = list.args(&shape, SIM_SMS, &Buffers::fp32(sig)).unwrap();
        assert_eq!(
            args[6..],
            [Arg::F32(1e-5), Arg::F32(0.5), Arg::F32(-0.25), Arg::I32(3)]
        );
        let e = ArgList::parse(
            "(X, gamma, beta, Y, M, N, eps)",
            Workload::Layernorm,
            &mut Workspaces::default(),
        )
        .unwrap_err();
        assert!(e.contains("eps is neither a parameter of layernorm"), "{e}");
        // C++'s bool literals are integers: a flag the kernel takes.
        let (list, sig) = ArgList::parse(
            "(X, Y, M, N, true, false)",
            Workload::Softmax,
            &mut Workspaces::default(),
        )
        .unwrap();
        let args = list
            .args(&Shape::Softmax { m: 3, n: 5 }, SIM_SMS, &Buffers::fp32(sig))
            .unwrap();
        assert_eq!(args[4..], [Arg::I32(1), Arg::I32(0)]);
    }

    #[test]
    fn tmap_passes_a_tensor_map_over_a_buffer_checked_at_each_shape() {
        let (list, sig) = ArgList::parse(
            "(M, N, K, C, tmap(A, M, K, 64, 64, 128B), tmap(B, N, K, 128, 64, 128B))",
            Workload::Gemm,
            &mut Workspaces::default(),
        )
        .unwrap();
        assert_eq!(sig.name, "gemm");
        let mut buffers = Buffers::fp32(sig);
        buffers.inputs = vec![kernel::Dtype::Bf16; 2];
        assert_eq!(
            list.c_params(&buffers),
            "(int M, int N, int K, float * C, CUtensorMap arg4, CUtensorMap arg5)"
        );
        assert_eq!(list.sample_values(&buffers)[4], "CUtensorMap{}");
        assert_eq!(
            list.params(),
            vec![Dim("M"), Dim("N"), Dim("K"), Output, Input(0), Input(1)]
        );
        let args = list
            .args(&Shape::gemm(100, 72, 136), SIM_SMS, &buffers)
            .unwrap();
        assert_eq!(
            args[5],
            Arg::TensorMap(TensorMap::matrix(
                Buf::Input(1),
                72,
                136,
                128,
                64,
                TmaSwizzle::B128
            ))
        );
        // A row pitch that is no multiple of 16 bytes declines the shape, naming the map.
        let maps: Vec<&MapArg> = list.tensor_maps().collect();
        let e = maps[0]
            .at(&Shape::gemm(100, 72, 129), SIM_SMS, &buffers, 100 * 129)
            .unwrap_err();
        assert!(
            e.starts_with("tmap(A): TMA tensor map: rows of 129 elements are 258 B apart"),
            "{e}"
        );
        // A view larger than its buffer, a box wider than its swizzle.
        let e = maps[0]
            .at(&Shape::gemm(100, 72, 136), SIM_SMS, &buffers, 64)
            .unwrap_err();
        assert!(
            e.contains("a 100x136 view (its last element at 13599) over a buffer of 64 elements"),
            "{e}"
        );
        let (wide, _) = ArgList::parse(
            "(tmap(A, M, K, 64, 128, 64B), B, C, M, N, K)",
            Workload::Gemm,
            &mut Workspaces::default(),
        )
        .unwrap();
        let e = wide
            .args(&Shape::gemm(64, 64, 128), SIM_SMS, &buffers)
            .unwrap_err();
        assert!(e.contains("256 B, wider than its 64 B swizzle"), "{e}");
        for (bad, want) in [
            (
                "(tmap(A, M, K, 64), B, C)",
                "takes tmap(BUFFER, ROWS, COLS, BOX_ROWS, BOX_COLS",
            ),
            (
                "(tmap(M, M, K, 64, 64), B, C)",
                "M is no buffer of the workload",
            ),
            ("(tmap(A, M, K, 64, 64, 96B), B, C)", "swizzle 96B"),
            (
                "(tmap(A, M, Q, 64, 64), B, C)",
                "Q is no dimension of gemm; expressions may use M, N, K and SMS",
            ),
        ] {
            let e = ArgList::parse(bad, Workload::Gemm, &mut Workspaces::default()).unwrap_err();
            assert!(e.contains(want), "{bad}: {e}");
        }
    }

    #[test]
    fn tmap_takes_the_drivers_arrays_for_maps_of_more_dimensions() {
        // fast.cu's map of A: rows of K split into planes of 64, strides in bytes.
        let text = "(tmap(A, {64, M, K/64}, {2*K, 128}, {64, 128, 2}, 128B), C)";
        let (list, sig) = ArgList::parse(text, Workload::Gemm, &mut Workspaces::default()).unwrap();
        let mut buffers = Buffers::fp32(sig);
        buffers.inputs = vec![kernel::Dtype::Bf16; 2];
        let maps: Vec<&MapArg> = list.tensor_maps().collect();
        assert_eq!(
            maps[0].to_string(),
            "tmap(A, {64, M, K/64}, {2*K, 128}, {64, 128, 2}, 128B)"
        );
        let map = maps[0]
            .at(&Shape::gemm(256, 64, 192), SIM_SMS, &buffers, 256 * 192)
            .unwrap();
        assert_eq!(map.rank, 3);
        assert_eq!(map.dims[..3], [64, 256, 3]);
        assert_eq!(map.strides[..2], [192, 64]);
        assert_eq!(map.boxes[..3], [64, 128, 2]);
        // A stride in bytes that is no whole element, one that breaks the 16-byte rule.
        let (odd, _) = ArgList::parse(
            "(tmap(A, {64, M}, {2*K+1}, {64, 64}), C)",
            Workload::Gemm,
            &mut Workspaces::default(),
        )
        .unwrap();
        let e = odd
            .args(&Shape::gemm(64, 64, 64), SIM_SMS, &buffers)
            .unwrap_err();
        assert!(
            e.contains("a stride of 129 B is no whole number of 2-byte elements"),
            "{e}"
        );
        let (pitch, _) = ArgList::parse(
            "(tmap(A, {K, M}, {2*K}, {64, 64}), C)",
            Workload::Gemm,
            &mut Workspaces::default(),
        )
        .unwrap();
        let e = pitch
            .args(&Shape::gemm(64, 64, 68), SIM_SMS, &buffers)
            .unwrap_err();
        assert!(e.contains("rows of 68 elements are 136 B apart"), "{e}");
        // fast.cu's rank-5 maps: the strides of their trailing dimensions of one element are 0,
        // which the driver takes (a multiple of 16 B); a size or box edge of 0 is refused.
        let map = |text: &str| {
            let (list, _) =
                ArgList::parse(text, Workload::Gemm, &mut Workspaces::default()).unwrap();
            list.args(&Shape::gemm(256, 64, 192), SIM_SMS, &buffers)
        };
        map("(tmap(A, {64, M, K/64, 1, 1}, {2*K, 128, 0, 0}, {64, 128, 1, 1, 1}, 128B), C)")
            .unwrap();
        let e = map("(tmap(A, {64, M, K/64}, {2*K, 128}, {64, 128, K-K}), C)").unwrap_err();
        assert!(
            e.contains("tmap(A): its box edge K-K = 0; it takes a positive number"),
            "{e}"
        );
        for (bad, want) in [
            (
                "(tmap(A, {64, M}, {2*K, 128}, {64, 64}), C)",
                "2 dimensions, 2 strides and 2 box edges",
            ),
            (
                "(tmap(A, {1, 1, 1, 1, 1, 1}, {1, 1, 1, 1, 1}, {1, 1, 1, 1, 1, 1}), C)",
                "takes 1 to 5 dimensions",
            ),
            (
                "(tmap(A, {64, M}, {2*Q}, {64, 64}), C)",
                "Q is no dimension of gemm",
            ),
        ] {
            let e = ArgList::parse(bad, Workload::Gemm, &mut Workspaces::default()).unwrap_err();
            assert!(e.contains(want), "{bad}: {e}");
        }
    }

    /// A struct holding structs (`{{M, N, K, A, B, C}, {}, {}}`: a problem's sizes and
    /// pointers, then two empty policy structs) is built field by field, braces inside braces.
    #[test]
    fn braces_inside_braces_build_a_struct_of_structs_and_empty_ones() {
        let (list, sig) = ArgList::parse(
            "({{M, N, K, A, B, C}, {}, {}}, {})",
            Workload::Gemm,
            &mut Workspaces::default(),
        )
        .unwrap();
        assert_eq!(list.items.len(), 6);
        let buffers = Buffers::fp32(sig);
        assert_eq!(
            list.c_params(&buffers),
            "({{int M, int N, int K, float * A, float * B, float * C}, {}, {}}, {})"
        );
        let loose = |t: &str, n: &str| format!("::kernel_lab::loose<{t}>{{lab_{n}}}");
        assert_eq!(
            list.call(&buffers),
            format!(
                "{{{{{}, {}, {}, {}, {}, {}}}, {{}}, {{}}}}, {{}}",
                loose("int", "M"),
                loose("int", "N"),
                loose("int", "K"),
                loose("float *", "A"),
                loose("float *", "B"),
                loose("float *", "C")
            )
        );
        assert_eq!(
            list.sample_values(&buffers),
            vec![
                "::kernel_lab::fields<::kernel_lab::fields<::kernel_lab::loose<int>, \
                 ::kernel_lab::loose<int>, ::kernel_lab::loose<int>, \
                 ::kernel_lab::loose<float *>, ::kernel_lab::loose<float *>, \
                 ::kernel_lab::loose<float *>>, ::kernel_lab::fields<>, \
                 ::kernel_lab::fields<>>{}",
                "::kernel_lab::fields<>{}",
            ]
        );
        assert_eq!(
            list.struct_notes(),
            vec![
                "parameter 1 is a struct built from {{M, N, K, A, B, C}, {}, {}}",
                "parameter 2 is a struct built from {}",
            ]
        );
    }

    #[test]
    fn braces_give_a_struct_taken_by_value_from_its_fields() {
        let (list, sig) = ArgList::parse(
            "({A, B, C, alpha, zeros(64)}, {M, N, cdiv(K,2)}, K)",
            Workload::Gemm,
            &mut Workspaces::default(),
        )
        .unwrap();
        assert_eq!(sig.name, "gemm-blas");
        assert_eq!(
            list.items.len(),
            9,
            "the fields are the wrapper's parameters"
        );
        let fields = |r: std::ops::Range<usize>| Part::Struct(r.map(Part::Item).collect());
        assert_eq!(list.parts, vec![fields(0..5), fields(5..8), Part::Item(8)]);
        let buffers = Buffers::fp32(sig);
        assert_eq!(
            list.c_params(&buffers),
            "({float * A, float * B, float * C, float alpha, void * arg4}, \
             {int M, int N, int arg7}, int K)"
        );
        assert_eq!(
            list.wrapper_params(&buffers),
            "(float * lab_A, float * lab_B, float * lab_C, float lab_alpha, void * lab_arg4, \
             int lab_M, int lab_N, int lab_arg7, int lab_K)"
        );
        assert_eq!(
            list.call(&buffers),
            "{::kernel_lab::loose<float *>{lab_A}, ::kernel_lab::loose<float *>{lab_B}, \
             ::kernel_lab::loose<float *>{lab_C}, ::kernel_lab::loose<float>{lab_alpha}, \
             ::kernel_lab::workspace{lab_arg4}}, {::kernel_lab::loose<int>{lab_M}, \
             ::kernel_lab::loose<int>{lab_N}, ::kernel_lab::loose<int>{lab_arg7}}, \
             ::kernel_lab::loose<int>{lab_K}"
        );
        assert_eq!(
            list.sample_values(&buffers),
            vec![
                "::kernel_lab::fields<::kernel_lab::loose<float *>, ::kernel_lab::loose<float *>, \
                 ::kernel_lab::loose<float *>, ::kernel_lab::loose<float>, \
                 ::kernel_lab::workspace>{}",
                "::kernel_lab::fields<::kernel_lab::loose<int>, ::kernel_lab::loose<int>, \
                 ::kernel_lab::loose<int>>{}",
                "::kernel_lab::loose<int>{}",
            ]
        );
        assert_eq!(
            list.struct_notes(),
            vec![
                "parameter 1 is a struct built from {A, B, C, alpha, zeros(64)}",
                "parameter 2 is a struct built from {M, N, cdiv(K,2)}",
            ]
        );
        let shape = Shape::Gemm { m: 4, n: 6, k: 8 };
        let args = list.args(&shape, 132, &buffers).unwrap();
        assert_eq!(args.len(), 9);
        assert_eq!(args[7], Arg::I32(4), "cdiv(K,2)");
        for (text, error) in [
            (
                "({A, tmap(A, M, K, 64, 64)})",
                "a tensor map is not built into one",
            ),
            ("({A, , C})", "an empty field"),
            ("({A, Q})", "Q is neither a parameter of gemm"),
        ] {
            let e = ArgList::parse(text, Workload::Gemm, &mut Workspaces::default()).unwrap_err();
            assert!(e.contains(error), "{text}: {e}");
        }
    }

    #[test]
    fn zeros_passes_a_workspace_of_bytes_after_the_signatures_scratch() {
        let mut workspaces = Workspaces::default();
        let (list, sig) = ArgList::parse(
            "(Q, K, V, O, l, m, zeros(4*cdiv(S,64)), S, zeros(B*H*2))",
            Workload::Attention,
            &mut workspaces,
        )
        .unwrap();
        assert_eq!(sig.name, "attention-lm");
        let buffers = Buffers::fp32(sig);
        // A workspace is handed on as the pointer type the kernel declares.
        assert!(list.c_params(&buffers).contains("void * arg6"));
        let call = list.call(&buffers);
        assert!(
            call.contains(
                "::kernel_lab::elements<float>{lab_m}, ::kernel_lab::workspace{lab_arg6}, \
                 ::kernel_lab::loose<int>{lab_S}, ::kernel_lab::workspace{lab_arg8}"
            ),
            "{call}"
        );
        assert_eq!(list.sample_values(&buffers)[6], "::kernel_lab::workspace{}");
        let shape = Shape::Attention {
            b: 2,
            h: 3,
            s: 130,
            d: 16,
            causal: false,
        };
        let args = list.args(&shape, SIM_SMS, &buffers).unwrap();
        // attention-lm's own scratch is l and m (0 and 1): the workspaces come after.
        assert_eq!(
            (args[4], args[6], args[8]),
            (
                Arg::Ptr(Buf::Scratch(0)),
                Arg::Ptr(Buf::Scratch(2)),
                Arg::Ptr(Buf::Scratch(3))
            )
        );
        // 12 bytes and 12 bytes, each rounded up to 16 bytes: 4 words.
        assert_eq!(
            workspaces.at(&shape, SIM_SMS).unwrap(),
            vec![
                ("zeros(4*cdiv(S,64))".to_string(), 4, Fill::Zero),
                ("zeros(B*H*2)".to_string(), 4, Fill::Zero)
            ]
        );
        let mut empty = Workspaces::default();
        ArgList::parse("(A, B, C, M, N, K, zeros(M-M))", Workload::Gemm, &mut empty).unwrap();
        let e = empty.at(&Shape::gemm(8, 8, 8), SIM_SMS).unwrap_err();
        assert!(e.contains("zeros(M-M) = 0 bytes"), "{e}");
        let e = ArgList::parse(
            "(A, B, C, zeros(4*T))",
            Workload::Gemm,
            &mut Workspaces::default(),
        )
        .unwrap_err();
        assert!(e.contains("T is neither a parameter of gemm"), "{e}");
    }

    #[test]
    fn a_named_workspace_is_declared_once_and_passed_again_by_its_name() {
        let mut workspaces = Workspaces::default();
        let (partial, sig) = ArgList::parse(
            "(A, B, M, N, K, scratch(P, 4*3*M*N), zeros(4*M))",
            Workload::Gemm,
            &mut workspaces,
        )
        .unwrap();
        // A later launch's list finds it by its name, and declares its own after it.
        let (reduce, _) = ArgList::parse(
            "(P, C, M*N, 3, zeros(done, 16))",
            Workload::Gemm,
            &mut workspaces,
        )
        .unwrap();
        let buffers = Buffers::fp32(sig);
        let shape = Shape::gemm(5, 7, 9);
        assert_eq!(
            partial.args(&shape, SIM_SMS, &buffers).unwrap()[5],
            Arg::Ptr(Buf::Scratch(0))
        );
        let args = reduce.args(&shape, SIM_SMS, &buffers).unwrap();
        assert_eq!(
            (args[0], args[4]),
            (Arg::Ptr(Buf::Scratch(0)), Arg::Ptr(Buf::Scratch(2)))
        );
        assert_eq!(
            (reduce.item_text(0), reduce.item_text(4)),
            ("P".into(), "zeros(done, 16)".into())
        );
        // The wrapper's parameters by the workspaces' names, a second pass of one apart.
        let (twice, _) = ArgList::parse(
            "(scratch(P, 4), P, zeros(4*M), zeros(arg1, 4))",
            Workload::Gemm,
            &mut Workspaces::default(),
        )
        .unwrap();
        assert_eq!(
            twice.c_params(&buffers),
            "(void * P, void * P_1, void * arg2, void * arg3)"
        );
        // scratch() starts as NaN bytes, zeros() as zeros; 4*3*5*7 = 420 bytes, rounded up to
        // 432, are 108 words.
        assert_eq!(
            workspaces.at(&shape, SIM_SMS).unwrap(),
            vec![
                ("P".to_string(), 108, Fill::Nan),
                ("zeros(4*M)".to_string(), 8, Fill::Zero),
                ("done".to_string(), 4, Fill::Zero),
            ]
        );
        for (text, error) in [
            (
                "(scratch(P, 4), P, scratch(P, 8))",
                "P is declared already, by scratch(P, 4)",
            ),
            ("(zeros(M, 4))", "M is already a parameter or a dimension"),
            ("(zeros(A, 4))", "A is already a parameter or a dimension"),
            ("(zeros(2x, 4))", "\"2x\" is not a name"),
            ("(zeros(P, 4, 8))", "takes BYTES or NAME, BYTES"),
            ("(scratch(P, 4*T))", "T is neither a parameter of gemm"),
            ("(Q)", "Q is neither a parameter of gemm"),
            (
                "(P, scratch(P, 4))",
                "a workspace is passed by its name after zeros(P, BYTES) or scratch(P, BYTES) \
                 declares it, earlier in this list",
            ),
        ] {
            let e = ArgList::parse(text, Workload::Gemm, &mut Workspaces::default()).unwrap_err();
            assert!(e.contains(error), "{text}: {e}");
        }
    }

    #[test]
    fn every_workload_has_a_default_and_names_are_unique() {
        for w in Workload::ALL {
            match Signature::default_for(w) {
                Some(s) => assert_eq!(s.workload, w),
                None => assert!(w.is_network(), "{w} has no signature"),
            }
        }
        let mut names: Vec<_> = ALL.iter().map(|s| s.name).collect();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), ALL.len());
    }

    #[test]
    fn dims_inputs_and_scalars_follow_the_shape() {
        let s = Signature::named("gemm-blas").unwrap();
        let mut buffers = Buffers::fp32(s);
        let list = ArgList::of(s);
        let args = list.args(&Shape::gemm(3, 5, 7), SIM_SMS, &buffers).unwrap();
        assert_eq!(args[0], Arg::I32(3));
        assert_eq!(args[2], Arg::I32(7));
        assert_eq!(args[3], Arg::F32(1.0));
        assert_eq!(args[7], Arg::Ptr(Buf::Output));
        assert_eq!(
            list.c_params(&buffers),
            "(int M, int N, int K, float alpha, float * A, float * B, float beta, float * C)"
        );
        buffers.inputs = vec![kernel::Dtype::F16, kernel::Dtype::Bf16];
        buffers.beta = 0.5;
        assert_eq!(
            list.c_params(&buffers),
            "(int M, int N, int K, float alpha, half * A, __nv_bfloat16 * B, float beta, \
             float * C)"
        );
        assert_eq!(
            list.args(&Shape::gemm(3, 5, 7), SIM_SMS, &buffers).unwrap()[6],
            Arg::F32(0.5)
        );
        let a = Signature::named("attention").unwrap();
        let (alist, abuf) = (ArgList::of(a), Buffers::fp32(a));
        let shape = Shape::Attention {
            b: 1,
            h: 2,
            s: 9,
            d: 16,
            causal: true,
        };
        let args = alist.args(&shape, SIM_SMS, &abuf).unwrap();
        assert_eq!(args[8], Arg::F32(0.25));
        assert_eq!(args[9], Arg::I32(1));
        // `act` as the lab's linear rungs take it: 0 relu, 1 gelu, 2 none.
        let l = Signature::named("linear").unwrap();
        let (llist, lbuf) = (ArgList::of(l), Buffers::fp32(l));
        for (act, code) in [
            (kernel::Activation::Relu, 0),
            (kernel::Activation::Gelu, 1),
            (kernel::Activation::None, 2),
        ] {
            let shape = Shape::Linear {
                m: 3,
                n: 5,
                k: 7,
                act,
            };
            let args = llist.args(&shape, SIM_SMS, &lbuf).unwrap();
            assert_eq!(args.last(), Some(&Arg::I32(code)), "{act:?}");
        }
        // Every parameter of every signature resolves (no dimension name the shape lacks).
        for sig in ALL {
            let probe = sig.workload.probe_shape();
            let names: Vec<_> = probe.dims().iter().map(|(n, _)| *n).collect();
            for (_, p) in sig.params {
                if let Dim(d) = p {
                    assert!(names.contains(d), "{}: {d}", sig.name);
                }
            }
        }
    }
}
