//! Baseline rungs: the naive GEMM and the shared-memory tiled GEMM, with their CPU ports;
//! the naive and the unroll -> GEMM -> permute convolutions are in [`conv`].
//! The walkthrough is in this crate's README.

pub mod attention;
pub mod conv;

use kernel::{
    Bound, CpuPort, CudaPlan, Kernel, KernelInfo, Launch, Lineage, Precision, Role, Shape, Stage,
    Workload, cuda_source, div_ceil, gemm_args, gemm_dims,
};
use rayon::prelude::*;

/// Every kernel of this crate, in ladder order.
pub fn kernels() -> Vec<Box<dyn Kernel>> {
    let mut all: Vec<Box<dyn Kernel>> = vec![Box::new(GemmNaive), Box::new(GemmTiled)];
    all.extend(conv::kernels());
    all.extend(attention::kernels());
    all
}

/// `01_naive.cu`: one thread per output element, everything from global memory.
pub struct GemmNaive;

impl Kernel for GemmNaive {
    fn lineage(&self) -> Option<Lineage> {
        Some(Lineage {
            parent: None,
            idea: "one thread per output element, operands straight from global memory: the starting point",
            bound: None,
        })
    }

    fn info(&self) -> KernelInfo {
        KernelInfo {
            id: "gemm-naive".into(),
            workload: Workload::Gemm,
            stage: Stage::Baseline,
            precision: Precision::Fp32,
            role: Role::Rung,
            rung: 1,
            summary: "one thread per output, operands straight from global memory, uncoalesced"
                .into(),
        }
    }

    fn cuda(&self, shape: &Shape) -> Option<CudaPlan> {
        let (m, n, k) = gemm_dims(shape);
        const BLOCK: usize = 32;
        Some(CudaPlan::single(
            2,
            Launch {
                source: cuda_source!("baseline", "01_naive.cu"),
                entry: "gemm_naive".into(),
                grid: [div_ceil(m, BLOCK), div_ceil(n, BLOCK), 1],
                block: [BLOCK as u32, BLOCK as u32, 1],
                dynamic_smem: 0,
                args: gemm_args(m, n, k),
            },
        ))
    }

    fn cpu(&self) -> Option<CpuPort> {
        Some(cpu_naive)
    }
}

/// CPU port of the naive rung: each output is an independent dot product that strides down a
/// column of B, as each GPU thread does, so nearly every load of B misses the cache line the
/// previous one used. Rows are spread over rayon's threads.
fn cpu_naive(shape: &Shape, inputs: &[&[f32]], out: &mut [f32]) {
    let (_, n, k) = gemm_dims(shape);
    let (a, b) = (inputs[0], inputs[1]);
    out.par_chunks_mut(n).enumerate().for_each(|(row, c_row)| {
        for (col, c) in c_row.iter_mut().enumerate() {
            let mut acc = 0.0f32;
            for kk in 0..k {
                acc += a[row * k + kk] * b[kk * n + col];
            }
            *c = acc;
        }
    });
}

/// `02_tiled.cu`: 32x32 tiles of A and B staged in shared memory, coalesced loads.
pub struct GemmTiled;

/// Tile edge of `02_tiled.cu` (its `TILE`).
pub const TILED_TILE: usize = 32;

impl Kernel for GemmTiled {
    fn lineage(&self) -> Option<Lineage> {
        Some(Lineage {
            parent: Some("gemm-naive"),
            idea: "two ideas: 32x32 tiles of A and B staged in shared memory and reused 32 times, and threads along rows of C so that loads and stores coalesce",
            bound: Some(Bound::MemoryTraffic),
        })
    }

    fn info(&self) -> KernelInfo {
        KernelInfo {
            id: "gemm-tiled".into(),
            workload: Workload::Gemm,
            stage: Stage::Baseline,
            precision: Precision::Fp32,
            role: Role::Rung,
            rung: 2,
            summary: "32x32 tiles of A and B staged in shared memory, coalesced loads".into(),
        }
    }

    fn cuda(&self, shape: &Shape) -> Option<CudaPlan> {
        let (m, n, k) = gemm_dims(shape);
        Some(CudaPlan::single(
            2,
            Launch {
                source: cuda_source!("baseline", "02_tiled.cu"),
                entry: "gemm_tiled".into(),
                grid: [div_ceil(n, TILED_TILE), div_ceil(m, TILED_TILE), 1],
                block: [TILED_TILE as u32, TILED_TILE as u32, 1],
                dynamic_smem: 0,
                args: gemm_args(m, n, k),
            },
        ))
    }

    fn cpu(&self) -> Option<CpuPort> {
        Some(cpu_tiled)
    }
}

/// Rows of C per rayon task, and the K and N extents of the block of B kept hot in cache.
const CPU_TILE_M: usize = 32;
const CPU_TILE_K: usize = 128;
const CPU_TILE_N: usize = 512;

/// CPU port of the tiled rung: cache blocking. A task owns a band of rows of C; it walks K and
/// N in blocks small enough that the block of B (128 x 512 floats, 256 KiB) stays in L2 while
/// every row of the band reuses it, and the innermost loop runs along contiguous rows of B and
/// C, which the compiler vectorizes. Same idea as the shared-memory tiles: load once, reuse.
fn cpu_tiled(shape: &Shape, inputs: &[&[f32]], out: &mut [f32]) {
    let (m, n, k) = gemm_dims(shape);
    gemm_tiled_cpu(m, n, k, inputs[0], inputs[1], out);
}

/// The cache-blocked GEMM of [`cpu_tiled`]: row-major `out[m,n] = a[m,k] * b[k,n]`.
pub fn gemm_tiled_cpu(m: usize, n: usize, k: usize, a: &[f32], b: &[f32], out: &mut [f32]) {
    debug_assert_eq!(out.len(), m * n);
    out.par_chunks_mut(CPU_TILE_M * n)
        .enumerate()
        .for_each(|(band, c_band)| {
            c_band.fill(0.0);
            let row0 = band * CPU_TILE_M;
            for k0 in (0..k).step_by(CPU_TILE_K) {
                let k1 = (k0 + CPU_TILE_K).min(k);
                for n0 in (0..n).step_by(CPU_TILE_N) {
                    let n1 = (n0 + CPU_TILE_N).min(n);
                    for (i, c_row) in c_band.chunks_mut(n).enumerate() {
                        let a_row = &a[(row0 + i) * k..(row0 + i + 1) * k];
                        let c_seg = &mut c_row[n0..n1];
                        for kk in k0..k1 {
                            let aik = a_row[kk];
                            let b_seg = &b[kk * n + n0..kk * n + n1];
                            for (c, &bv) in c_seg.iter_mut().zip(b_seg) {
                                *c += aik * bv;
                            }
                        }
                    }
                }
            }
        });
}
