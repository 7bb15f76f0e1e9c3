//! Fused kernels: the linear layer Y = act(X * W^T + bias) as a naive "fused" loop (the
//! cautionary row: one launch, yet far slower than a good GEMM then a separate epilogue), as
//! a good GEMM followed by a bias +
//! activation kernel, and as the same GEMM with the bias + activation fused into its
//! epilogue. The walkthrough is in this crate's README. The fused convolution is in [`conv`],
//! the element-wise chain GELU(X + b) + R in [`eltwise`], the radial-basis expansion with
//! cosine cutoff in [`rbf`], and the layers a small CNN and a transformer encoder block need:
//! the layer normalization in [`layernorm`], the row softmax in [`softmax`], ReLU and max
//! pooling in [`pool`] (the first two share [`rows`]); and the sum of a vector, the classic
//! parallel reduction, in [`reduce`]; the transpose of a matrix, the classic lesson in
//! coalescing and shared-memory banks, in [`transpose`].

pub mod conv;
pub mod eltwise;
pub mod layernorm;
pub mod pool;
pub mod rbf;
pub mod reduce;
pub mod rows;
pub mod softmax;
pub mod transpose;

use kernel::{
    Activation, Arg, Bound, Buf, CpuPort, CudaPlan, CudaSource, Dtype, Kernel, KernelInfo, Launch,
    Lineage, Precision, Role, Scratch, Shape, Stage, Step, Workload, cuda_source, div_ceil,
};
use rayon::prelude::*;
use restrict_unroll::cpu::{BLayout, gemm_blocked};

/// Every kernel of this crate, in ladder order.
pub fn kernels() -> Vec<Box<dyn Kernel>> {
    let mut all: Vec<Box<dyn Kernel>> = vec![
        Box::new(LinearNaiveFused),
        Box::new(LinearUnfused),
        Box::new(LinearFused),
        Box::new(LinearFusedPadded),
        Box::new(LinearFusedWarptile),
    ];
    all.extend(conv::kernels());
    all.extend(eltwise::kernels());
    all.extend(rbf::kernels());
    all.extend(layernorm::kernels());
    all.extend(softmax::kernels());
    all.extend(pool::kernels());
    all.extend(reduce::kernels());
    all.extend(transpose::kernels());
    all
}

/// `(m, n, k, act)` of a linear shape. The harness only hands a kernel its own workload.
fn linear_dims(shape: &Shape) -> (usize, usize, usize, Activation) {
    match *shape {
        Shape::Linear { m, n, k, act } => (m, n, k, act),
        other => panic!("a linear kernel was given {other}"),
    }
}

/// The `int act` kernel argument: 0 = ReLU, 1 = GELU (tanh approximation), 2 = none.
pub fn act_code(act: Activation) -> i32 {
    match act {
        Activation::Relu => 0,
        Activation::Gelu => 1,
        Activation::None => 2,
    }
}

/// The parameter list `(X, W, bias, Y, M, N, K, act)` of the one-kernel linear rungs.
fn fused_linear_args(m: usize, n: usize, k: usize, act: Activation) -> Vec<Arg> {
    vec![
        Arg::Ptr(Buf::Input(0)),
        Arg::Ptr(Buf::Input(1)),
        Arg::Ptr(Buf::Input(2)),
        Arg::Ptr(Buf::Output),
        Arg::I32(m as i32),
        Arg::I32(n as i32),
        Arg::I32(k as i32),
        Arg::I32(act_code(act)),
    ]
}

/// Threads per block of the element-wise kernels.
const EW_BLOCK: usize = 256;
/// Block tile of the GEMMs of rungs 02 and 03 (their BM = BN).
const GEMM_TILE: usize = 128;

/// The bias + activation kernel of `02_unfused.cu` reading `src` (an M x N buffer of X * W^T)
/// and writing the output. Also used by the cuBLAS reference row of the linear table.
pub fn bias_act_launch(src: Buf, m: usize, n: usize, act: Activation) -> Launch {
    Launch {
        source: cuda_source!("fusion", "02_unfused.cu"),
        entry: "bias_act".into(),
        grid: [div_ceil(m * n, EW_BLOCK), 1, 1],
        block: [EW_BLOCK as u32, 1, 1],
        dynamic_smem: 0,
        args: vec![
            Arg::Ptr(src),
            Arg::Ptr(Buf::Input(2)),
            Arg::Ptr(Buf::Output),
            Arg::I32(m as i32),
            Arg::I32(n as i32),
            Arg::I32(act_code(act)),
        ],
    }
}

fn info(id: &'static str, rung: u32, summary: &'static str) -> KernelInfo {
    KernelInfo {
        id: id.into(),
        workload: Workload::Linear,
        stage: Stage::Fusion,
        precision: Precision::Fp32,
        role: Role::Rung,
        rung,
        summary: summary.into(),
    }
}

/// `01_naive_fused.cu`: one thread per output, serial dot product, bias and activation.
pub struct LinearNaiveFused;

impl Kernel for LinearNaiveFused {
    fn lineage(&self) -> Option<Lineage> {
        Some(Lineage {
            parent: None,
            idea: "a naive dot product per output with the bias and activation in the same loop: fused, on a naive GEMM",
            bound: None,
        })
    }

    fn info(&self) -> KernelInfo {
        info(
            "linear-naive-fused",
            1,
            "the naive fused loop: one thread per output, naive dot product + bias + act",
        )
    }

    fn cuda(&self, shape: &Shape) -> Option<CudaPlan> {
        let (m, n, k, act) = linear_dims(shape);
        Some(CudaPlan::single(
            3,
            Launch {
                source: cuda_source!("fusion", "01_naive_fused.cu"),
                entry: "linear_naive_fused".into(),
                grid: [div_ceil(m * n, EW_BLOCK), 1, 1],
                block: [EW_BLOCK as u32, 1, 1],
                dynamic_smem: 0,
                args: fused_linear_args(m, n, k, act),
            },
        ))
    }

    fn cpu(&self) -> Option<CpuPort> {
        Some(cpu_naive_fused)
    }
}

/// CPU port of the naive fused loop: each output is a serial dot product of a row of X and a
/// row of W (a strict left-to-right sum the compiler may not reorder, so it barely
/// vectorizes), then bias and activation. Rows of Y are spread over rayon's threads.
fn cpu_naive_fused(shape: &Shape, inputs: &[&[f32]], out: &mut [f32]) {
    let (_, n, k, act) = linear_dims(shape);
    let (x, w, bias) = (inputs[0], inputs[1], inputs[2]);
    out.par_chunks_mut(n).enumerate().for_each(|(row, y)| {
        let x_row = &x[row * k..(row + 1) * k];
        for (col, yv) in y.iter_mut().enumerate() {
            let w_row = &w[col * k..(col + 1) * k];
            let mut acc = 0.0f32;
            for (a, b) in x_row.iter().zip(w_row) {
                acc += a * b;
            }
            *yv = act.apply_f32(acc + bias[col]);
        }
    });
}

/// `02_unfused.cu`: register-blocked GEMM into a scratch buffer, then a bias + act kernel.
pub struct LinearUnfused;

impl Kernel for LinearUnfused {
    fn lineage(&self) -> Option<Lineage> {
        Some(Lineage {
            parent: Some("linear-naive-fused"),
            idea: "a register-blocked GEMM into scratch, then a separate bias and activation kernel",
            bound: Some(Bound::MemoryTraffic),
        })
    }

    fn info(&self) -> KernelInfo {
        info(
            "linear-unfused",
            2,
            "register-blocked GEMM X*W^T into scratch, then a separate bias+activation kernel",
        )
    }

    fn cuda(&self, shape: &Shape) -> Option<CudaPlan> {
        let (m, n, k, act) = linear_dims(shape);
        let gemm = Launch {
            source: cuda_source!("fusion", "02_unfused.cu"),
            entry: "linear_gemm_xwt".into(),
            grid: [div_ceil(n, GEMM_TILE), div_ceil(m, GEMM_TILE), 1],
            block: [256, 1, 1],
            dynamic_smem: 0,
            args: vec![
                Arg::Ptr(Buf::Input(0)),
                Arg::Ptr(Buf::Input(1)),
                Arg::Ptr(Buf::Scratch(0)),
                Arg::I32(m as i32),
                Arg::I32(n as i32),
                Arg::I32(k as i32),
            ],
        };
        Some(CudaPlan {
            inputs: vec![Dtype::F32; 3],
            output: Dtype::F32,
            scratch: vec![Scratch::new("XW^T", Dtype::F32, m * n)],
            steps: vec![
                Step::Kernel(gemm),
                Step::Kernel(bias_act_launch(Buf::Scratch(0), m, n, act)),
            ],
            ..Default::default()
        })
    }

    fn cpu(&self) -> Option<CpuPort> {
        Some(cpu_unfused)
    }
}

/// CPU port of the unfused rung: the packed, cache-blocked GEMM of the restrict-unroll stage
/// writes X * W^T to a temporary M x N buffer, then a second pass reads it back, adds the bias
/// and applies the activation: the intermediate makes a round trip through memory.
fn cpu_unfused(shape: &Shape, inputs: &[&[f32]], out: &mut [f32]) {
    let (m, n, k, act) = linear_dims(shape);
    let (x, w, bias) = (inputs[0], inputs[1], inputs[2]);
    let mut t = vec![0.0f32; m * n];
    gemm_blocked(m, n, k, x, w, BLayout::NxK, &mut t, &|_, v| v);
    out.par_chunks_mut(n)
        .zip(t.par_chunks(n))
        .for_each(|(y, t)| {
            for ((yv, &tv), &b) in y.iter_mut().zip(t).zip(bias) {
                *yv = act.apply_f32(tv + b);
            }
        });
}

/// `03_fused.cu`: the same GEMM with bias + activation applied in its epilogue.
pub struct LinearFused;

impl Kernel for LinearFused {
    fn lineage(&self) -> Option<Lineage> {
        Some(Lineage {
            parent: Some("linear-unfused"),
            idea: "bias and activation in the GEMM's epilogue: one launch, the intermediate never written",
            bound: Some(Bound::MemoryTraffic),
        })
    }

    fn info(&self) -> KernelInfo {
        info(
            "linear-fused",
            3,
            "rung 02's GEMM with bias+activation fused into the epilogue: one launch, Y written once",
        )
    }

    fn cuda(&self, shape: &Shape) -> Option<CudaPlan> {
        Some(fused_linear_plan(
            cuda_source!("fusion", "03_fused.cu"),
            "linear_fused",
            shape,
        ))
    }

    fn cpu(&self) -> Option<CpuPort> {
        Some(cpu_fused)
    }
}

/// The plan of the one-kernel fused rungs: a block of 256 threads a 128x128 tile of Y.
fn fused_linear_plan(source: CudaSource, entry: &'static str, shape: &Shape) -> CudaPlan {
    let (m, n, k, act) = linear_dims(shape);
    CudaPlan::single(
        3,
        Launch {
            source,
            entry: entry.into(),
            grid: [div_ceil(n, GEMM_TILE), div_ceil(m, GEMM_TILE), 1],
            block: [256, 1, 1],
            dynamic_smem: 0,
            args: fused_linear_args(m, n, k, act),
        },
    )
}

/// `04_fused_padded.cu`: rung 03 with 4 floats of padding after each k row of its shared tiles,
/// so that the transposed stores of a warp fall in 32 banks instead of 4.
pub struct LinearFusedPadded;

impl Kernel for LinearFusedPadded {
    fn lineage(&self) -> Option<Lineage> {
        Some(Lineage {
            parent: Some("linear-fused"),
            idea: "pad the transposed shared tiles: a warp's stores of a K step hit 32 banks, not 8 words in each of 4",
            bound: Some(Bound::SharedTraffic),
        })
    }

    fn info(&self) -> KernelInfo {
        info(
            "linear-fused-padded",
            4,
            "rung 03 with its shared tiles padded to 132 floats a row: conflict-free transposed stores",
        )
    }

    fn cuda(&self, shape: &Shape) -> Option<CudaPlan> {
        Some(fused_linear_plan(
            cuda_source!("fusion", "04_fused_padded.cu"),
            "linear_fused_padded",
            shape,
        ))
    }

    /// Padding has no CPU counterpart: the parent's port.
    fn cpu(&self) -> Option<CpuPort> {
        Some(cpu_fused)
    }
}

/// `05_fused_warptile.cu`: rung 04 with GEMM rung 07's warp tiling, so that the float4 reads of
/// a quarter-warp fall in distinct banks too.
pub struct LinearFusedWarptile;

impl Kernel for LinearFusedWarptile {
    fn lineage(&self) -> Option<Lineage> {
        Some(Lineage {
            parent: Some("linear-fused-padded"),
            idea: "GEMM rung 07's warp tiles: a quarter-warp's float4 reads share bank groups instead of splitting two to one",
            bound: Some(Bound::SharedTraffic),
        })
    }

    fn info(&self) -> KernelInfo {
        info(
            "linear-fused-warptile",
            5,
            "rung 04 with 64x32 warp tiles of 4x4 sub-tiles (GEMM rung 07): conflict-free reads too",
        )
    }

    fn cuda(&self, shape: &Shape) -> Option<CudaPlan> {
        Some(fused_linear_plan(
            cuda_source!("fusion", "05_fused_warptile.cu"),
            "linear_fused_warptile",
            shape,
        ))
    }

    /// The warp is a GPU's unit of scheduling; a CPU has none: the fused port.
    fn cpu(&self) -> Option<CpuPort> {
        Some(cpu_fused)
    }
}

/// CPU port of the fused rung: the same blocked GEMM, with bias + activation applied to each
/// micro-tile as it is written after its last K block, while it is still in cache; no
/// intermediate buffer.
fn cpu_fused(shape: &Shape, inputs: &[&[f32]], out: &mut [f32]) {
    let (m, n, k, act) = linear_dims(shape);
    let (x, w, bias) = (inputs[0], inputs[1], inputs[2]);
    gemm_blocked(m, n, k, x, w, BLayout::NxK, out, &|col, v| {
        act.apply_f32(v + bias[col])
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ports_agree_with_a_direct_loop() {
        for &(m, n, k, act) in &[
            (1, 1, 1, Activation::Relu),
            (33, 17, 65, Activation::Gelu),
            (100, 37, 300, Activation::Relu),
            (7, 9, 20, Activation::None),
        ] {
            let x: Vec<f32> = (0..m * k)
                .map(|i| ((i * 31) % 11) as f32 / 5.0 - 1.0)
                .collect();
            let w: Vec<f32> = (0..n * k)
                .map(|i| ((i * 17) % 13) as f32 / 6.0 - 1.0)
                .collect();
            let b: Vec<f32> = (0..n).map(|i| (i % 5) as f32 / 2.0 - 1.0).collect();
            let shape = Shape::Linear { m, n, k, act };
            let mut want = vec![0.0f64; m * n];
            for i in 0..m {
                for j in 0..n {
                    let s: f64 = (0..k)
                        .map(|kk| x[i * k + kk] as f64 * w[j * k + kk] as f64)
                        .sum();
                    want[i * n + j] = act.apply_f64(s + b[j] as f64);
                }
            }
            for kern in kernels() {
                if kern.info().workload != Workload::Linear {
                    continue;
                }
                let Some(port) = kern.cpu() else { continue };
                let mut out = vec![f32::NAN; m * n];
                port(&shape, &[&x, &w, &b], &mut out);
                let err = kernel::testing::relative_error(&out, &want);
                assert!(
                    err < 1e-5,
                    "{} {}: error {err}",
                    kern.info().id,
                    shape.label()
                );
            }
        }
    }

    #[test]
    fn act_codes_match_the_kernels() {
        assert_eq!(act_code(Activation::Relu), 0);
        assert_eq!(act_code(Activation::Gelu), 1);
        assert_eq!(act_code(Activation::None), 2);
    }
}
