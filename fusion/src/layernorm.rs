//! The layer normalization of each row of X[M,N], Y = (x - mean) / sqrt(var + eps) * gamma +
//! beta (biased variance, eps = `LAYERNORM_EPS`, as PyTorch's `LayerNorm`), as a ladder of
//! its own: one thread per row, then one warp per row. The lesson is the mapping of threads to
//! a row-wise reduction: coalesced loads and 32 times the threads.

use crate::rows::{ROWS_PER_TASK, thread_per_row, warp_per_row, warp_sum};
use kernel::workload::LAYERNORM_EPS;
use kernel::{
    Arg, Bound, Buf, CpuPort, CudaPlan, CudaSource, Kernel, KernelInfo, Launch, Lineage, Precision,
    Role, Shape, Stage, Workload, cuda_source,
};
use rayon::prelude::*;

/// The layer-normalization rungs of this crate, in ladder order.
pub fn kernels() -> Vec<Box<dyn Kernel>> {
    vec![Box::new(LayernormNaive), Box::new(LayernormWarp)]
}

/// eps in f32, as the kernels add it.
const EPS: f32 = LAYERNORM_EPS as f32;

/// `(m, n)` of a layer-normalization shape. The harness only hands a kernel its own workload.
fn dims(shape: &Shape) -> (usize, usize) {
    match *shape {
        Shape::Layernorm { m, n } => (m, n),
        other => panic!("a layer-normalization kernel was given {other}"),
    }
}

fn info(id: &'static str, rung: u32, summary: &'static str) -> KernelInfo {
    KernelInfo {
        id: id.into(),
        workload: Workload::Layernorm,
        stage: Stage::Fusion,
        precision: Precision::Fp32,
        role: Role::Rung,
        rung,
        summary: summary.into(),
    }
}

/// The one launch `(X, gamma, beta, Y, M, N)` of a rung.
fn plan(source: CudaSource, entry: &'static str, m: usize, n: usize, warps: bool) -> CudaPlan {
    let (grid, block) = if warps {
        warp_per_row(m)
    } else {
        thread_per_row(m)
    };
    CudaPlan::single(
        3,
        Launch {
            source,
            entry: entry.into(),
            grid,
            block,
            dynamic_smem: 0,
            args: vec![
                Arg::Ptr(Buf::Input(0)),
                Arg::Ptr(Buf::Input(1)),
                Arg::Ptr(Buf::Input(2)),
                Arg::Ptr(Buf::Output),
                Arg::I32(m as i32),
                Arg::I32(n as i32),
            ],
        },
    )
}

/// Writes the normalized row `x` into `y`, given its mean and 1 / sqrt(var + eps).
fn write_row(x: &[f32], gamma: &[f32], beta: &[f32], mean: f32, rstd: f32, y: &mut [f32]) {
    for (((yv, &xv), &g), &b) in y.iter_mut().zip(x).zip(gamma).zip(beta) {
        *yv = (xv - mean) * rstd * g + b;
    }
}

/// Runs `row_fn(x_row, y_row)` over the rows, `ROWS_PER_TASK` rows per rayon task.
fn by_rows(n: usize, x: &[f32], out: &mut [f32], row_fn: impl Fn(&[f32], &mut [f32]) + Sync) {
    let chunk = ROWS_PER_TASK * n;
    out.par_chunks_mut(chunk)
        .zip(x.par_chunks(chunk))
        .for_each(|(y, x)| {
            for (y, x) in y.chunks_mut(n).zip(x.chunks(n)) {
                row_fn(x, y);
            }
        });
}

/// `layernorm/01_naive.cu`: one thread per row, the mean, the variance, then the write.
pub struct LayernormNaive;

impl Kernel for LayernormNaive {
    fn lineage(&self) -> Option<Lineage> {
        Some(Lineage {
            parent: None,
            idea: "one thread per row walking it three times (mean, variance about the mean, write), as a CPU loop would",
            bound: None,
        })
    }

    fn info(&self) -> KernelInfo {
        info(
            "layernorm-naive",
            1,
            "one thread per row: serial mean, then variance, then the normalized write",
        )
    }

    fn cuda(&self, shape: &Shape) -> Option<CudaPlan> {
        let (m, n) = dims(shape);
        Some(plan(
            cuda_source!("fusion", "layernorm/01_naive.cu"),
            "layernorm_naive",
            m,
            n,
            false,
        ))
    }

    fn cpu(&self) -> Option<CpuPort> {
        Some(cpu_naive)
    }
}

/// CPU port of rung 01: per row, a strict left-to-right sum for the mean (a chain of
/// dependent adds the compiler may not reorder), another for the variance, then the write.
fn cpu_naive(shape: &Shape, inputs: &[&[f32]], out: &mut [f32]) {
    let (_, n) = dims(shape);
    let (x, gamma, beta) = (inputs[0], inputs[1], inputs[2]);
    by_rows(n, x, out, |x, y| {
        let mut sum = 0.0f32;
        for &v in x {
            sum += v;
        }
        let mean = sum / n as f32;
        let mut sq = 0.0f32;
        for &v in x {
            sq += (v - mean) * (v - mean);
        }
        let rstd = 1.0 / (sq / n as f32 + EPS).sqrt();
        write_row(x, gamma, beta, mean, rstd, y);
    });
}

/// `layernorm/02_warp.cu`: one warp per row, strided lanes, shuffle reductions.
pub struct LayernormWarp;

impl Kernel for LayernormWarp {
    fn lineage(&self) -> Option<Lineage> {
        Some(Lineage {
            parent: Some("layernorm-naive"),
            idea: "one warp per row: the lanes stride the row, so each load is one coalesced line, the sums are reduced by warp shuffles, and M rows make 32 x M threads",
            bound: Some(Bound::Latency),
        })
    }

    fn info(&self) -> KernelInfo {
        info(
            "layernorm-warp",
            2,
            "one warp per row: coalesced strided lanes, mean and variance by __shfl_xor_sync",
        )
    }

    fn cuda(&self, shape: &Shape) -> Option<CudaPlan> {
        let (m, n) = dims(shape);
        Some(plan(
            cuda_source!("fusion", "layernorm/02_warp.cu"),
            "layernorm_warp",
            m,
            n,
            true,
        ))
    }

    fn cpu(&self) -> Option<CpuPort> {
        Some(cpu_warp)
    }
}

/// CPU port of rung 02: each sum as the warp computes it, 32 lane accumulators over a
/// strided share of the row combined by the shuffle butterfly. The 32 independent chains are
/// what lets the compiler vectorize the sums, where rung 01's single chain cannot be.
fn cpu_warp(shape: &Shape, inputs: &[&[f32]], out: &mut [f32]) {
    let (_, n) = dims(shape);
    let (x, gamma, beta) = (inputs[0], inputs[1], inputs[2]);
    by_rows(n, x, out, |x, y| {
        let mean = warp_sum(x.iter().copied()) / n as f32;
        let sq = warp_sum(x.iter().map(|&v| (v - mean) * (v - mean)));
        let rstd = 1.0 / (sq / n as f32 + EPS).sqrt();
        write_row(x, gamma, beta, mean, rstd, y);
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rows::LANES;

    /// Every port against the f64 reference on random inputs (never zeros): a single element,
    /// rows shorter than a warp, N not a multiple of 32, more rows than one rayon task.
    #[test]
    fn ports_agree_with_the_reference() {
        for &(m, n) in &[(1, 1), (1, 7), (3, 5), (37, 130), (17, 64), (5, 1003)] {
            let shape = Shape::Layernorm { m, n };
            let x = kernel::testing::inputs(&shape, 7);
            let want = kernel::reference::reference(&shape, &x);
            let refs: Vec<&[f32]> = x.iter().map(Vec::as_slice).collect();
            for kern in kernels() {
                let port = kern.cpu().expect("every layernorm rung has a CPU port");
                let mut out = vec![f32::NAN; m * n];
                port(&shape, &refs, &mut out);
                let err = kernel::testing::relative_error(&out, &want);
                assert!(err < 1e-5, "{} {m}x{n}: error {err}", kern.info().id);
            }
        }
    }

    #[test]
    fn the_warp_rung_launches_a_warp_per_row() {
        let plan = LayernormWarp
            .cuda(&Shape::Layernorm { m: 17, n: 5 })
            .expect("a plan");
        let l = plan.launches().next().expect("one launch");
        let warps = l.grid[0] as usize * l.block[0] as usize / LANES;
        assert!((17..17 + 8).contains(&warps), "{warps} warps for 17 rows");
        let naive = LayernormNaive
            .cuda(&Shape::Layernorm { m: 17, n: 5 })
            .expect("a plan");
        let l = naive.launches().next().expect("one launch");
        assert_eq!(l.grid[0], 1, "17 rows fit one block of threads");
    }
}
