//! Convolution rung of the tensorcore stage: 05, the fused implicit GEMM on tensor cores
//! (WMMA TF32, FP32 accumulation), and its CPU port.

use kernel::{
    Bound, CpuPort, CudaPlan, Kernel, KernelInfo, Launch, Lineage, Precision, Role, Shape, Stage,
    Workload, conv_args, conv_dims, cuda_source, div_ceil,
};
use rayon::prelude::*;
use restrict_unroll::conv::conv_unrolled;
use restrict_unroll::cpu::round_tf32;

/// The convolution rungs of this crate, in ladder order.
pub fn kernels() -> Vec<Box<dyn Kernel>> {
    vec![Box::new(ConvWmmaTf32)]
}

/// Block tile of `conv/05_wmma_tf32.cu`: BM feature maps x BN pixels, 4 warps.
const BM: usize = 16;
const BN: usize = 128;

/// `conv/05_wmma_tf32.cu`: implicit GEMM with m16n16k8 TF32 WMMA, tiles gathered in shared.
pub struct ConvWmmaTf32;

impl Kernel for ConvWmmaTf32 {
    fn lineage(&self) -> Option<Lineage> {
        Some(Lineage {
            parent: Some("conv-restrict-unroll"),
            idea: "the implicit GEMM's FMAs on tensor cores: WMMA m16n16k8 TF32",
            bound: Some(Bound::Compute),
        })
    }

    fn info(&self) -> KernelInfo {
        KernelInfo {
            id: "conv-wmma-tf32".into(),
            workload: Workload::Conv,
            stage: Stage::Tensorcore,
            precision: Precision::Tf32,
            role: Role::Rung,
            rung: 5,
            summary: "fused implicit GEMM on tensor cores: WMMA m16n16k8 TF32, 16 maps x 128 px"
                .into(),
        }
    }

    fn cuda(&self, shape: &Shape) -> Option<CudaPlan> {
        let d = conv_dims(shape);
        let source = cuda_source!("tensorcore", "conv/05_wmma_tf32.cu")
            .define("KS", d.k)
            .define("CIN", d.c);
        Some(CudaPlan::single(
            2,
            Launch {
                source,
                entry: "conv_wmma_tf32".into(),
                grid: [div_ceil(d.b * d.plane(), BN), div_ceil(d.m, BM), 1],
                block: [BN as u32, 1, 1],
                dynamic_smem: 0,
                args: conv_args(&d),
            },
        ))
    }

    fn cpu(&self) -> Option<CpuPort> {
        Some(cpu_tf32)
    }
}

/// CPU port: the tensor cores' numerics (a CPU has no TF32 unit). The input and the filter
/// are rounded to TF32 as `wmma::__float_to_tf32` does, then rung 04's specialized
/// convolution runs with FP32 accumulation. The rounding pass is time the GPU does not spend.
fn cpu_tf32(shape: &Shape, inputs: &[&[f32]], out: &mut [f32]) {
    let round = |x: &[f32]| -> Vec<f32> { x.par_iter().map(|&v| round_tf32(v)).collect() };
    let (x, f) = (round(inputs[0]), round(inputs[1]));
    conv_unrolled(&conv_dims(shape), &x, &f, out);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn port_rounds_to_tf32_within_the_bound() {
        let shape = Shape::Conv {
            b: 2,
            c: 3,
            m: 5,
            h: 11,
            w: 9,
            k: 3,
        };
        let d = conv_dims(&shape);
        let x: Vec<f32> = (0..2 * d.image())
            .map(|i| ((i * 37) % 101) as f32 / 50.3 - 1.0)
            .collect();
        let f: Vec<f32> = (0..5 * d.ckk())
            .map(|i| ((i * 53) % 97) as f32 / 48.7 - 1.0)
            .collect();
        let mut out = vec![f32::NAN; 2 * d.out_image()];
        cpu_tf32(&shape, &[&x, &f], &mut out);
        let mut exact = vec![f32::NAN; out.len()];
        conv_unrolled(&d, &x, &f, &mut exact);
        let exact: Vec<f64> = exact.iter().map(|&v| f64::from(v)).collect();
        let err = kernel::testing::relative_error(&out, &exact);
        assert!(
            err < Precision::Tf32.tolerance() && err > 0.0,
            "error {err}"
        );
    }
}
