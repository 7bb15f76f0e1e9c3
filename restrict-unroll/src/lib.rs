//! Rungs 03..09 of the GEMM ladder: `__restrict__` and unrolling, 1D and 2D register blocking,
//! float4 access with a transposed A tile, warp tiling, double buffering, and a tile shape
//! tuned per GPU ([`tuned`]), each one idea over the rung before. The walkthrough is in this
//! crate's README; the CPU ports are in [`cpu`]. Rung 04 of the convolution ladder is in
//! [`conv`], and rung 07, its batch pipeline over several streams, in [`streams`].

pub mod conv;
pub mod cpu;
pub mod streams;
pub mod tuned;

pub use tuned::{GemmTuned, TileConfig};

use kernel::{
    AcceptedSpill, Bound, CpuPort, CudaPlan, CudaSource, Kernel, KernelInfo, Launch, Lineage,
    Precision, Role, Shape, Stage, Unsupported, Workload, cuda_source, div_ceil, gemm_args,
    gemm_dims,
};

/// Every kernel of this crate, in ladder order.
pub fn kernels() -> Vec<Box<dyn Kernel>> {
    let mut all: Vec<Box<dyn Kernel>> = vec![
        Box::new(GemmRestrictUnroll),
        Box::new(GemmRegblock1d),
        Box::new(GemmRegblock2d),
        Box::new(GemmVectorized),
        Box::new(GemmWarptile),
        Box::new(GemmDoubleBuffer),
        Box::new(GemmTuned::default()),
    ];
    all.extend(conv::kernels());
    all
}

/// A one-launch FP32 GEMM plan: grid over (N / bn, M / bm) tiles, 1D or 2D blocks.
fn plan(
    source: CudaSource,
    entry: &'static str,
    shape: &Shape,
    tile: [usize; 2],
    block: [u32; 3],
) -> CudaPlan {
    let (m, n, k) = gemm_dims(shape);
    CudaPlan::single(
        2,
        Launch {
            source,
            entry: entry.into(),
            grid: [div_ceil(n, tile[1]), div_ceil(m, tile[0]), 1],
            block,
            dynamic_smem: 0,
            args: gemm_args(m, n, k),
        },
    )
}

/// The float4 rungs need rows that start 16-byte aligned.
fn needs_float4_rows(shape: &Shape) -> Result<(), Unsupported> {
    let (_, n, k) = gemm_dims(shape);
    if n % 4 != 0 || k % 4 != 0 {
        return Err(Unsupported(format!(
            "float4 loads need N % 4 == 0 and K % 4 == 0 (16-byte aligned rows); got N = {n}, K = {k}"
        )));
    }
    Ok(())
}

macro_rules! port {
    ($name:ident, $f:path) => {
        fn $name(shape: &Shape, inputs: &[&[f32]], out: &mut [f32]) {
            let (m, n, k) = gemm_dims(shape);
            $f(m, n, k, inputs[0], inputs[1], out);
        }
    };
}
port!(port_restrict_unroll, cpu::restrict_unroll);
port!(port_regblock_1d, cpu::regblock_1d);
port!(port_regblock_2d, cpu::regblock_2d);
port!(port_vectorized, cpu::vectorized);
// Rung 08's idea, overlapping the next tile's loads with this tile's FMAs, is what a CPU's
// out-of-order core and hardware prefetcher already do for rung 07's port: 08 runs that very
// function (and so does 09), which the harness sees and says instead of timing the same code.
port!(port_warptile, cpu::warptile);

fn info(id: &'static str, rung: u32, summary: &'static str) -> KernelInfo {
    KernelInfo {
        id: id.into(),
        workload: Workload::Gemm,
        stage: Stage::RestrictUnroll,
        precision: Precision::Fp32,
        role: Role::Rung,
        rung,
        summary: summary.into(),
    }
}

/// `03_restrict_unroll.cu`: the tiled kernel with `__restrict__` and an unrolled inner loop.
pub struct GemmRestrictUnroll;

impl Kernel for GemmRestrictUnroll {
    fn lineage(&self) -> Option<Lineage> {
        Some(Lineage {
            parent: Some("gemm-tiled"),
            idea: "__restrict__ pointers and #pragma unroll: hints to the compiler",
            bound: Some(Bound::Issue),
        })
    }

    fn info(&self) -> KernelInfo {
        info(
            "gemm-restrict-unroll",
            3,
            "rung 02 + __restrict__ pointers and #pragma unroll on the tile loop",
        )
    }

    fn cuda(&self, shape: &Shape) -> Option<CudaPlan> {
        Some(plan(
            cuda_source!("restrict-unroll", "03_restrict_unroll.cu"),
            "gemm_restrict_unroll",
            shape,
            [32, 32],
            [32, 32, 1],
        ))
    }

    fn cpu(&self) -> Option<CpuPort> {
        Some(port_restrict_unroll)
    }
}

/// `04_regblock_1d.cu`: 64x64 tiles, 8 outputs of a column per thread.
pub struct GemmRegblock1d;

impl Kernel for GemmRegblock1d {
    fn lineage(&self) -> Option<Lineage> {
        Some(Lineage {
            parent: Some("gemm-restrict-unroll"),
            idea: "1D register blocking: a thread computes 8 outputs of a column, one B value in a register feeds 8 FMAs",
            bound: Some(Bound::SharedTraffic),
        })
    }

    fn info(&self) -> KernelInfo {
        info(
            "gemm-regblock-1d",
            4,
            "1D register blocking: 64x64 tile, BK=8, each thread 8 outputs of a column",
        )
    }

    fn cuda(&self, shape: &Shape) -> Option<CudaPlan> {
        Some(plan(
            cuda_source!("restrict-unroll", "04_regblock_1d.cu"),
            "gemm_regblock_1d",
            shape,
            [64, 64],
            [512, 1, 1],
        ))
    }

    fn cpu(&self) -> Option<CpuPort> {
        Some(port_regblock_1d)
    }
}

/// `05_regblock_2d.cu`: 128x128 tiles, an 8x8 square of outputs per thread.
pub struct GemmRegblock2d;

impl Kernel for GemmRegblock2d {
    fn lineage(&self) -> Option<Lineage> {
        Some(Lineage {
            parent: Some("gemm-regblock-1d"),
            idea: "2D register blocking: an 8x8 outer product per thread, 16 shared values feed 64 FMAs",
            bound: Some(Bound::SharedTraffic),
        })
    }

    fn info(&self) -> KernelInfo {
        info(
            "gemm-regblock-2d",
            5,
            "2D register blocking: 128x128 tile, BK=8, 8x8 outputs per thread, 256 threads",
        )
    }

    fn cuda(&self, shape: &Shape) -> Option<CudaPlan> {
        Some(plan(
            cuda_source!("restrict-unroll", "05_regblock_2d.cu"),
            "gemm_regblock_2d",
            shape,
            [128, 128],
            [256, 1, 1],
        ))
    }

    fn cpu(&self) -> Option<CpuPort> {
        Some(port_regblock_2d)
    }

    /// `__launch_bounds__(256, 2)` caps it at 128 registers so two blocks fit per SM on every
    /// architecture (sm_90 otherwise takes 129, one block). ptxas then spills 12 bytes:
    /// three values stored once before the K loop and reloaded (3 LDL, from L1) once per K
    /// step of 512 FFMA.
    fn accepted_spill(&self) -> Option<AcceptedSpill> {
        Some(AcceptedSpill {
            bytes: 12,
            reason: "__launch_bounds__(256, 2): 2 blocks per SM for 3 LDL (L1 hits) per 512 FFMA",
        })
    }
}

/// `06_vectorized.cu`: float4 global and shared access, A tile transposed in shared memory.
pub struct GemmVectorized;

impl Kernel for GemmVectorized {
    fn lineage(&self) -> Option<Lineage> {
        Some(Lineage {
            parent: Some("gemm-regblock-2d"),
            idea: "two ideas: 16-byte (float4) global loads and stores, and the A tile transposed in shared memory for float4 reads",
            bound: Some(Bound::Issue),
        })
    }

    fn info(&self) -> KernelInfo {
        info(
            "gemm-vectorized",
            6,
            "float4 loads/stores, A tile transposed in shared memory (needs N, K % 4 == 0)",
        )
    }

    fn supports(&self, shape: &Shape) -> Result<(), Unsupported> {
        needs_float4_rows(shape)
    }

    fn cuda(&self, shape: &Shape) -> Option<CudaPlan> {
        Some(plan(
            cuda_source!("restrict-unroll", "06_vectorized.cu"),
            "gemm_vectorized",
            shape,
            [128, 128],
            [256, 1, 1],
        ))
    }

    fn cpu(&self) -> Option<CpuPort> {
        Some(port_vectorized)
    }
}

/// `07_warptile.cu`: block > warp > thread tiling, 2x4 warps of 64x32.
pub struct GemmWarptile;

impl Kernel for GemmWarptile {
    fn lineage(&self) -> Option<Lineage> {
        Some(Lineage {
            parent: Some("gemm-vectorized"),
            idea: "warp tiling: each warp owns a 64x32 tile of C, so its lanes' shared reads broadcast and spread over the banks",
            bound: Some(Bound::SharedTraffic),
        })
    }

    fn info(&self) -> KernelInfo {
        info(
            "gemm-warptile",
            7,
            "warp tiling: 2x4 warps of 64x32, each thread 2x2 sub-tiles of 4x4 (needs N, K % 4 == 0)",
        )
    }

    fn supports(&self, shape: &Shape) -> Result<(), Unsupported> {
        needs_float4_rows(shape)
    }

    fn cuda(&self, shape: &Shape) -> Option<CudaPlan> {
        Some(plan(
            cuda_source!("restrict-unroll", "07_warptile.cu"),
            "gemm_warptile",
            shape,
            [128, 128],
            [256, 1, 1],
        ))
    }

    fn cpu(&self) -> Option<CpuPort> {
        Some(port_warptile)
    }
}

/// `08_double_buffer.cu`: rung 07 with two shared-memory buffers, next tile loaded during the
/// FMAs, one barrier per tile.
pub struct GemmDoubleBuffer;

impl Kernel for GemmDoubleBuffer {
    fn lineage(&self) -> Option<Lineage> {
        Some(Lineage {
            parent: Some("gemm-warptile"),
            idea: "double buffering: the next tile's global loads in flight during the FMAs, one barrier per tile",
            bound: Some(Bound::Latency),
        })
    }

    fn info(&self) -> KernelInfo {
        info(
            "gemm-double-buffer",
            8,
            "rung 07 double-buffered: next tile's loads in flight during the FMAs, one barrier per tile",
        )
    }

    fn supports(&self, shape: &Shape) -> Result<(), Unsupported> {
        needs_float4_rows(shape)
    }

    fn cuda(&self, shape: &Shape) -> Option<CudaPlan> {
        Some(plan(
            cuda_source!("restrict-unroll", "08_double_buffer.cu"),
            "gemm_double_buffer",
            shape,
            [128, 128],
            [256, 1, 1],
        ))
    }

    fn cpu(&self) -> Option<CpuPort> {
        Some(port_warptile)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_port_matches_on_tails() {
        for &(m, n, k) in &[
            (1, 1, 1),
            (17, 33, 65),
            (100, 36, 128),
            (75, 40, 300),
            (7, 20, 513),
        ] {
            let a: Vec<f32> = (0..m * k)
                .map(|i| ((i * 7919) % 13) as f32 / 6.0 - 1.0)
                .collect();
            let b: Vec<f32> = (0..k * n)
                .map(|i| ((i * 104729) % 17) as f32 / 8.0 - 1.0)
                .collect();
            let r = kernel::testing::gemm_f64((m, n, k), &a, &b, |v| v);
            let shape = Shape::gemm(m, n, k);
            for kern in kernels() {
                if kern.info().workload != Workload::Gemm || kern.supports(&shape).is_err() {
                    continue;
                }
                let Some(port) = kern.cpu() else { continue };
                let mut out = vec![f32::NAN; m * n];
                port(&shape, &[&a, &b], &mut out);
                let err = kernel::testing::relative_error(&out, &r);
                assert!(err < 1e-5, "{} {m}x{n}x{k}: error {err}", kern.info().id);
            }
        }
    }

    #[test]
    fn float4_rungs_decline_unaligned_rows() {
        let e = GemmVectorized.supports(&Shape::gemm(8, 6, 8)).unwrap_err();
        assert!(e.0.contains("N % 4"), "{e}");
        assert!(GemmWarptile.supports(&Shape::gemm(3, 8, 12)).is_ok());
        let e = GemmDoubleBuffer
            .supports(&Shape::gemm(8, 8, 6))
            .unwrap_err();
        assert!(e.0.contains("K % 4"), "{e}");
    }
}
