//! Convolution rung of the fp16 stage: 06, rung 05 with FP16 inputs and intermediates and
//! FP32 accumulation (WMMA m16n16k16), and its CPU port.

use half::f16;
use kernel::{
    Bound, CpuPort, CudaPlan, Dtype, Kernel, KernelInfo, Launch, Lineage, Precision, Role, Shape,
    Stage, Workload, conv_args, conv_dims, cuda_source, div_ceil,
};
use rayon::prelude::*;
use restrict_unroll::conv::conv_unrolled;

/// The convolution rungs of this crate, in ladder order.
pub fn kernels() -> Vec<Box<dyn Kernel>> {
    vec![Box::new(ConvWmmaFp16)]
}

/// Block tile of `conv/06_wmma_fp16.cu`: BM feature maps x BN pixels, 4 warps.
const BM: usize = 16;
const BN: usize = 128;

/// `conv/06_wmma_fp16.cu`: FP16 input and filter, half tiles, m16n16k16, FP32 out.
pub struct ConvWmmaFp16;

impl Kernel for ConvWmmaFp16 {
    fn lineage(&self) -> Option<Lineage> {
        Some(Lineage {
            parent: Some("conv-wmma-tf32"),
            idea: "FP16 input, filter and tiles: half the bytes per gathered value",
            bound: Some(Bound::MemoryTraffic),
        })
    }

    fn info(&self) -> KernelInfo {
        KernelInfo {
            id: "conv-wmma-fp16".into(),
            workload: Workload::Conv,
            stage: Stage::Fp16,
            precision: Precision::Fp16,
            role: Role::Rung,
            rung: 6,
            summary: "rung 05 with FP16 input, filter and tiles, WMMA m16n16k16, FP32 accumulate"
                .into(),
        }
    }

    fn cuda(&self, shape: &Shape) -> Option<CudaPlan> {
        let d = conv_dims(shape);
        let source = cuda_source!("fp16", "conv/06_wmma_fp16.cu")
            .define("KS", d.k)
            .define("CIN", d.c);
        Some(CudaPlan {
            // Converted by the executor before timing starts, as for GEMM rung 11.
            inputs: vec![Dtype::F16, Dtype::F16],
            ..CudaPlan::single(
                2,
                Launch {
                    source,
                    entry: "conv_wmma_fp16".into(),
                    grid: [div_ceil(d.b * d.plane(), BN), div_ceil(d.m, BM), 1],
                    block: [BN as u32, 1, 1],
                    dynamic_smem: 0,
                    args: conv_args(&d),
                },
            )
        })
    }

    fn cpu(&self) -> Option<CpuPort> {
        Some(cpu_fp16)
    }
}

/// CPU port: the input and the filter are stored as FP16 (`f16::from_f32`, round to nearest
/// even as `__float2half_rn`) and rung 04's specialized convolution widens them to f32 as
/// it reads them (once per image and feature map), accumulating in FP32 as the tensor cores
/// do.
fn cpu_fp16(shape: &Shape, inputs: &[&[f32]], out: &mut [f32]) {
    let half = |x: &[f32]| -> Vec<f16> { x.par_iter().map(|&v| f16::from_f32(v)).collect() };
    let (x, f) = (half(inputs[0]), half(inputs[1]));
    conv_unrolled(&conv_dims(shape), &x, &f, out);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn port_is_within_the_fp16_bound_and_not_exact() {
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
        cpu_fp16(&shape, &[&x, &f], &mut out);
        let mut exact = vec![f32::NAN; out.len()];
        conv_unrolled(&d, &x, &f, &mut exact);
        let exact: Vec<f64> = exact.iter().map(|&v| f64::from(v)).collect();
        let err = kernel::testing::relative_error(&out, &exact);
        assert!(
            err < Precision::Fp16.tolerance() && err > 0.0,
            "error {err}"
        );
    }
}
