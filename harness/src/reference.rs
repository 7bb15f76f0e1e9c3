//! Higher-precision references: every workload computed in f64 on the CPU from the same f32
//! inputs the kernels see. The GEMM is blocked and parallel, fast enough to check 4096^3 in
//! seconds on two cores.

use kernel::{Shape, Workload};
use rayon::prelude::*;

/// The exact (f64) output of `shape` for `inputs` ([`Shape::inputs`] order).
pub fn reference(shape: &Shape, inputs: &[Vec<f32>]) -> Vec<f64> {
    match *shape {
        Shape::Gemm { m, n, k } => gemm_f64(m, n, k, &inputs[0], &inputs[1], false),
        Shape::Linear { m, n, k, act } => {
            let mut y = gemm_f64(m, n, k, &inputs[0], &inputs[1], true);
            let bias = &inputs[2];
            y.par_chunks_mut(n).for_each(|row| {
                for (v, &b) in row.iter_mut().zip(bias) {
                    *v = act.apply_f64(*v + f64::from(b));
                }
            });
            y
        }
        Shape::Conv { .. } => conv_f64(shape, &inputs[0], &inputs[1]),
        Shape::Attention { .. } => attention_f64(shape, &inputs[0], &inputs[1], &inputs[2]),
    }
}

/// What the reference column of a table says for `workload`.
pub fn describe(workload: Workload) -> &'static str {
    match workload {
        Workload::Gemm | Workload::Linear => "f64 blocked GEMM on the CPU",
        Workload::Conv => "f64 direct convolution on the CPU",
        Workload::Attention => "f64 softmax attention on the CPU",
    }
}

/// Rows of C per task and the K/N block kept in cache (128 x 256 f64 = 256 KiB).
const BAND: usize = 16;
const KB: usize = 128;
const NB: usize = 256;

/// Row-major C[M,N] = A[M,K] * B[K,N] in f64 (`b_transposed`: B given as [N,K]).
pub fn gemm_f64(
    m: usize,
    n: usize,
    k: usize,
    a: &[f32],
    b: &[f32],
    b_transposed: bool,
) -> Vec<f64> {
    assert_eq!(a.len(), m * k);
    assert_eq!(b.len(), k * n);
    // B as f64, [K,N] row-major, so the inner loop runs along contiguous rows.
    let bt: Vec<f64> = if b_transposed {
        let mut t = vec![0.0; k * n];
        t.par_chunks_mut(n).enumerate().for_each(|(kk, row)| {
            for (j, v) in row.iter_mut().enumerate() {
                *v = f64::from(b[j * k + kk]);
            }
        });
        t
    } else {
        b.par_iter().map(|&v| f64::from(v)).collect()
    };
    let mut c = vec![0.0f64; m * n];
    c.par_chunks_mut(BAND * n)
        .enumerate()
        .for_each(|(band, c_band)| {
            let row0 = band * BAND;
            let rows = c_band.len() / n;
            for k0 in (0..k).step_by(KB) {
                let k1 = (k0 + KB).min(k);
                for n0 in (0..n).step_by(NB) {
                    let n1 = (n0 + NB).min(n);
                    // Four rows at a time share every load of B.
                    let mut i = 0;
                    while i < rows {
                        let take = (rows - i).min(4);
                        let mut acc = [[0.0f64; NB]; 4];
                        for kk in k0..k1 {
                            let bseg = &bt[kk * n + n0..kk * n + n1];
                            for (r, acc_r) in acc.iter_mut().enumerate().take(take) {
                                let av = f64::from(a[(row0 + i + r) * k + kk]);
                                for (x, &bv) in acc_r.iter_mut().zip(bseg) {
                                    *x += av * bv;
                                }
                            }
                        }
                        for (r, acc_r) in acc.iter().enumerate().take(take) {
                            let dst = &mut c_band[(i + r) * n + n0..(i + r) * n + n1];
                            for (d, &v) in dst.iter_mut().zip(acc_r) {
                                *d += v;
                            }
                        }
                        i += take;
                    }
                }
            }
        });
    c
}

fn conv_f64(shape: &Shape, x: &[f32], w: &[f32]) -> Vec<f64> {
    let Shape::Conv {
        b,
        c,
        m,
        h,
        w: width,
        k,
    } = *shape
    else {
        unreachable!("conv shape")
    };
    let (ho, wo) = Shape::conv_out(h, width, k);
    let mut y = vec![0.0f64; b * m * ho * wo];
    y.par_chunks_mut(ho * wo)
        .enumerate()
        .for_each(|(bm, plane)| {
            let (bi, mi) = (bm / m, bm % m);
            for (p, out) in plane.iter_mut().enumerate() {
                let (oh, ow) = (p / wo, p % wo);
                let mut acc = 0.0f64;
                for ci in 0..c {
                    for p_ in 0..k {
                        for q in 0..k {
                            let xv = x[((bi * c + ci) * h + oh + p_) * width + ow + q];
                            let wv = w[((mi * c + ci) * k + p_) * k + q];
                            acc += f64::from(xv) * f64::from(wv);
                        }
                    }
                }
                *out = acc;
            }
        });
    y
}

fn attention_f64(shape: &Shape, q: &[f32], kmat: &[f32], v: &[f32]) -> Vec<f64> {
    let Shape::Attention { b, h, s, d, causal } = *shape else {
        unreachable!("attention shape")
    };
    let scale = 1.0 / (d as f64).sqrt();
    let mut o = vec![0.0f64; b * h * s * d];
    o.par_chunks_mut(d).enumerate().for_each(|(row, out)| {
        let head = row / s;
        let i = row % s;
        let base = head * s * d;
        let qi = &q[base + i * d..base + (i + 1) * d];
        let keys = if causal { i + 1 } else { s };
        let scores: Vec<f64> = (0..keys)
            .map(|j| {
                let kj = &kmat[base + j * d..base + (j + 1) * d];
                qi.iter()
                    .zip(kj)
                    .map(|(&x, &y)| f64::from(x) * f64::from(y))
                    .sum::<f64>()
                    * scale
            })
            .collect();
        let max = scores.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let weights: Vec<f64> = scores.iter().map(|s| (s - max).exp()).collect();
        let total: f64 = weights.iter().sum();
        for (j, wgt) in weights.iter().enumerate() {
            let vj = &v[base + j * d..base + (j + 1) * d];
            for (x, &y) in out.iter_mut().zip(vj) {
                *x += wgt / total * f64::from(y);
            }
        }
    });
    o
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gemm_triple_loop(m: usize, n: usize, k: usize, a: &[f32], b: &[f32]) -> Vec<f64> {
        let mut c = vec![0.0; m * n];
        for i in 0..m {
            for j in 0..n {
                c[i * n + j] = (0..k)
                    .map(|p| f64::from(a[i * k + p]) * f64::from(b[p * n + j]))
                    .sum();
            }
        }
        c
    }

    #[test]
    fn blocked_gemm_matches_the_triple_loop_on_awkward_shapes() {
        for (m, n, k) in [(1, 1, 1), (5, 300, 129), (37, 17, 260), (64, 64, 64)] {
            let shape = Shape::gemm(m, n, k);
            let x = crate::inputs::random_inputs(&shape, 3);
            let got = gemm_f64(m, n, k, &x[0], &x[1], false);
            let want = gemm_triple_loop(m, n, k, &x[0], &x[1]);
            for (g, w) in got.iter().zip(&want) {
                assert!((g - w).abs() < 1e-9, "{m}x{n}x{k}: {g} vs {w}");
            }
        }
    }

    #[test]
    fn transposed_b_is_the_same_product() {
        let (m, n, k) = (9, 13, 7);
        let s = Shape::gemm(m, n, k);
        let x = crate::inputs::random_inputs(&s, 5);
        let mut bt = vec![0.0f32; n * k];
        for p in 0..k {
            for j in 0..n {
                bt[j * k + p] = x[1][p * n + j];
            }
        }
        assert_eq!(
            gemm_f64(m, n, k, &x[0], &x[1], false),
            gemm_f64(m, n, k, &x[0], &bt, true)
        );
    }

    #[test]
    fn attention_rows_are_convex_combinations_of_v() {
        let s = Shape::Attention {
            b: 1,
            h: 1,
            s: 3,
            d: 2,
            causal: true,
        };
        let v = vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0];
        let o = attention_f64(&s, &[0.5; 6], &[0.25; 6], &v);
        assert_eq!(
            &o[..2],
            &[1.0, 2.0],
            "the first causal row sees only itself"
        );
        assert!((o[4] - 3.0).abs() < 1e-12, "equal scores average V");
    }
}
