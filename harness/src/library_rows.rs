//! Reference rows that run a library instead of a kernel of ours: cuBLAS on a GPU, the
//! `matrixmultiply` crate on the CPU. Each is a [`Kernel`] whose plan is one library step (or
//! whose CPU port calls the library), so it runs, validates and times through the very same
//! executor as the rungs.

use kernel::{
    Buf, CpuPort, CudaPlan, Dtype, GemmCall, GemmCompute, Kernel, KernelInfo, LibraryCall,
    Precision, Role, Scratch, Shape, Stage, Step, Workload,
};
use rayon::prelude::*;

/// cuBLAS GEMM on row-major operands, in one of three compute modes.
pub struct CublasGemm {
    pub id: &'static str,
    pub compute: GemmCompute,
    pub summary: &'static str,
}

/// The cuBLAS rows of the GEMM table.
pub fn kernels() -> Vec<Box<dyn Kernel>> {
    vec![
        Box::new(CublasGemm {
            id: "cublas-sgemm",
            compute: GemmCompute::Fp32,
            summary: "cuBLAS SGEMM: FP32 in, FP32 CUDA-core math (the FP32 bar to reach)",
        }),
        Box::new(CublasGemm {
            id: "cublas-tf32",
            compute: GemmCompute::Tf32,
            summary: "cuBLAS GemmEx, FP32 in, TF32 tensor cores (COMPUTE_32F_FAST_TF32)",
        }),
        Box::new(CublasGemm {
            id: "cublas-fp16",
            compute: GemmCompute::Fp16,
            summary: "cuBLAS GemmEx, FP16 in, FP32 accumulate and out, tensor cores",
        }),
        Box::new(CublasGemm {
            id: "cublas-bf16",
            compute: GemmCompute::Bf16,
            summary: "cuBLAS GemmEx, BF16 in, FP32 accumulate and out, tensor cores",
        }),
        Box::new(MatrixmultiplySgemm),
        Box::new(MatrixmultiplyLinear),
        Box::new(MatrixmultiplyConv),
        Box::new(MatrixmultiplyAttention),
        Box::new(CublasLinear),
        Box::new(CublasConv),
        Box::new(CublasAttention),
    ]
}

impl Kernel for CublasGemm {
    fn info(&self) -> KernelInfo {
        let (precision, rung) = match self.compute {
            GemmCompute::Fp32 => (Precision::Fp32, 1),
            GemmCompute::Tf32 => (Precision::Tf32, 2),
            GemmCompute::Fp16 => (Precision::Fp16, 3),
            GemmCompute::Bf16 => (Precision::Bf16, 5),
        };
        KernelInfo {
            id: self.id.into(),
            workload: Workload::Gemm,
            stage: Stage::Reference,
            precision,
            role: Role::Reference,
            rung,
            summary: self.summary.into(),
        }
    }

    fn cuda(&self, shape: &Shape) -> Option<CudaPlan> {
        let Shape::Gemm { m, n, k } = *shape else {
            return None;
        };
        let dtype = self.compute.input();
        Some(CudaPlan {
            inputs: vec![dtype, dtype],
            steps: vec![Step::Library(LibraryCall::Gemm(GemmCall::new(
                (m, n, k),
                Buf::Input(0),
                Buf::Input(1),
                Buf::Output,
                self.compute,
            )))],
            ..Default::default()
        })
    }
}

/// The CPU peer row: `matrixmultiply::sgemm` (packed, AVX2/FMA micro-kernels chosen at run
/// time). The crate is single-threaded without its `threading` feature, so the port splits C
/// into row bands, one `sgemm` call per band, spread over rayon's threads. Measured at 1024^3
/// on 2 cores, the bands run as fast as the crate's `threading` feature (64 vs 58..63
/// GFLOP/s, within the noise of a shared machine), so the lab keeps the plain dependency.
pub struct MatrixmultiplySgemm;

/// Rows of C per rayon task of the peer row: large enough that `sgemm`'s own packing of B is
/// amortized, small enough to balance two or more cores.
const MM_BAND: usize = 128;

impl Kernel for MatrixmultiplySgemm {
    fn info(&self) -> KernelInfo {
        KernelInfo {
            id: "matrixmultiply-sgemm".into(),
            workload: Workload::Gemm,
            stage: Stage::Reference,
            precision: Precision::Fp32,
            role: Role::Reference,
            rung: 4,
            summary: "CPU peer: matrixmultiply::sgemm, row bands over rayon threads".into(),
        }
    }

    fn cpu(&self) -> Option<CpuPort> {
        Some(cpu_matrixmultiply)
    }
}

fn cpu_matrixmultiply(shape: &Shape, inputs: &[&[f32]], out: &mut [f32]) {
    let Shape::Gemm { m: _, n, k } = *shape else {
        return; // the harness hands a GEMM row only GEMM shapes
    };
    let (a, b) = (inputs[0], inputs[1]);
    out.par_chunks_mut(MM_BAND * n)
        .enumerate()
        .for_each(|(band, c)| {
            let rows = c.len() / n;
            let a = &a[band * MM_BAND * k..(band * MM_BAND + rows) * k];
            sgemm(
                (rows, n, k),
                Strided::rows(a, k),
                Strided::rows(b, n),
                c,
                1.0,
            );
        });
}

/// The CPU peer of the linear table: `matrixmultiply::sgemm` for X W^T (W read transposed
/// through its strides) in row bands over rayon's threads, then bias and activation on each
/// band while it is in cache.
pub struct MatrixmultiplyLinear;

impl Kernel for MatrixmultiplyLinear {
    fn info(&self) -> KernelInfo {
        KernelInfo {
            id: "matrixmultiply-linear".into(),
            workload: Workload::Linear,
            stage: Stage::Reference,
            precision: Precision::Fp32,
            role: Role::Reference,
            rung: 2,
            summary: "CPU peer: matrixmultiply::sgemm for X W^T, then bias and activation".into(),
        }
    }

    fn cpu(&self) -> Option<CpuPort> {
        Some(cpu_matrixmultiply_linear)
    }
}

fn cpu_matrixmultiply_linear(shape: &Shape, inputs: &[&[f32]], out: &mut [f32]) {
    let Shape::Linear { m: _, n, k, act } = *shape else {
        return; // the harness hands a linear row only linear shapes
    };
    let (x, w, bias) = (inputs[0], inputs[1], inputs[2]);
    out.par_chunks_mut(MM_BAND * n)
        .enumerate()
        .for_each(|(band, y)| {
            let rows = y.len() / n;
            let x = &x[band * MM_BAND * k..(band * MM_BAND + rows) * k];
            sgemm(
                (rows, n, k),
                Strided::rows(x, k),
                Strided::transposed(w, k),
                y,
                1.0,
            );
            for row in y.chunks_mut(n) {
                for (v, b) in row.iter_mut().zip(bias) {
                    *v = act.apply_f32(*v + b);
                }
            }
        });
}

/// A read-only matrix operand of [`sgemm`]: its elements and its row and column strides.
struct Strided<'a> {
    data: &'a [f32],
    row: usize,
    col: usize,
}

impl<'a> Strided<'a> {
    /// Row-major with `ld` elements per row.
    fn rows(data: &'a [f32], ld: usize) -> Self {
        Self {
            data,
            row: ld,
            col: 1,
        }
    }

    /// The transpose of a row-major matrix with `ld` elements per row.
    fn transposed(data: &'a [f32], ld: usize) -> Self {
        Self {
            data,
            row: 1,
            col: ld,
        }
    }

    /// The offset one past the last element an `r x c` view reads.
    fn extent(&self, r: usize, c: usize) -> usize {
        (r - 1) * self.row + (c - 1) * self.col + 1
    }
}

/// `C[m,n] = alpha * A[m,k] B[k,n]` (C row-major, `n` per row) through `matrixmultiply::sgemm`,
/// with the operands' extents checked first, so the one `unsafe` call of the CPU peers is sound.
fn sgemm((m, n, k): (usize, usize, usize), a: Strided, b: Strided, c: &mut [f32], alpha: f32) {
    if m == 0 || n == 0 || k == 0 {
        c[..m * n].fill(0.0);
        return;
    }
    assert!(a.data.len() >= a.extent(m, k) && b.data.len() >= b.extent(k, n));
    assert!(c.len() >= m * n);
    // SAFETY: the asserts above show A (m x k), B (k x n) and C (m x n, row-major) lie inside
    // their slices with the strides passed; C is a unique borrow, so it aliases neither.
    unsafe {
        matrixmultiply::sgemm(
            m,
            k,
            n,
            alpha,
            a.data.as_ptr(),
            a.row as isize,
            a.col as isize,
            b.data.as_ptr(),
            b.row as isize,
            b.col as isize,
            0.0,
            c.as_mut_ptr(),
            n as isize,
            1,
        );
    }
}

/// The CPU peer of the convolution table: per image, the input window matrix (im2col,
/// C*K*K x Ho*Wo) then one `matrixmultiply::sgemm` with the filter (M x C*K*K) straight into the
/// image's NCHW output (no permute: one image's output is already M x Ho*Wo). Images are spread
/// over rayon's threads. What a BLAS-backed framework does on a CPU.
pub struct MatrixmultiplyConv;

impl Kernel for MatrixmultiplyConv {
    fn info(&self) -> KernelInfo {
        KernelInfo {
            id: "matrixmultiply-conv".into(),
            workload: Workload::Conv,
            stage: Stage::Reference,
            precision: Precision::Fp32,
            role: Role::Reference,
            rung: 2,
            summary: "CPU peer: im2col per image, then matrixmultiply::sgemm with the filter"
                .into(),
        }
    }

    fn cpu(&self) -> Option<CpuPort> {
        Some(cpu_matrixmultiply_conv)
    }
}

fn cpu_matrixmultiply_conv(shape: &Shape, inputs: &[&[f32]], out: &mut [f32]) {
    let d = kernel::conv_dims(shape);
    let (x, f) = (inputs[0], inputs[1]);
    let (ckk, plane) = (d.ckk(), d.plane());
    out.par_chunks_mut(d.out_image())
        .zip(x.par_chunks(d.image()))
        .for_each_init(
            || vec![0.0f32; ckk * plane],
            |u, (y, x)| {
                for (row, u_row) in u.chunks_mut(plane).enumerate() {
                    let (q, p, c) = (row % d.k, (row / d.k) % d.k, row / (d.k * d.k));
                    for (oh, u_seg) in u_row.chunks_mut(d.wo).enumerate() {
                        let src = (c * d.h + oh + p) * d.w + q;
                        u_seg.copy_from_slice(&x[src..src + d.wo]);
                    }
                }
                sgemm(
                    (d.m, plane, ckk),
                    Strided::rows(f, ckk),
                    Strided::rows(u, plane),
                    y,
                    1.0,
                );
            },
        );
}

/// The CPU peer of the attention table: per head, `S = scale * Q K^T` by one
/// `matrixmultiply::sgemm` (K read transposed through its strides), a row softmax with max
/// subtraction (masked past the diagonal when causal), then `O = P V` by another. Heads are
/// spread over rayon's threads; the S x S scores of one head live in a per-thread buffer.
pub struct MatrixmultiplyAttention;

impl Kernel for MatrixmultiplyAttention {
    fn info(&self) -> KernelInfo {
        KernelInfo {
            id: "matrixmultiply-attention".into(),
            workload: Workload::Attention,
            stage: Stage::Reference,
            precision: Precision::Fp32,
            role: Role::Reference,
            rung: 2,
            summary: "CPU peer: matrixmultiply::sgemm for QK^T and PV, a row softmax between"
                .into(),
        }
    }

    fn cpu(&self) -> Option<CpuPort> {
        Some(cpu_matrixmultiply_attention)
    }
}

fn cpu_matrixmultiply_attention(shape: &Shape, inputs: &[&[f32]], out: &mut [f32]) {
    let dims = kernel::attention_dims(shape);
    let (s, d, hl) = (dims.s, dims.d, dims.head_len());
    out.par_chunks_mut(hl).enumerate().for_each_init(
        || vec![0.0f32; s * s],
        |scores, (h, o)| {
            let range = h * hl..(h + 1) * hl;
            let (q, k, v) = (
                &inputs[0][range.clone()],
                &inputs[1][range.clone()],
                &inputs[2][range],
            );
            sgemm(
                (s, s, d),
                Strided::rows(q, d),
                Strided::transposed(k, d),
                scores,
                dims.scale(),
            );
            for (i, row) in scores.chunks_mut(s).enumerate() {
                let (live, masked) = row.split_at_mut(dims.keys_for(i));
                let max = live.iter().copied().fold(f32::NEG_INFINITY, f32::max);
                let mut sum = 0.0f32;
                for p in live.iter_mut() {
                    *p = (*p - max).exp();
                    sum += *p;
                }
                live.iter_mut().for_each(|p| *p /= sum);
                masked.fill(0.0);
            }
            sgemm(
                (s, d, s),
                Strided::rows(scores, s),
                Strided::rows(v, d),
                o,
                1.0,
            );
        },
    );
}

/// The cuBLAS reference of the linear table: cuBLAS SGEMM computes X * W^T into a scratch
/// buffer (`b_transposed`), then the bias + activation kernel of the fusion stage's unfused
/// rung finishes the layer. Two steps, as a framework's `addmm` + activation would be.
pub struct CublasLinear;

impl Kernel for CublasLinear {
    fn info(&self) -> KernelInfo {
        KernelInfo {
            id: "cublas-linear".into(),
            workload: Workload::Linear,
            stage: Stage::Reference,
            precision: Precision::Fp32,
            role: Role::Reference,
            rung: 1,
            summary: "cuBLAS SGEMM X*W^T into scratch, then the bias+activation kernel".into(),
        }
    }

    fn cuda(&self, shape: &Shape) -> Option<CudaPlan> {
        let Shape::Linear { m, n, k, act } = *shape else {
            return None;
        };
        Some(CudaPlan {
            inputs: vec![Dtype::F32; 3],
            output: Dtype::F32,
            scratch: vec![Scratch::new("XW^T", Dtype::F32, m * n)],
            steps: vec![
                Step::Library(LibraryCall::Gemm(GemmCall {
                    b_transposed: true,
                    ..GemmCall::new(
                        (m, n, k),
                        Buf::Input(0),
                        Buf::Input(1),
                        Buf::Scratch(0),
                        GemmCompute::Fp32,
                    )
                })),
                Step::Kernel(fusion::bias_act_launch(Buf::Scratch(0), m, n, act)),
            ],
            ..Default::default()
        })
    }
}

/// The cuBLAS reference of the convolution table: the unroll and permute kernels of the
/// baseline's rung 02 around cuBLAS SGEMM instead of the tiled GEMM, over the same batch
/// chunks and scratch. What a library GEMM buys the three-kernel pipeline.
pub struct CublasConv;

impl Kernel for CublasConv {
    fn info(&self) -> KernelInfo {
        KernelInfo {
            id: "cublas-conv-unroll-sgemm".into(),
            workload: Workload::Conv,
            stage: Stage::Reference,
            precision: Precision::Fp32,
            role: Role::Reference,
            rung: 1,
            summary: "unroll -> cuBLAS SGEMM -> permute, batch in the chunks of conv rung 02"
                .into(),
        }
    }

    fn supports(&self, shape: &Shape) -> Result<(), kernel::Unsupported> {
        baseline::conv::unroll_supports(&kernel::conv_dims(shape))
    }

    fn cuda(&self, shape: &Shape) -> Option<CudaPlan> {
        let Shape::Conv { .. } = *shape else {
            return None;
        };
        let d = kernel::conv_dims(shape);
        let chunk = baseline::conv::ConvUnrollGemm::default().chunk(&d);
        Some(baseline::conv::unroll_gemm_permute_plan(
            &d,
            chunk,
            |m, n, k| {
                Step::Library(LibraryCall::Gemm(GemmCall::new(
                    (m, n, k),
                    Buf::Input(1),
                    Buf::Scratch(0),
                    Buf::Scratch(1),
                    GemmCompute::Fp32,
                )))
            },
        ))
    }
}

/// The cuBLAS-based FP32 attention of a GPU table: S = scale * Q K^T as one strided batched
/// SGEMM per chunk of heads, a warp-per-row softmax kernel, then O = P V as another; the
/// S x S scores in scratch, chunked over heads as the naive rung does.
pub struct CublasAttention;

impl Kernel for CublasAttention {
    fn info(&self) -> KernelInfo {
        KernelInfo {
            id: "cublas-attention".into(),
            workload: Workload::Attention,
            stage: Stage::Reference,
            precision: Precision::Fp32,
            role: Role::Reference,
            rung: 1,
            summary:
                "cuBLAS FP32: batched SGEMM for QK^T, a warp-per-row softmax, batched SGEMM for PV"
                    .into(),
        }
    }

    fn supports(&self, shape: &Shape) -> Result<(), kernel::Unsupported> {
        baseline::attention::AttnNaive.supports(shape)
    }

    fn cuda(&self, shape: &Shape) -> Option<CudaPlan> {
        let dims = kernel::attention_dims(shape);
        let chunk = baseline::attention::naive_heads_per_chunk(&dims);
        if chunk == 0 {
            return None;
        }
        let (s, d, hl) = (dims.s, dims.d, dims.head_len());
        let mut steps = Vec::new();
        for first in (0..dims.heads).step_by(chunk) {
            let heads = chunk.min(dims.heads - first);
            let scores = GemmCall {
                b_transposed: true,
                alpha: dims.scale(),
                batch: heads,
                stride_a: hl,
                stride_b: hl,
                stride_c: s * s,
                ..GemmCall::new(
                    (s, s, d),
                    Buf::Input(0).at(first * hl),
                    Buf::Input(1).at(first * hl),
                    Buf::Scratch(0),
                    GemmCompute::Fp32,
                )
            };
            let pv = GemmCall {
                batch: heads,
                stride_a: s * s,
                stride_b: hl,
                stride_c: hl,
                ..GemmCall::new(
                    (s, d, s),
                    Buf::Scratch(0),
                    Buf::Input(2).at(first * hl),
                    Buf::Output.at(first * hl),
                    GemmCompute::Fp32,
                )
            };
            steps.push(Step::Library(LibraryCall::Gemm(scores)));
            steps.push(Step::Kernel(baseline::attention::softmax_rows_launch(
                heads * s,
                s,
                dims.causal,
            )));
            steps.push(Step::Library(LibraryCall::Gemm(pv)));
        }
        Some(CudaPlan {
            inputs: vec![Dtype::F32; 3],
            scratch: vec![Scratch::new("S x S scores", Dtype::F32, chunk * s * s)],
            steps,
            ..Default::default()
        })
    }
}
