//! Workloads and their shapes: what a kernel computes, how many FLOPs that takes and how many
//! bytes it must move at the least. Those two numbers place a run on the roofline.

use serde::{Deserialize, Serialize};
use std::fmt;

/// The problems the lab's ladders solve. Every kernel belongs to exactly one.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Workload {
    /// Row-major C[M,N] = A[M,K] * B[K,N].
    Gemm,
    /// Y[M,N] = act(X[M,K] * W[N,K]^T + b[N]), the fully connected layer.
    Linear,
    /// NCHW convolution, stride 1, no padding.
    Conv,
    /// softmax(Q K^T / sqrt(D)) V over B x H heads.
    Attention,
    /// The element-wise chain Y[M,N] = GELU(X[M,N] + b[N]) + R[M,N] (GELU with the tanh
    /// approximation): a transformer block's bias, activation and residual, DRAM-bound.
    Eltwise,
    /// The radial-basis expansion of distances d[n] with a cosine cutoff, as in the embedding
    /// of a molecular-dynamics network: out[n,k] = exp(-gamma (d_n - mu_k)^2) fc(d_n), see
    /// [`RBF_CUTOFF`].
    Rbf,
    /// Layer normalization of each row of X[M,N]: Y = (x - mean) / sqrt(var + eps) * gamma[N]
    /// + beta[N], biased variance and eps = [`LAYERNORM_EPS`], as PyTorch's `LayerNorm`.
    Layernorm,
    /// The softmax of each row of X[M,N], computed with the row's maximum subtracted.
    Softmax,
    /// ReLU then max pooling: y[B,C,H/P,W/P] = the maximum of max(x, 0) over each P x P window
    /// of x[B,C,H,W], stride P, no padding (a partial window at the edge is dropped).
    Pool,
    /// A small convolutional network, [`crate::network::cnn`]: conv -> ReLU -> pool 2 ->
    /// conv -> ReLU -> pool 4 -> FC 32 -> ReLU -> FC 10 -> softmax.
    Cnn,
    /// One pre-LayerNorm transformer encoder block, [`crate::network::encoder`].
    Encoder,
    /// The sum of a vector, y = x[0] + ... + x[N-1]: every element read once, one number
    /// written; the classic parallel reduction, DRAM-bound.
    Reduce,
    /// The transpose of a matrix, Y[N,M] = X[M,N]^T: no arithmetic at all, every element read
    /// once and written once; the classic lesson in coalescing and shared-memory banks.
    Transpose,
}

impl Workload {
    pub const ALL: [Workload; 13] = [
        Self::Gemm,
        Self::Linear,
        Self::Conv,
        Self::Attention,
        Self::Eltwise,
        Self::Rbf,
        Self::Layernorm,
        Self::Softmax,
        Self::Pool,
        Self::Cnn,
        Self::Encoder,
        Self::Reduce,
        Self::Transpose,
    ];

    /// Whether this workload does no arithmetic, only moves data (the transpose): its speed
    /// is bytes per second, and it has no place on a roofline.
    pub fn computes_nothing(self) -> bool {
        self == Self::Transpose
    }

    /// Whether every shape of this workload asks a few FLOPs of each byte it must move (the
    /// transpose none), fewer than any CPU's or GPU's ridge point: its speed is the bandwidth
    /// it reaches, and its tables and charts count it in bytes per second.
    pub fn memory_bound(self) -> bool {
        matches!(
            self,
            Self::Eltwise
                | Self::Rbf
                | Self::Layernorm
                | Self::Softmax
                | Self::Pool
                | Self::Reduce
                | Self::Transpose
        )
    }

    /// Whether this workload is a whole network built from other workloads' kernels.
    pub fn is_network(self) -> bool {
        matches!(self, Self::Cnn | Self::Encoder)
    }

    pub fn name(self) -> &'static str {
        match self {
            Self::Gemm => "gemm",
            Self::Linear => "linear",
            Self::Conv => "conv",
            Self::Attention => "attention",
            Self::Eltwise => "eltwise",
            Self::Rbf => "rbf",
            Self::Layernorm => "layernorm",
            Self::Softmax => "softmax",
            Self::Pool => "pool",
            Self::Cnn => "cnn",
            Self::Encoder => "encoder",
            Self::Reduce => "reduce",
            Self::Transpose => "transpose",
        }
    }

    /// What the workload is, in words, for titles: "Element-wise chain", not "ELTWISE".
    pub fn title(self) -> &'static str {
        match self {
            Self::Gemm => "GEMM",
            Self::Linear => "Linear layer",
            Self::Conv => "Convolution",
            Self::Attention => "Attention",
            Self::Eltwise => "Element-wise chain",
            Self::Rbf => "Radial basis",
            Self::Layernorm => "Layer normalization",
            Self::Softmax => "Softmax",
            Self::Pool => "ReLU and max pooling",
            Self::Cnn => "CNN",
            Self::Encoder => "Encoder block",
            Self::Reduce => "Sum of a vector",
            Self::Transpose => "Transpose",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|w| w.name() == s)
    }

    /// A small shape of this workload, for asking a kernel whether it has a plan at all.
    pub fn probe_shape(self) -> Shape {
        match self {
            Self::Gemm => Shape::square_gemm(64),
            Self::Linear => Shape::Linear {
                m: 64,
                n: 64,
                k: 64,
                act: Activation::Relu,
            },
            Self::Conv => Shape::Conv {
                b: 1,
                c: 4,
                m: 8,
                h: 16,
                w: 16,
                k: 3,
            },
            Self::Attention => Shape::Attention {
                b: 1,
                h: 2,
                s: 64,
                d: 64,
                causal: false,
            },
            Self::Eltwise => Shape::Eltwise { m: 64, n: 64 },
            Self::Rbf => Shape::Rbf { n: 64, k: 16 },
            Self::Layernorm => Shape::Layernorm { m: 64, n: 64 },
            Self::Softmax => Shape::Softmax { m: 64, n: 64 },
            Self::Pool => Shape::Pool {
                b: 1,
                c: 4,
                h: 16,
                w: 16,
                p: 2,
            },
            Self::Cnn => Shape::Cnn { b: 2 },
            Self::Encoder => Shape::Encoder {
                b: 1,
                s: 64,
                e: 128,
                h: 2,
            },
            Self::Reduce => Shape::Reduce { n: 4096 },
            Self::Transpose => Shape::Transpose { m: 64, n: 64 },
        }
    }
}

impl fmt::Display for Workload {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Activation applied in a linear layer's epilogue.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Activation {
    Relu,
    /// The tanh approximation, as in PyTorch's `gelu(approximate="tanh")`.
    Gelu,
    /// None: the layer's output is `X W^T + b` (a network's last layer, its logits).
    None,
}

impl Activation {
    pub fn name(self) -> &'static str {
        match self {
            Self::Relu => "relu",
            Self::Gelu => "gelu",
            Self::None => "none",
        }
    }

    /// The activation in f64, for references.
    pub fn apply_f64(self, x: f64) -> f64 {
        match self {
            Self::Relu => x.max(0.0),
            Self::Gelu => {
                let c = (2.0 / std::f64::consts::PI).sqrt();
                0.5 * x * (1.0 + (c * (x + 0.044715 * x * x * x)).tanh())
            }
            Self::None => x,
        }
    }

    /// The activation in f32, as the kernels compute it.
    pub fn apply_f32(self, x: f32) -> f32 {
        match self {
            Self::Relu => x.max(0.0),
            Self::Gelu => {
                const C: f32 = 0.797_884_6; // sqrt(2/pi)
                0.5 * x * (1.0 + (C * (x + 0.044715 * x * x * x)).tanh())
            }
            Self::None => x,
        }
    }
}

/// One problem instance. Dimensions follow the names used in the kernels' sources.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(tag = "workload", rename_all = "lowercase")]
pub enum Shape {
    Gemm {
        m: usize,
        n: usize,
        k: usize,
    },
    Linear {
        m: usize,
        n: usize,
        k: usize,
        act: Activation,
    },
    Conv {
        /// batch
        b: usize,
        /// input channels
        c: usize,
        /// output channels (feature maps)
        m: usize,
        h: usize,
        w: usize,
        /// filter size (K x K)
        k: usize,
    },
    Attention {
        b: usize,
        h: usize,
        s: usize,
        d: usize,
        causal: bool,
    },
    /// Y[M,N] = GELU(X[M,N] + b[N]) + R[M,N], GELU with the tanh approximation.
    Eltwise {
        m: usize,
        n: usize,
    },
    /// out[n,k] over n distances and k centres; see [`RBF_CUTOFF`].
    Rbf {
        n: usize,
        k: usize,
    },
    /// Y[M,N] = LayerNorm(X[M,N]) with gamma[N] and beta[N]: M rows of N features.
    Layernorm {
        m: usize,
        n: usize,
    },
    /// Y[M,N] = the softmax of each row of X[M,N].
    Softmax {
        m: usize,
        n: usize,
    },
    /// y[B,C,H/P,W/P] = max over each P x P window of max(x[B,C,H,W], 0).
    Pool {
        b: usize,
        /// channels
        c: usize,
        h: usize,
        w: usize,
        /// window size and stride (P x P, stride P)
        p: usize,
    },
    /// The small convolutional network on a batch of `b` 86 x 86 images; its layers are
    /// fixed ([`crate::network::cnn`]).
    Cnn {
        b: usize,
    },
    /// A transformer encoder block: batch `b`, sequence `s`, hidden `e`, `h` heads of
    /// `e / h` features, FFN of `4 e` ([`crate::network::encoder`]).
    Encoder {
        b: usize,
        s: usize,
        e: usize,
        h: usize,
    },
    /// y[1] = the sum of x[N].
    Reduce {
        n: usize,
    },
    /// Y[N,M] = X[M,N]^T.
    Transpose {
        m: usize,
        n: usize,
    },
}

/// A named tensor of a workload, with its dimensions (row-major, last fastest).
#[derive(Clone, Debug, PartialEq)]
pub struct TensorSpec {
    pub name: &'static str,
    pub dims: Vec<usize>,
    /// Random inputs are drawn uniformly in [-scale, scale]: 1 for data, 1 / sqrt(fan-in)
    /// for a network's weights, so that activations keep their size from layer to layer.
    pub scale: f32,
    /// Drawn in [0, scale] instead: the terms of a sum. Terms of both signs cancel, leaving
    /// a sum near 0 whose relative error measures the cancellation, not the kernel; terms of
    /// one sign make the sum's relative error the rounding of its additions.
    pub positive: bool,
}

/// An output a kernel lays out otherwise than the workload (C column-major, O as
/// `[B][S][H][D]`): a failure names an element by the indices the kernel writes it at, each
/// with its name, so that `C[column 0, row 99]` is not read as row 0.
#[derive(Clone, Debug, PartialEq)]
pub struct OutputLayout {
    /// The dimensions the kernel indexes the output by, outermost first, with their names.
    pub axes: Vec<(&'static str, usize)>,
    /// How the order is said: `column-major`, `[B][S][H][D]`.
    pub order: &'static str,
}

impl TensorSpec {
    pub(crate) fn new(name: &'static str, dims: &[usize]) -> Self {
        Self {
            name,
            dims: dims.to_vec(),
            scale: 1.0,
            positive: false,
        }
    }

    /// Data drawn in [0, 1]: see [`TensorSpec::positive`].
    pub(crate) fn positive(name: &'static str, dims: &[usize]) -> Self {
        Self {
            positive: true,
            ..Self::new(name, dims)
        }
    }

    /// A uniform draw `u` in [-1, 1] moved into this tensor's range.
    pub fn draw(&self, u: f32) -> f32 {
        let u = if self.positive { u.abs() } else { u };
        u * self.scale
    }

    /// A weight read by `fan_in` products per output: drawn in [-1/sqrt(fan_in), ..].
    pub(crate) fn weight(name: &'static str, dims: &[usize], fan_in: usize) -> Self {
        Self {
            scale: 1.0 / (fan_in as f32).sqrt(),
            ..Self::new(name, dims)
        }
    }

    pub fn len(&self) -> usize {
        self.dims.iter().product()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Why a shape cannot be run at all (independent of any kernel).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ShapeError {
    #[error("{shape}: dimension {dim} is 0; every dimension must be at least 1")]
    Zero { shape: String, dim: &'static str },
    #[error("{shape}: dimension {dim} = {value} is above the limit of {limit}")]
    TooLarge {
        shape: String,
        dim: &'static str,
        value: usize,
        limit: usize,
    },
    #[error(
        "{shape}: tensor {tensor} would hold {elements} elements; kernels index with 32-bit integers, so the limit is {limit}"
    )]
    TensorTooLarge {
        shape: String,
        tensor: &'static str,
        /// Exact: every dimension is at most [`MAX_DIM`], so a tensor's count fits 128 bits.
        elements: u128,
        limit: usize,
    },
    #[error("{shape}: the filter ({k}x{k}) is larger than the image ({h}x{w})")]
    FilterTooLarge {
        shape: String,
        k: usize,
        h: usize,
        w: usize,
    },
    #[error(
        "{shape}: the pooling window ({p}x{p}) is larger than the image ({h}x{w}); P must be at most H and W"
    )]
    WindowTooLarge {
        shape: String,
        p: usize,
        h: usize,
        w: usize,
    },
    #[error("{shape}: the hidden size E = {e} is not a multiple of the {h} heads")]
    HeadsDontDivide { shape: String, e: usize, h: usize },
}

/// FLOPs per output element of the element-wise chain: the bias add (1); the tanh GELU
/// 0.5 x (1 + tanh(c (x + 0.044715 x^3))) as 9 with tanh counted as one (x^3: 2 multiplies;
/// the scale by 0.044715, the add of x, the scale by c, tanh, the add of 1, the multiplies by
/// x and by 0.5); the residual add (1).
pub const ELTWISE_FLOPS_PER_ELEMENT: f64 = 11.0;

/// The cutoff radius r_c of the radial-basis workload, in the units of its inputs. The
/// harness's random inputs are uniform in [-1, 1], so r_c = 0.5 puts a quarter of them beyond
/// the cutoff (output 0) and the rest inside, where the cosine envelope
/// fc(d) = 0.5 (cos(pi d / r_c) + 1) applies. The formula is applied as written to negative
/// inputs as well.
pub const RBF_CUTOFF: f64 = 0.5;
/// The width gamma of the Gaussians exp(-gamma (d - mu_k)^2), in 1 / (input unit)^2. At the
/// largest |d - mu_k| of the inputs, 1.5, the Gaussian is exp(-22.5), still a normal f32: no
/// output underflows where the f64 reference does not.
pub const RBF_GAMMA: f64 = 10.0;
/// FLOPs per output of the radial-basis expansion: d - mu, the square, the scale by -gamma,
/// exp (counted as one), the product with the cutoff; computing mu_k = k * step is one more.
pub const RBF_FLOPS_PER_OUTPUT: f64 = 6.0;
/// FLOPs per distance of the cosine cutoff: the scale by pi / r_c, cos (as one), the add of
/// 1, the scale by 0.5; the comparison with r_c is not counted.
pub const RBF_FLOPS_PER_DISTANCE: f64 = 4.0;

/// The epsilon added to the variance by the layer normalization, PyTorch's default.
pub const LAYERNORM_EPS: f64 = 1e-5;
/// FLOPs per element of the layer normalization: the add into the mean's sum (1); the
/// subtraction of the mean, the square and the add into the variance's sum (3); the
/// normalization (x - mean) * rstd * gamma + beta (4).
pub const LAYERNORM_FLOPS_PER_ELEMENT: f64 = 8.0;
/// FLOPs per row of the layer normalization: the mean's and the variance's divisions by N, the
/// add of eps and the reciprocal square root (counted as one).
pub const LAYERNORM_FLOPS_PER_ROW: f64 = 4.0;
/// FLOPs per element of the softmax: the comparison for the maximum (1), the subtraction of
/// the maximum (1), exp (counted as one), the add into the sum (1) and the scale by 1 / sum
/// (1). A rung that computes exp twice per element (once for the sum, once for the output)
/// does more than this count; the count is the definition's.
pub const SOFTMAX_FLOPS_PER_ELEMENT: f64 = 5.0;
/// FLOPs per row of the softmax: the reciprocal of the sum.
pub const SOFTMAX_FLOPS_PER_ROW: f64 = 1.0;

/// Centre mu_k of the radial-basis workload: K centres evenly spaced over [0, r_c], the first
/// at 0 and the last at r_c (a single centre sits at 0).
pub fn rbf_center(k: usize, centres: usize) -> f64 {
    if centres > 1 {
        k as f64 * RBF_CUTOFF / (centres - 1) as f64
    } else {
        0.0
    }
}

/// out[n,k] of the radial-basis workload in f64, for references.
pub fn rbf_f64(d: f64, k: usize, centres: usize) -> f64 {
    if d >= RBF_CUTOFF {
        return 0.0;
    }
    let fc = 0.5 * ((std::f64::consts::PI * d / RBF_CUTOFF).cos() + 1.0);
    let x = d - rbf_center(k, centres);
    (-RBF_GAMMA * x * x).exp() * fc
}

/// Largest single dimension accepted (a sanity bound against typos such as 40960000).
pub const MAX_DIM: usize = 1 << 17;
/// Largest tensor accepted: kernels index with `int`.
pub const MAX_TENSOR_ELEMENTS: usize = i32::MAX as usize;

impl Shape {
    pub fn gemm(m: usize, n: usize, k: usize) -> Self {
        Self::Gemm { m, n, k }
    }

    pub fn square_gemm(n: usize) -> Self {
        Self::Gemm { m: n, n, k: n }
    }

    pub fn workload(&self) -> Workload {
        match self {
            Self::Gemm { .. } => Workload::Gemm,
            Self::Linear { .. } => Workload::Linear,
            Self::Conv { .. } => Workload::Conv,
            Self::Attention { .. } => Workload::Attention,
            Self::Eltwise { .. } => Workload::Eltwise,
            Self::Rbf { .. } => Workload::Rbf,
            Self::Layernorm { .. } => Workload::Layernorm,
            Self::Softmax { .. } => Workload::Softmax,
            Self::Pool { .. } => Workload::Pool,
            Self::Cnn { .. } => Workload::Cnn,
            Self::Encoder { .. } => Workload::Encoder,
            Self::Reduce { .. } => Workload::Reduce,
            Self::Transpose { .. } => Workload::Transpose,
        }
    }

    /// Named dimensions, in the order of [`Shape::label`].
    pub fn dims(&self) -> Vec<(&'static str, usize)> {
        match *self {
            Self::Gemm { m, n, k } | Self::Linear { m, n, k, .. } => {
                vec![("M", m), ("N", n), ("K", k)]
            }
            Self::Conv { b, c, m, h, w, k } => {
                vec![("B", b), ("C", c), ("M", m), ("H", h), ("W", w), ("K", k)]
            }
            Self::Attention { b, h, s, d, .. } => vec![("B", b), ("H", h), ("S", s), ("D", d)],
            Self::Eltwise { m, n }
            | Self::Layernorm { m, n }
            | Self::Softmax { m, n }
            | Self::Transpose { m, n } => vec![("M", m), ("N", n)],
            Self::Rbf { n, k } => vec![("n", n), ("K", k)],
            Self::Pool { b, c, h, w, p } => {
                vec![("B", b), ("C", c), ("H", h), ("W", w), ("P", p)]
            }
            Self::Cnn { b } => vec![("B", b)],
            Self::Encoder { b, s, e, h } => vec![("B", b), ("S", s), ("E", e), ("H", h)],
            Self::Reduce { n } => vec![("N", n)],
        }
    }

    /// Output spatial size of a convolution (valid, stride 1).
    pub fn conv_out(h: usize, w: usize, k: usize) -> (usize, usize) {
        (h + 1 - k, w + 1 - k)
    }

    /// Output spatial size of a P x P max pooling with stride P (a partial window is dropped).
    pub fn pool_out(h: usize, w: usize, p: usize) -> (usize, usize) {
        (h / p, w / p)
    }

    /// The inputs, in the order kernels take them.
    pub fn inputs(&self) -> Vec<TensorSpec> {
        match *self {
            Self::Gemm { m, n, k } => {
                vec![TensorSpec::new("A", &[m, k]), TensorSpec::new("B", &[k, n])]
            }
            Self::Linear { m, n, k, .. } => vec![
                TensorSpec::new("X", &[m, k]),
                TensorSpec::new("W", &[n, k]),
                TensorSpec::new("bias", &[n]),
            ],
            Self::Conv { b, c, m, h, w, k } => vec![
                TensorSpec::new("x", &[b, c, h, w]),
                TensorSpec::new("filter", &[m, c, k, k]),
            ],
            Self::Attention { b, h, s, d, .. } => vec![
                TensorSpec::new("Q", &[b, h, s, d]),
                TensorSpec::new("K", &[b, h, s, d]),
                TensorSpec::new("V", &[b, h, s, d]),
            ],
            Self::Eltwise { m, n } => vec![
                TensorSpec::new("X", &[m, n]),
                TensorSpec::new("bias", &[n]),
                TensorSpec::new("R", &[m, n]),
            ],
            Self::Rbf { n, .. } => vec![TensorSpec::new("d", &[n])],
            Self::Layernorm { m, n } => vec![
                TensorSpec::new("X", &[m, n]),
                TensorSpec::new("gamma", &[n]),
                TensorSpec::new("beta", &[n]),
            ],
            Self::Softmax { m, n } => vec![TensorSpec::new("X", &[m, n])],
            Self::Pool { b, c, h, w, .. } => vec![TensorSpec::new("x", &[b, c, h, w])],
            Self::Cnn { .. } | Self::Encoder { .. } => crate::network::inputs(self),
            Self::Reduce { n } => vec![TensorSpec::positive("x", &[n])],
            Self::Transpose { m, n } => vec![TensorSpec::new("X", &[m, n])],
        }
    }

    pub fn output(&self) -> TensorSpec {
        match *self {
            Self::Gemm { m, n, .. } => TensorSpec::new("C", &[m, n]),
            Self::Linear { m, n, .. } => TensorSpec::new("Y", &[m, n]),
            Self::Conv { b, m, h, w, k, .. } => {
                let (ho, wo) = Self::conv_out(h, w, k);
                TensorSpec::new("y", &[b, m, ho, wo])
            }
            Self::Attention { b, h, s, d, .. } => TensorSpec::new("O", &[b, h, s, d]),
            Self::Eltwise { m, n } => TensorSpec::new("Y", &[m, n]),
            Self::Rbf { n, k } => TensorSpec::new("out", &[n, k]),
            Self::Layernorm { m, n } | Self::Softmax { m, n } => TensorSpec::new("Y", &[m, n]),
            Self::Pool { b, c, h, w, p } => {
                let (ho, wo) = Self::pool_out(h, w, p);
                TensorSpec::new("y", &[b, c, ho, wo])
            }
            Self::Cnn { b } => TensorSpec::new("probs", &[b, crate::network::cnn::CLASSES]),
            Self::Encoder { b, s, e, .. } => TensorSpec::new("y", &[b, s, e]),
            Self::Reduce { .. } => TensorSpec::new("y", &[1]),
            Self::Transpose { m, n } => TensorSpec::new("Y", &[n, m]),
        }
    }

    /// The shape without its causal mask (other shapes as they are): what an attention kernel
    /// computes that computes every score and masks those past the diagonal.
    pub fn unmasked(&self) -> Shape {
        match *self {
            Self::Attention { b, h, s, d, .. } => Self::Attention {
                b,
                h,
                s,
                d,
                causal: false,
            },
            other => other,
        }
    }

    /// Floating-point operations of one run (an FMA counts as two). The element-wise chain
    /// counts [`ELTWISE_FLOPS_PER_ELEMENT`] per output element; the layer normalization and the
    /// softmax count their per-element and per-row constants (`LAYERNORM_FLOPS_PER_ELEMENT`,
    /// `SOFTMAX_FLOPS_PER_ELEMENT` and the `_PER_ROW` ones); the pooling counts a comparison as
    /// one FLOP, P x P per output: P x P - 1 to take the window's maximum and one against 0
    /// (the ReLU applied once, to the maximum, as max(relu(x)) = relu(max(x)) allows); the
    /// sum counts an addition per element (each added once, to a sum that starts at 0); the
    /// transpose none: its speed is bytes per second alone.
    pub fn flops(&self) -> f64 {
        match *self {
            Self::Gemm { m, n, k } => 2.0 * m as f64 * n as f64 * k as f64,
            Self::Linear { m, n, k, .. } => {
                2.0 * m as f64 * n as f64 * k as f64 + 2.0 * m as f64 * n as f64
            }
            Self::Conv { b, c, m, h, w, k } => {
                let (ho, wo) = Self::conv_out(h, w, k);
                2.0 * (b * m * c * k * k) as f64 * (ho * wo) as f64
            }
            Self::Attention { b, h, s, d, causal } => {
                let full = 4.0 * (b * h) as f64 * (s as f64).powi(2) * d as f64;
                if causal { full / 2.0 } else { full }
            }
            Self::Eltwise { m, n } => ELTWISE_FLOPS_PER_ELEMENT * m as f64 * n as f64,
            Self::Rbf { n, k } => {
                RBF_FLOPS_PER_OUTPUT * n as f64 * k as f64 + RBF_FLOPS_PER_DISTANCE * n as f64
            }
            Self::Layernorm { m, n } => {
                LAYERNORM_FLOPS_PER_ELEMENT * m as f64 * n as f64
                    + LAYERNORM_FLOPS_PER_ROW * m as f64
            }
            Self::Softmax { m, n } => {
                SOFTMAX_FLOPS_PER_ELEMENT * m as f64 * n as f64 + SOFTMAX_FLOPS_PER_ROW * m as f64
            }
            Self::Pool { p, .. } => (p * p) as f64 * self.output().len() as f64,
            Self::Cnn { .. } | Self::Encoder { .. } => crate::network::flops(self),
            Self::Reduce { n } => n as f64,
            Self::Transpose { .. } => 0.0,
        }
    }

    /// The fewest bytes a run can move: each input read once, the output written once. For the
    /// element-wise chain that is X, R and Y (3 x M x N elements) plus the N-element bias: the
    /// chain is DRAM-bound, and every intermediate written and read back adds 2 x M x N. For
    /// the radial-basis expansion it is d (n) and out (n x K): the output's write dominates.
    /// The layer normalization reads X and the two N-element vectors and writes Y; the softmax
    /// reads X and writes Y: each row is read from DRAM once, so a rung that passes over a
    /// row several times must find it in cache for the later passes. The pooling reads only
    /// the elements its windows cover (B x C x (H/P x P) x (W/P x P): a partial window at the
    /// right or bottom edge is dropped) and writes y.
    pub fn min_bytes(&self, element_bytes: usize) -> f64 {
        let elements: usize = match *self {
            Self::Pool { b, c, h, w, p } => {
                let (ho, wo) = Self::pool_out(h, w, p);
                b * c * (ho * p) * (wo * p) + self.output().len()
            }
            _ => self.inputs().iter().map(TensorSpec::len).sum::<usize>() + self.output().len(),
        };
        (elements * element_bytes) as f64
    }

    /// Which of two shapes of a workload is the larger: by FLOPs, then (for a workload that
    /// computes nothing, or equal FLOPs) by the bytes it must move.
    pub fn cmp_size(&self, other: &Shape) -> std::cmp::Ordering {
        self.flops()
            .total_cmp(&other.flops())
            .then(self.min_bytes(1).total_cmp(&other.min_bytes(1)))
    }

    /// `4096x4096x4096`-style label, dimensions in [`Shape::dims`] order.
    pub fn label(&self) -> String {
        let dims = self
            .dims()
            .iter()
            .map(|(_, v)| v.to_string())
            .collect::<Vec<_>>()
            .join("x");
        match self {
            Self::Linear { act, .. } => format!("{dims}-{}", act.name()),
            Self::Attention { causal: true, .. } => format!("{dims}-causal"),
            _ => dims,
        }
    }

    /// The largest value of one dimension: [`MAX_DIM`], so that a product of dimensions fits
    /// 128 bits; a vector's single dimension is bounded by [`MAX_TENSOR_ELEMENTS`] alone.
    fn max_dim(&self) -> usize {
        match self {
            Self::Reduce { .. } => MAX_TENSOR_ELEMENTS,
            _ => MAX_DIM,
        }
    }

    /// Refuses shapes no kernel should be asked to run: zeros, absurd sizes, overflowing tensors.
    pub fn validate(&self) -> Result<(), ShapeError> {
        let shape = format!("{} {}", self.workload(), self.label());
        for (dim, value) in self.dims() {
            if value == 0 {
                return Err(ShapeError::Zero { shape, dim });
            }
            if value > self.max_dim() {
                return Err(ShapeError::TooLarge {
                    shape,
                    dim,
                    value,
                    limit: self.max_dim(),
                });
            }
        }
        if let Self::Conv { h, w, k, .. } = *self
            && (k > h || k > w)
        {
            return Err(ShapeError::FilterTooLarge { shape, k, h, w });
        }
        if let Self::Pool { h, w, p, .. } = *self
            && (p > h || p > w)
        {
            return Err(ShapeError::WindowTooLarge { shape, p, h, w });
        }
        if let Self::Encoder { e, h, .. } = *self
            && e % h != 0
        {
            return Err(ShapeError::HeadsDontDivide { shape, e, h });
        }
        let inner = match self {
            Self::Cnn { .. } | Self::Encoder { .. } => crate::network::inner_tensors(self),
            _ => Vec::new(),
        };
        let all = self
            .inputs()
            .into_iter()
            .chain([self.output()])
            .chain(inner);
        for t in all {
            let elements = t
                .dims
                .iter()
                .try_fold(1u128, |acc, &d| acc.checked_mul(d as u128))
                .unwrap_or(u128::MAX);
            if elements > MAX_TENSOR_ELEMENTS as u128 {
                return Err(ShapeError::TensorTooLarge {
                    shape,
                    tensor: t.name,
                    elements,
                    limit: MAX_TENSOR_ELEMENTS,
                });
            }
        }
        Ok(())
    }
}

/// Why a shape string did not parse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("cannot read {text:?} as a shape of {workload}: expected {expected}")]
pub struct ShapeParseError {
    pub text: String,
    pub workload: Workload,
    pub expected: &'static str,
}

impl Shape {
    /// The shape syntax of each workload, for messages and docs.
    pub fn syntax(workload: Workload) -> &'static str {
        match workload {
            Workload::Gemm => "N (square) or MxNxK, e.g. 4096 or 1024x2048x784",
            Workload::Linear => "MxNxK-act with act relu, gelu or none, e.g. 1024x2048x784-relu",
            Workload::Conv => "BxCxMxHxWxK, e.g. 100x1x4x86x86x7",
            Workload::Attention => "BxHxSxD, optionally -causal, e.g. 4x16x1024x64-causal",
            Workload::Eltwise => "MxN (rows x features, any N), e.g. 8192x4096",
            Workload::Rbf => "nxK (distances x centres), e.g. 1000000x64",
            Workload::Layernorm => "MxN (rows x features, any N), e.g. 8192x1280",
            Workload::Softmax => "MxN (rows x columns, any N), e.g. 8192x1280",
            Workload::Pool => {
                "BxCxHxWxP (window P x P, stride P, P <= H and W), e.g. 10000x4x80x80x2"
            }
            Workload::Cnn => "B (batch of 86x86 images), e.g. 10000",
            Workload::Encoder => {
                "BxSxExH (batch, sequence, hidden, heads; E % H == 0), e.g. 8x1024x1280x20"
            }
            Workload::Reduce => "N (elements summed), e.g. 16777216",
            Workload::Transpose => "MxN (rows x columns of X; Y is NxM), e.g. 8192x8192",
        }
    }

    /// Parses the [`Shape::label`] syntax of `workload` (a bare N is a square GEMM).
    pub fn parse(workload: Workload, text: &str) -> Result<Self, ShapeParseError> {
        let err = || ShapeParseError {
            text: text.to_string(),
            workload,
            expected: Self::syntax(workload),
        };
        let t = text.trim().to_ascii_lowercase();
        let (dims, suffix) = match t.split_once('-') {
            Some((d, s)) => (d.to_string(), Some(s.to_string())),
            None => (t.clone(), None),
        };
        let nums: Vec<usize> = dims
            .split('x')
            .map(|p| p.trim().parse::<usize>())
            .collect::<Result<_, _>>()
            .map_err(|_| err())?;
        let shape = match (workload, nums.as_slice(), suffix.as_deref()) {
            (Workload::Gemm, [n], None) => Self::square_gemm(*n),
            (Workload::Gemm, [m, n, k], None) => Self::gemm(*m, *n, *k),
            (Workload::Linear, [m, n, k], Some(act)) => Self::Linear {
                m: *m,
                n: *n,
                k: *k,
                act: match act {
                    "relu" => Activation::Relu,
                    "gelu" => Activation::Gelu,
                    "none" => Activation::None,
                    _ => return Err(err()),
                },
            },
            (Workload::Conv, [b, c, m, h, w, k], None) => Self::Conv {
                b: *b,
                c: *c,
                m: *m,
                h: *h,
                w: *w,
                k: *k,
            },
            (Workload::Attention, [b, h, s, d], suffix @ (None | Some("causal"))) => {
                Self::Attention {
                    b: *b,
                    h: *h,
                    s: *s,
                    d: *d,
                    causal: suffix.is_some(),
                }
            }
            (Workload::Eltwise, [m, n], None) => Self::Eltwise { m: *m, n: *n },
            (Workload::Rbf, [n, k], None) => Self::Rbf { n: *n, k: *k },
            (Workload::Layernorm, [m, n], None) => Self::Layernorm { m: *m, n: *n },
            (Workload::Softmax, [m, n], None) => Self::Softmax { m: *m, n: *n },
            (Workload::Pool, [b, c, h, w, p], None) => Self::Pool {
                b: *b,
                c: *c,
                h: *h,
                w: *w,
                p: *p,
            },
            (Workload::Cnn, [b], None) => Self::Cnn { b: *b },
            (Workload::Encoder, [b, s, e, h], None) => Self::Encoder {
                b: *b,
                s: *s,
                e: *e,
                h: *h,
            },
            (Workload::Reduce, [n], None) => Self::Reduce { n: *n },
            (Workload::Transpose, [m, n], None) => Self::Transpose { m: *m, n: *n },
            _ => return Err(err()),
        };
        Ok(shape)
    }
}

impl fmt::Display for Shape {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}", self.workload(), self.label())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gemm_flops_and_bytes_follow_the_model() {
        let s = Shape::gemm(2, 3, 4);
        assert_eq!(s.flops(), 48.0);
        assert_eq!(s.min_bytes(4), ((8 + 12 + 6) * 4) as f64);
        assert_eq!(s.label(), "2x3x4");
    }

    #[test]
    fn conv_output_is_valid_convolution() {
        let s = Shape::Conv {
            b: 2,
            c: 4,
            m: 16,
            h: 40,
            w: 40,
            k: 7,
        };
        assert_eq!(s.output().dims, vec![2, 16, 34, 34]);
        assert_eq!(s.flops(), 2.0 * (2 * 16 * 4 * 49) as f64 * (34 * 34) as f64);
    }

    #[test]
    fn causal_attention_counts_half() {
        let full = Shape::Attention {
            b: 1,
            h: 2,
            s: 64,
            d: 32,
            causal: false,
        };
        let causal = Shape::Attention {
            b: 1,
            h: 2,
            s: 64,
            d: 32,
            causal: true,
        };
        assert_eq!(causal.flops() * 2.0, full.flops());
    }

    #[test]
    fn labels_parse_back() {
        let shapes = [
            Shape::gemm(17, 33, 65),
            Shape::Linear {
                m: 1024,
                n: 2048,
                k: 784,
                act: Activation::Gelu,
            },
            Shape::Conv {
                b: 100,
                c: 1,
                m: 4,
                h: 86,
                w: 86,
                k: 7,
            },
            Shape::Attention {
                b: 2,
                h: 4,
                s: 128,
                d: 64,
                causal: true,
            },
            Shape::Attention {
                b: 2,
                h: 4,
                s: 128,
                d: 64,
                causal: false,
            },
        ];
        for s in shapes {
            assert_eq!(Shape::parse(s.workload(), &s.label()), Ok(s));
        }
        assert_eq!(
            Shape::parse(Workload::Gemm, "512"),
            Ok(Shape::square_gemm(512))
        );
        let e = Shape::parse(Workload::Linear, "4x4x4-tanh").unwrap_err();
        assert!(e.to_string().contains("relu, gelu or none"), "{e}");
        assert!(Shape::parse(Workload::Gemm, "-3").is_err());
        assert!(Shape::parse(Workload::Gemm, "4x4").is_err());
    }

    #[test]
    fn eltwise_shapes_parse_and_follow_the_byte_model() {
        let s = Shape::parse(Workload::Eltwise, "37x130").unwrap();
        assert_eq!(s, Shape::Eltwise { m: 37, n: 130 });
        assert_eq!(Shape::parse(s.workload(), &s.label()), Ok(s));
        // X, R and Y once each, plus the bias: 3 x M x N + N elements.
        assert_eq!(s.min_bytes(4), ((3 * 37 * 130 + 130) * 4) as f64);
        assert_eq!(s.flops(), ELTWISE_FLOPS_PER_ELEMENT * (37 * 130) as f64);
        for bad in ["37", "37x130x4", "37x130-gelu", "37xN"] {
            let e = Shape::parse(Workload::Eltwise, bad).unwrap_err();
            assert!(e.to_string().contains("MxN"), "{bad}: {e}");
        }
        let zero = Shape::Eltwise { m: 4, n: 0 }.validate().unwrap_err();
        assert!(zero.to_string().contains("dimension N is 0"), "{zero}");
    }

    #[test]
    fn a_tensor_past_64_bits_of_elements_is_counted_exactly() {
        let huge = Shape::Attention {
            b: 100_000,
            h: 100_000,
            s: 100_000,
            d: 100_000,
            causal: false,
        };
        let e = huge.validate().unwrap_err().to_string();
        assert!(
            e.contains("tensor Q would hold 100000000000000000000 elements"),
            "{e}"
        );
    }

    #[test]
    fn a_network_whose_inner_tensors_pass_32_bits_is_refused() {
        // Conv 1's output is 4 x 80 x 80 = 25600 values per image, 3.5 times the image.
        assert!(Shape::Cnn { b: 80_000 }.validate().is_ok());
        let e = Shape::Cnn { b: 100_000 }
            .validate()
            .unwrap_err()
            .to_string();
        assert!(e.contains("tensor conv 1 out would hold 2560000000"), "{e}");
        // The FFN's hidden layer is 4 E wide: 65536 rows of 32768.
        let ok = Shape::Encoder {
            b: 1,
            s: 65_536,
            e: 4096,
            h: 32,
        };
        assert!(ok.validate().is_ok());
        let e = Shape::Encoder {
            b: 1,
            s: 65_536,
            e: 8192,
            h: 64,
        }
        .validate()
        .unwrap_err()
        .to_string();
        assert!(e.contains("tensor FFN 1 would hold 2147483648"), "{e}");
    }

    #[test]
    fn memory_bound_workloads_ask_few_flops_of_each_byte_at_any_size() {
        let shapes = [
            (Workload::Eltwise, ["1x1", "512x1000", "16384x4096"]),
            (Workload::Rbf, ["1x1", "1000x32", "1000000x128"]),
            (Workload::Layernorm, ["1x1", "2048x1000", "8192x8192"]),
            (Workload::Softmax, ["1x1", "2048x1000", "8192x8192"]),
            (
                Workload::Pool,
                ["1x1x2x2x2", "8x4x86x86x2", "64x64x64x64x4"],
            ),
            (Workload::Reduce, ["1", "1000", "100000000"]),
            (Workload::Transpose, ["1x1", "100x37", "8192x8192"]),
        ];
        for (w, labels) in shapes {
            assert!(w.memory_bound(), "{w}");
            for label in labels {
                let s = Shape::parse(w, label).unwrap();
                // Half-precision rows move half the bytes: still under 8 FLOP/B.
                let intensity = s.flops() / s.min_bytes(2);
                assert!(intensity < 8.0, "{w} {label}: {intensity} FLOP/B");
            }
        }
        let bound = Workload::ALL.iter().filter(|w| w.memory_bound()).count();
        assert_eq!(
            bound,
            shapes.len(),
            "a memory-bound workload has no case above"
        );
    }

    #[test]
    fn a_transpose_moves_each_element_twice_and_computes_nothing() {
        let t = Shape::parse(Workload::Transpose, "100x37").unwrap();
        assert_eq!(t, Shape::Transpose { m: 100, n: 37 });
        assert_eq!(Shape::parse(t.workload(), &t.label()), Ok(t));
        assert_eq!(t.output().dims, [37, 100]);
        assert_eq!(t.min_bytes(4), (2 * 100 * 37 * 4) as f64);
        assert_eq!(t.flops(), 0.0);
        assert!(Shape::parse(Workload::Transpose, "100").is_err());
    }

    #[test]
    fn row_shapes_parse_and_follow_the_byte_model() {
        let ln = Shape::parse(Workload::Layernorm, "37x130").unwrap();
        assert_eq!(ln, Shape::Layernorm { m: 37, n: 130 });
        assert_eq!(Shape::parse(ln.workload(), &ln.label()), Ok(ln));
        // X and Y once each, plus gamma and beta.
        assert_eq!(ln.min_bytes(4), ((2 * 37 * 130 + 2 * 130) * 4) as f64);
        assert_eq!(
            ln.flops(),
            LAYERNORM_FLOPS_PER_ELEMENT * (37 * 130) as f64 + LAYERNORM_FLOPS_PER_ROW * 37.0
        );
        let sm = Shape::parse(Workload::Softmax, " 8192X1280 ").unwrap();
        assert_eq!(sm, Shape::Softmax { m: 8192, n: 1280 });
        assert_eq!(Shape::parse(sm.workload(), &sm.label()), Ok(sm));
        assert_eq!(sm.min_bytes(4), (2 * 8192 * 1280 * 4) as f64);
        assert_eq!(sm.output().dims, vec![8192, 1280]);
        for w in [Workload::Layernorm, Workload::Softmax] {
            for bad in ["37", "37x130x4", "37x130-relu", "37xN"] {
                let e = Shape::parse(w, bad).unwrap_err();
                assert!(e.to_string().contains("MxN"), "{w} {bad}: {e}");
            }
        }
        let zero = Shape::Softmax { m: 0, n: 4 }.validate().unwrap_err();
        assert!(zero.to_string().contains("dimension M is 0"), "{zero}");
    }

    #[test]
    fn pool_shapes_floor_the_output_and_refuse_a_window_larger_than_the_image() {
        let s = Shape::parse(Workload::Pool, "2x3x34x35x4").unwrap();
        assert_eq!(
            s,
            Shape::Pool {
                b: 2,
                c: 3,
                h: 34,
                w: 35,
                p: 4
            }
        );
        assert_eq!(Shape::parse(s.workload(), &s.label()), Ok(s));
        assert_eq!(s.output().dims, vec![2, 3, 8, 8]);
        assert_eq!(s.inputs()[0].dims, vec![2, 3, 34, 35]);
        // The covered 32 x 32 of each image read once, y written once.
        assert_eq!(s.min_bytes(4), ((6 * 32 * 32 + 6 * 8 * 8) * 4) as f64);
        assert_eq!(s.flops(), (16 * 6 * 8 * 8) as f64);
        assert!(s.validate().is_ok());
        let one = Shape::Pool {
            b: 1,
            c: 1,
            h: 1,
            w: 1,
            p: 1,
        };
        assert!(one.validate().is_ok());
        assert_eq!(one.output().dims, vec![1, 1, 1, 1]);
        let big = Shape::parse(Workload::Pool, "1x1x5x3x4")
            .unwrap()
            .validate()
            .unwrap_err();
        assert!(
            big.to_string()
                .contains("window (4x4) is larger than the image (5x3)"),
            "{big}"
        );
        let zero = Shape::parse(Workload::Pool, "1x1x5x5x0")
            .unwrap()
            .validate()
            .unwrap_err();
        assert!(zero.to_string().contains("dimension P is 0"), "{zero}");
        for bad in ["2x3x34x35", "2x3x34x35x4x1", "2x3x34x35x4-relu"] {
            let e = Shape::parse(Workload::Pool, bad).unwrap_err();
            assert!(e.to_string().contains("BxCxHxWxP"), "{bad}: {e}");
        }
    }

    #[test]
    fn bad_shapes_are_refused_with_the_limit() {
        let zero = Shape::gemm(0, 4, 4).validate().unwrap_err();
        assert!(zero.to_string().contains("dimension M is 0"), "{zero}");
        let big = Shape::gemm(1 << 20, 4, 4).validate().unwrap_err();
        assert!(big.to_string().contains(&MAX_DIM.to_string()), "{big}");
        let huge = Shape::gemm(100_000, 100_000, 4).validate().unwrap_err();
        assert!(huge.to_string().contains("tensor C"), "{huge}");
        let filt = Shape::Conv {
            b: 1,
            c: 1,
            m: 1,
            h: 5,
            w: 5,
            k: 7,
        }
        .validate()
        .unwrap_err();
        assert!(filt.to_string().contains("larger than the image"), "{filt}");
        assert!(Shape::gemm(1, 1, 1).validate().is_ok());
    }
}
