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
            // SAFETY: the pointers cover rows x k (A band), k x n (B) and rows x n (C band)
            // row-major floats, exactly the extents and strides passed; C is not aliased.
            unsafe {
                matrixmultiply::sgemm(
                    rows,
                    k,
                    n,
                    1.0,
                    a.as_ptr(),
                    k as isize,
                    1,
                    b.as_ptr(),
                    n as isize,
                    1,
                    0.0,
                    c.as_mut_ptr(),
                    n as isize,
                    1,
                );
            }
        });
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
