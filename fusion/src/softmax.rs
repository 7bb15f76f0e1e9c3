//! The softmax of each row of X[M,N], Y = exp(x - max) / sum(exp(x - max)), as a ladder of its
//! own: one thread per row with three passes, then one warp per row with the maximum and the
//! sum in one online pass. The lesson is the mapping of threads to a row-wise reduction and the
//! passes over the row.

use crate::rows::{LANES, ROWS_PER_TASK, butterfly, thread_per_row, warp_per_row};
use kernel::{
    Arg, Bound, Buf, CpuPort, CudaPlan, CudaSource, Kernel, KernelInfo, Launch, Lineage, Precision,
    Role, Shape, Stage, Workload, cuda_source,
};
use rayon::prelude::*;

/// The softmax rungs of this crate, in ladder order.
pub fn kernels() -> Vec<Box<dyn Kernel>> {
    vec![Box::new(SoftmaxNaive), Box::new(SoftmaxWarp)]
}

/// `(m, n)` of a softmax shape. The harness only hands a kernel its own workload.
fn dims(shape: &Shape) -> (usize, usize) {
    match *shape {
        Shape::Softmax { m, n } => (m, n),
        other => panic!("a softmax kernel was given {other}"),
    }
}

fn info(id: &'static str, rung: u32, summary: &'static str) -> KernelInfo {
    KernelInfo {
        id: id.into(),
        workload: Workload::Softmax,
        stage: Stage::Fusion,
        precision: Precision::Fp32,
        role: Role::Rung,
        rung,
        summary: summary.into(),
    }
}

/// The one launch `(X, Y, M, N)` of a rung.
fn plan(source: CudaSource, entry: &'static str, m: usize, n: usize, warps: bool) -> CudaPlan {
    let (grid, block) = if warps {
        warp_per_row(m)
    } else {
        thread_per_row(m)
    };
    CudaPlan::single(
        1,
        Launch {
            source,
            entry: entry.into(),
            grid,
            block,
            dynamic_smem: 0,
            args: vec![
                Arg::Ptr(Buf::Input(0)),
                Arg::Ptr(Buf::Output),
                Arg::I32(m as i32),
                Arg::I32(n as i32),
            ],
        },
    )
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

/// The write pass: y = exp(x - max) / sum.
fn write_row(x: &[f32], max: f32, sum: f32, y: &mut [f32]) {
    let inv = 1.0 / sum;
    for (yv, &xv) in y.iter_mut().zip(x) {
        *yv = (xv - max).exp() * inv;
    }
}

/// `softmax/01_naive.cu`: one thread per row; the maximum, the sum of exponentials, the write.
pub struct SoftmaxNaive;

impl Kernel for SoftmaxNaive {
    fn lineage(&self) -> Option<Lineage> {
        Some(Lineage {
            parent: None,
            idea: "one thread per row walking it three times (maximum, sum of exp(x - max), write), as a CPU loop would",
            bound: None,
        })
    }

    fn info(&self) -> KernelInfo {
        info(
            "softmax-naive",
            1,
            "one thread per row: the maximum, the sum of exponentials, then the write",
        )
    }

    fn cuda(&self, shape: &Shape) -> Option<CudaPlan> {
        let (m, n) = dims(shape);
        Some(plan(
            cuda_source!("fusion", "softmax/01_naive.cu"),
            "softmax_naive",
            m,
            n,
            false,
        ))
    }

    fn cpu(&self) -> Option<CpuPort> {
        Some(cpu_naive)
    }
}

/// CPU port of rung 01: three passes over each row, each a single serial chain.
fn cpu_naive(shape: &Shape, inputs: &[&[f32]], out: &mut [f32]) {
    let (_, n) = dims(shape);
    by_rows(n, inputs[0], out, |x, y| {
        let mut max = x[0];
        for &v in &x[1..] {
            max = max.max(v);
        }
        let mut sum = 0.0f32;
        for &v in x {
            sum += (v - max).exp();
        }
        write_row(x, max, sum, y);
    });
}

/// `softmax/02_warp.cu`: one warp per row, online maximum and sum, shuffle merges.
pub struct SoftmaxWarp;

impl Kernel for SoftmaxWarp {
    fn lineage(&self) -> Option<Lineage> {
        Some(Lineage {
            parent: Some("softmax-naive"),
            idea: "two ideas: one warp per row (coalesced strided lanes, shuffle reductions, 32 x M threads) and the online maximum and sum, so the row is read twice instead of three times",
            bound: Some(Bound::Latency),
        })
    }

    fn info(&self) -> KernelInfo {
        info(
            "softmax-warp",
            2,
            "one warp per row: online max and sum in one pass, merged by __shfl_xor_sync, then the write",
        )
    }

    fn cuda(&self, shape: &Shape) -> Option<CudaPlan> {
        let (m, n) = dims(shape);
        Some(plan(
            cuda_source!("fusion", "softmax/02_warp.cu"),
            "softmax_warp",
            m,
            n,
            true,
        ))
    }

    fn cpu(&self) -> Option<CpuPort> {
        Some(cpu_warp)
    }
}

/// exp(m - top) for a running maximum m <= top, 0 for an empty lane (m = -inf).
fn rescale(m: f32, top: f32) -> f32 {
    if m == f32::NEG_INFINITY {
        0.0
    } else {
        (m - top).exp()
    }
}

/// The online maximum and sum of a row as the warp computes them: lane l folds elements l,
/// l + 32, ... into its running (max, sum), then the butterfly merges the 32 pairs.
fn online_stats(x: &[f32]) -> (f32, f32) {
    let mut lanes = [(f32::NEG_INFINITY, 0.0f32); LANES];
    for (j, &v) in x.iter().enumerate() {
        let (m, s) = &mut lanes[j % LANES];
        if v > *m {
            *s = *s * rescale(*m, v) + 1.0;
            *m = v;
        } else {
            *s += (v - *m).exp();
        }
    }
    butterfly(&mut lanes, |(m1, s1), (m2, s2)| {
        let top = m1.max(m2);
        (top, s1 * rescale(m1, top) + s2 * rescale(m2, top))
    });
    lanes[0]
}

/// CPU port of rung 02: the online statistics in one pass over the row, then the write pass.
fn cpu_warp(shape: &Shape, inputs: &[&[f32]], out: &mut [f32]) {
    let (_, n) = dims(shape);
    by_rows(n, inputs[0], out, |x, y| {
        let (max, sum) = online_stats(x);
        write_row(x, max, sum, y);
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every port against the f64 reference on random inputs (never zeros): a single element,
    /// rows shorter than a warp, N not a multiple of 32, more rows than one rayon task.
    #[test]
    fn ports_agree_with_the_reference() {
        for &(m, n) in &[(1, 1), (1, 7), (3, 5), (37, 130), (17, 64), (5, 1003)] {
            let shape = Shape::Softmax { m, n };
            let x = kernel::testing::inputs(&shape, 9);
            let want = kernel::reference::reference(&shape, &x);
            for kern in kernels() {
                let port = kern.cpu().expect("every softmax rung has a CPU port");
                let mut out = vec![f32::NAN; m * n];
                port(&shape, &[&x[0]], &mut out);
                let err = kernel::testing::relative_error(&out, &want);
                assert!(err < 1e-5, "{} {m}x{n}: error {err}", kern.info().id);
            }
        }
    }

    #[test]
    fn online_statistics_match_the_two_pass_ones_and_survive_large_inputs() {
        // Ascending (every element a new maximum), descending, and values whose exp overflows
        // f32 unless the maximum is subtracted.
        let rows: [Vec<f32>; 3] = [
            (0..100).map(|i| i as f32 / 10.0).collect(),
            (0..45).map(|i| -(i as f32) / 7.0).collect(),
            (0..70).map(|i| 90.0 + (i % 9) as f32).collect(),
        ];
        for x in &rows {
            let (m, s) = online_stats(x);
            let max = x.iter().copied().fold(f32::NEG_INFINITY, f32::max);
            let sum: f64 = x.iter().map(|&v| f64::from(v - max).exp()).sum();
            assert_eq!(m, max);
            assert!(((f64::from(s) - sum) / sum).abs() < 1e-6, "{s} vs {sum}");
        }
    }
}
