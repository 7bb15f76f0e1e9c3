//! Tensor-core GEMM rungs: WMMA TF32 (10), then the FP16 road to cuBLAS: WMMA fed by a
//! `cp.async` ring (14), `mma.sync` + `ldmatrix` on a swizzled ring (15), fragments double
//! buffered in registers (16), 16 on BF16 (17), the Hopper rung: wgmma fed by TMA (18),
//! 128x256 block tiles of 8 warps (19), split-K for shapes with fewer tiles than SMs (20),
//! and Hopper again: 128x256 tiles of wgmma m64n256k16 (21), persistent (22), its tiles walked
//! in groups that share A and B in L2 (23), a 2-CTA cluster sharing B by TMA multicast (24),
//! each k-tile's wgmma issued while the previous group still runs (25), 24's stage release
//! at CTA scope (26), back to `mma.sync`: rung 19 with its addresses computed once per
//! thread (27), and split-K across the blocks of a cluster, the partials added through
//! distributed shared memory (28).
//! The walkthrough is in this crate's README.
//! Rung 05 of the convolution ladder is in [`conv`].

pub mod conv;
mod hopper;
mod pipelined;
mod wide_tile;

use kernel::{
    Bound, CpuPort, CudaPlan, Kernel, KernelInfo, Launch, Lineage, Precision, Role, Shape, Stage,
    Workload, cuda_source, div_ceil, gemm_args, gemm_dims,
};
use rayon::prelude::*;
use restrict_unroll::cpu::{BLayout, gemm_blocked, round_tf32};

pub use hopper::{
    GemmWgmmaCluster, GemmWgmmaClusterCta, GemmWgmmaL2Order, GemmWgmmaN256, GemmWgmmaOverlap,
    GemmWgmmaPersistent, GemmWgmmaSplitK, GemmWgmmaTma, L2_GROUP, grouped_tile,
};
pub use pipelined::{GemmMmaBf16, GemmMmaDoubleBuffer, GemmMmaLdmatrix, GemmWmmaCpAsync};
pub use wide_tile::{DEFAULT_SMS, GemmMma128x256, GemmMmaHoisted, GemmMmaSplitK};

/// Every kernel of this crate, in ladder order.
pub fn kernels() -> Vec<Box<dyn Kernel>> {
    let mut all: Vec<Box<dyn Kernel>> = vec![Box::new(GemmWmmaTf32)];
    all.extend(conv::kernels());
    all.extend(pipelined::kernels());
    all.push(Box::new(GemmWgmmaTma));
    all.push(Box::new(GemmMma128x256));
    all.push(Box::new(GemmMmaSplitK::default()));
    all.push(Box::new(GemmWgmmaN256));
    all.push(Box::new(GemmWgmmaPersistent::default()));
    all.push(Box::new(GemmWgmmaL2Order::default()));
    all.push(Box::new(GemmWgmmaCluster::default()));
    all.push(Box::new(GemmWgmmaOverlap::default()));
    all.push(Box::new(GemmWgmmaClusterCta::default()));
    all.push(Box::new(GemmMmaHoisted));
    all.push(Box::new(GemmWgmmaSplitK::default()));
    all
}

/// Block tile edge of `10_wmma_tf32.cu` (its BM = BN) and its threads (4 warps).
const TILE: usize = 64;
const THREADS: u32 = 128;

/// `10_wmma_tf32.cu`: m16n16k8 TF32 WMMA, 4 warps per 64x64 block tile.
pub struct GemmWmmaTf32;

impl Kernel for GemmWmmaTf32 {
    fn lineage(&self) -> Option<Lineage> {
        Some(Lineage {
            parent: Some("gemm-warptile"),
            idea: "the warps' FMAs move to tensor cores: WMMA m16n16k8 on TF32-rounded inputs",
            bound: Some(Bound::Compute),
        })
    }

    fn info(&self) -> KernelInfo {
        KernelInfo {
            id: "gemm-wmma-tf32".into(),
            workload: Workload::Gemm,
            stage: Stage::Tensorcore,
            precision: Precision::Tf32,
            role: Role::Rung,
            rung: 10,
            summary:
                "WMMA m16n16k8 TF32 tensor cores, FP32 accumulate; 4 warps x 32x32 per 64x64 tile"
                    .into(),
        }
    }

    fn cuda(&self, shape: &Shape) -> Option<CudaPlan> {
        let (m, n, k) = gemm_dims(shape);
        Some(CudaPlan::single(
            2,
            Launch {
                source: cuda_source!("tensorcore", "10_wmma_tf32.cu"),
                entry: "gemm_wmma_tf32".into(),
                grid: [div_ceil(n, TILE), div_ceil(m, TILE), 1],
                block: [THREADS, 1, 1],
                dynamic_smem: 0,
                args: gemm_args(m, n, k),
            },
        ))
    }

    fn cpu(&self) -> Option<CpuPort> {
        Some(cpu_tf32)
    }
}

/// CPU port: the tensor cores' numerics, not their speed (a CPU has no TF32 unit). A and B are
/// rounded to TF32 (10 mantissa bits, as `wmma::__float_to_tf32` does), then multiplied with
/// FP32 accumulation by the packed, blocked GEMM of rung 07. The rounding pass costs time the
/// GPU does not pay, so on a CPU this row is a little slower than rung 07, never faster.
fn cpu_tf32(shape: &Shape, inputs: &[&[f32]], out: &mut [f32]) {
    let (m, n, k) = gemm_dims(shape);
    let round = |x: &[f32]| -> Vec<f32> { x.par_iter().map(|&v| round_tf32(v)).collect() };
    let (a, b) = (round(inputs[0]), round(inputs[1]));
    gemm_blocked(m, n, k, &a, &b, BLayout::KxN, out, &|_, v| v);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tf32_rounding_keeps_ten_mantissa_bits() {
        assert_eq!(round_tf32(1.0), 1.0);
        // 1 + 2^-11 is a tie between 1 and 1 + 2^-10: rounds away from zero.
        assert_eq!(round_tf32(1.0 + 2f32.powi(-11)), 1.0 + 2f32.powi(-10));
        assert_eq!(round_tf32(1.0 + 2f32.powi(-12)), 1.0);
        assert_eq!(round_tf32(-3.0), -3.0);
        assert!(round_tf32(f32::NAN).is_nan());
    }

    #[test]
    fn port_is_within_the_tf32_bound() {
        let (m, n, k) = (33, 17, 65);
        let a: Vec<f32> = (0..m * k)
            .map(|i| ((i * 37) % 101) as f32 / 50.0 - 1.0)
            .collect();
        let b: Vec<f32> = (0..k * n)
            .map(|i| ((i * 53) % 97) as f32 / 48.0 - 1.0)
            .collect();
        let mut out = vec![f32::NAN; m * n];
        cpu_tf32(&Shape::gemm(m, n, k), &[&a, &b], &mut out);
        let (mut num, mut den) = (0.0f64, 0.0f64);
        for i in 0..m {
            for j in 0..n {
                let e: f64 = (0..k)
                    .map(|kk| a[i * k + kk] as f64 * b[kk * n + j] as f64)
                    .sum();
                num += (out[i * n + j] as f64 - e).powi(2);
                den += e * e;
            }
        }
        let err = (num / den).sqrt();
        assert!(
            err < Precision::Tf32.tolerance() && err > 0.0,
            "error {err}"
        );
    }
}
