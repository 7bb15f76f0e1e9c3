//! Convolution rung of the fusion stage: 03, unroll -> GEMM -> permute fused into one
//! implicit-GEMM kernel, and its CPU port.

use kernel::{
    Bound, ConvDims, CpuPort, CudaPlan, Kernel, KernelInfo, Launch, Lineage, Precision, Role,
    Shape, Stage, Workload, conv_args, conv_dims, cuda_source, div_ceil,
};
use rayon::prelude::*;

/// The convolution rungs of this crate, in ladder order.
pub fn kernels() -> Vec<Box<dyn Kernel>> {
    vec![Box::new(ConvFused)]
}

/// Feature maps per block and threads (pixels) per block of `conv/03_fused.cu`.
const BM: usize = 16;
const NT: usize = 256;

/// `conv/03_fused.cu`: implicit GEMM, the unrolled matrix gathered on the fly, NCHW stores.
pub struct ConvFused;

impl Kernel for ConvFused {
    fn lineage(&self) -> Option<Lineage> {
        Some(Lineage {
            parent: Some("conv-unroll-gemm"),
            idea: "unroll, GEMM and permute fused into one kernel (implicit GEMM): the unrolled matrix is never written",
            bound: Some(Bound::MemoryTraffic),
        })
    }

    fn info(&self) -> KernelInfo {
        KernelInfo {
            id: "conv-fused".into(),
            workload: Workload::Conv,
            stage: Stage::Fusion,
            precision: Precision::Fp32,
            role: Role::Rung,
            rung: 3,
            summary: "unroll+GEMM+permute fused (implicit GEMM): one launch, no unrolled matrix"
                .into(),
        }
    }

    fn cuda(&self, shape: &Shape) -> Option<CudaPlan> {
        let d = conv_dims(shape);
        Some(CudaPlan::single(
            2,
            Launch {
                source: cuda_source!("fusion", "conv/03_fused.cu"),
                entry: "conv_fused".into(),
                grid: [div_ceil(d.b * d.plane(), NT), div_ceil(d.m, BM), 1],
                block: [NT as u32, 1, 1],
                dynamic_smem: 0,
                args: conv_args(&d),
            },
        ))
    }

    fn cpu(&self) -> Option<CpuPort> {
        Some(cpu_fused)
    }
}

fn cpu_fused(shape: &Shape, inputs: &[&[f32]], out: &mut [f32]) {
    implicit_gemm_cpu(&conv_dims(shape), inputs[0], inputs[1], out);
}

/// The CPU implicit GEMM: the product of the filter and the unrolled matrix, with the
/// unrolled matrix never built. For each output row (b, m, oh) and each filter tap (c, p, q),
/// the row of the unrolled matrix it needs is a contiguous slice of input row (b, c, oh + p)
/// starting at q, so the inner loop is `y_row += weight * x_row[q..q + wo]`, which the
/// compiler vectorizes; the output row stays in L1 while all C*K*K taps accumulate into it
/// and is written once, already in NCHW. Images x feature maps are spread over rayon's
/// threads.
pub fn implicit_gemm_cpu(d: &ConvDims, x: &[f32], f: &[f32], out: &mut [f32]) {
    out.par_chunks_mut(d.plane())
        .enumerate()
        .for_each(|(bm, plane)| {
            let (b, m) = (bm / d.m, bm % d.m);
            plane.fill(0.0);
            let x_img = &x[b * d.image()..(b + 1) * d.image()];
            let f_m = &f[m * d.ckk()..(m + 1) * d.ckk()];
            for (oh, y_row) in plane.chunks_mut(d.wo).enumerate() {
                for c in 0..d.c {
                    for p in 0..d.k {
                        let row = &x_img[(c * d.h + oh + p) * d.w..][..d.w];
                        let taps = &f_m[(c * d.k + p) * d.k..][..d.k];
                        for (q, &wt) in taps.iter().enumerate() {
                            for (yv, &xv) in y_row.iter_mut().zip(&row[q..q + d.wo]) {
                                *yv += wt * xv;
                            }
                        }
                    }
                }
            }
        });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_implicit_gemm_matches_a_direct_f64_loop() {
        for &(b, c, m, h, w, k) in &[
            (1, 1, 1, 1, 1, 1),
            (3, 2, 5, 9, 7, 3),
            (2, 3, 17, 12, 13, 5),
        ] {
            let d = conv_dims(&Shape::Conv { b, c, m, h, w, k });
            let x: Vec<f32> = (0..b * d.image())
                .map(|i| ((i * 37) % 101) as f32 / 50.0 - 1.0)
                .collect();
            let f: Vec<f32> = (0..m * d.ckk())
                .map(|i| ((i * 53) % 97) as f32 / 48.0 - 1.0)
                .collect();
            let mut out = vec![f32::NAN; b * d.out_image()];
            implicit_gemm_cpu(&d, &x, &f, &mut out);
            let err = kernel::testing::relative_error(
                &out,
                &kernel::reference::reference(&Shape::Conv { b, c, m, h, w, k }, &[x, f]),
            );
            assert!(err < 1e-6, "{b}x{c}x{m}x{h}x{w}x{k}");
        }
    }
}
