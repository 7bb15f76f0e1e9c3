//! Reference rows that run a library instead of a kernel of ours: cuBLAS on a GPU. Each is a
//! [`Kernel`] whose plan is one library step, so it runs, validates and times through the very
//! same executor as the rungs.

use kernel::{
    Buf, CudaPlan, Dtype, GemmCompute, Kernel, KernelInfo, LibraryCall, Precision, Role, Shape,
    Stage, Step, Workload,
};

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
    ]
}

impl Kernel for CublasGemm {
    fn info(&self) -> KernelInfo {
        let (precision, rung) = match self.compute {
            GemmCompute::Fp32 => (Precision::Fp32, 1),
            GemmCompute::Tf32 => (Precision::Tf32, 2),
            GemmCompute::Fp16 => (Precision::Fp16, 3),
        };
        KernelInfo {
            id: self.id,
            workload: Workload::Gemm,
            stage: Stage::Reference,
            precision,
            role: Role::Reference,
            rung,
            summary: self.summary,
        }
    }

    fn cuda(&self, shape: &Shape) -> Option<CudaPlan> {
        let Shape::Gemm { m, n, k } = *shape else {
            return None;
        };
        let dtype = match self.compute {
            GemmCompute::Fp16 => Dtype::F16,
            _ => Dtype::F32,
        };
        Some(CudaPlan {
            inputs: vec![dtype, dtype],
            output: Dtype::F32,
            scratch: Vec::new(),
            steps: vec![Step::Library(LibraryCall::Gemm {
                m,
                n,
                k,
                a: Buf::Input(0),
                b: Buf::Input(1),
                c: Buf::Output,
                b_transposed: false,
                compute: self.compute,
            })],
        })
    }
}
