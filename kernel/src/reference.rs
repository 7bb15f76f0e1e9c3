//! Higher-precision references: every workload computed in f64 on the CPU from the same f32
//! inputs the kernels see. The GEMM is blocked and parallel, fast enough to check 4096^3 in
//! seconds on two cores. Runs too large for a full reference are checked on a seeded sample
//! of their outputs ([`sampled`]), each computed exactly in f64.

use crate::{Shape, Workload};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
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
        Shape::Conv { .. } => conv_f64(shape, inputs),
        Shape::Attention { .. } => attention_f64(shape, &inputs[0], &inputs[1], &inputs[2]),
        Shape::Cnn { .. } | Shape::Encoder { .. } => crate::network::reference(shape, inputs),
        Shape::Eltwise { .. }
        | Shape::Rbf { .. }
        | Shape::Pool { .. }
        | Shape::Transpose { .. } => (0..shape.output().len())
            .into_par_iter()
            .map(|i| element_f64(shape, inputs, i))
            .collect(),
        Shape::Layernorm { n, .. } | Shape::Softmax { n, .. } => inputs[0]
            .par_chunks(n)
            .flat_map_iter(|row| {
                let stats = RowStats::of(shape, row);
                (0..n).map(move |j| stats.output(shape, inputs, row, j))
            })
            .collect(),
        Shape::Reduce { .. } => vec![sum_f64(&inputs[0])],
    }
}

/// The sum of `x` in f64, by rayon's pairwise split: exact to f64's rounding, which is far
/// below an f32 kernel's.
fn sum_f64(x: &[f32]) -> f64 {
    x.par_iter().map(|&v| f64::from(v)).sum()
}

/// Output element `index` of a max pool at `shape`: the largest of `floor` and its window of
/// `inputs[0]` (the workload's ReLU is a floor of 0; minus infinity pools `x` itself). 0 for
/// a shape of another workload.
pub fn window_max(shape: &Shape, inputs: &[Vec<f32>], index: usize, floor: f64) -> f64 {
    let &Shape::Pool { h, w, p, .. } = shape else {
        return 0.0;
    };
    let (ho, wo) = Shape::pool_out(h, w, p);
    let (plane, o) = (index / (ho * wo), index % (ho * wo));
    let (oh, ow) = (o / wo, o % wo);
    let x = &inputs[0][plane * h * w..(plane + 1) * h * w];
    let mut max = floor;
    for r in 0..p {
        for q in 0..p {
            max = max.max(f64::from(x[(oh * p + r) * w + ow * p + q]));
        }
    }
    max
}

/// What the reference column of a table says for `workload`.
pub fn describe(workload: Workload) -> &'static str {
    match workload {
        Workload::Gemm | Workload::Linear => "f64 blocked GEMM on the CPU",
        Workload::Conv => "f64 direct convolution on the CPU",
        Workload::Attention => "f64 softmax attention on the CPU",
        Workload::Eltwise => "f64 bias + tanh GELU + residual on the CPU",
        Workload::Rbf => "f64 radial basis with cosine cutoff on the CPU",
        Workload::Layernorm => "f64 two-pass layer normalization on the CPU",
        Workload::Softmax => "f64 row softmax on the CPU",
        Workload::Pool => "f64 ReLU and max pooling on the CPU",
        Workload::Cnn | Workload::Encoder => "f64 forward pass of the same weights on the CPU",
        Workload::Reduce => "f64 sum on the CPU",
        Workload::Transpose => "the input's elements in transposed order",
    }
}

/// The f64 values of `count` output elements of `shape` picked at random with `seed` ([`pick`]),
/// and their indices. Costs a few dot products per element.
pub fn sampled(
    shape: &Shape,
    inputs: &[Vec<f32>],
    count: usize,
    seed: u64,
) -> (Vec<usize>, Vec<f64>) {
    let indices = pick(shape, count, seed);
    let values = at(shape, inputs, &indices);
    (indices, values)
}

/// `count` output elements of `shape` picked at random with `seed`, ascending and distinct, the
/// first and the last among them. Attention picks whole rows of O (their softmax is shared);
/// the other workloads single elements.
pub fn pick(shape: &Shape, count: usize, seed: u64) -> Vec<usize> {
    let len = shape.output().len();
    let mut rng = StdRng::seed_from_u64(seed ^ 0x5A3B_1E55);
    let mut indices: Vec<usize> = match *shape {
        Shape::Attention { d, .. } => {
            let rows = len / d;
            let mut picked: Vec<usize> = (0..count.div_ceil(d).min(rows))
                .map(|_| rng.random_range(0..rows))
                .collect();
            // The last row sees every key (causal) and the first only itself: keep both.
            picked.extend([0, rows - 1]);
            picked.sort_unstable();
            picked.dedup();
            picked.iter().flat_map(|r| r * d..(r + 1) * d).collect()
        }
        _ => {
            let mut v: Vec<usize> = (0..count.min(len))
                .map(|_| rng.random_range(0..len))
                .chain([0, len - 1])
                .collect();
            v.sort_unstable();
            v.dedup();
            v
        }
    };
    indices.shrink_to_fit();
    indices
}

/// The f64 values of the output elements at `indices` (ascending, distinct) of `shape`.
pub fn at(shape: &Shape, inputs: &[Vec<f32>], indices: &[usize]) -> Vec<f64> {
    match *shape {
        Shape::Attention { d, .. } => {
            // A row's softmax is shared by its elements: each row once, its elements picked.
            let mut rows: Vec<usize> = indices.iter().map(|i| i / d).collect();
            rows.dedup();
            let values: Vec<Vec<f64>> = rows
                .par_iter()
                .map(|&r| attention_row_f64(shape, &inputs[0], &inputs[1], &inputs[2], r))
                .collect();
            indices
                .iter()
                .map(|&i| {
                    let row = rows.binary_search(&(i / d)).unwrap_or_default();
                    values[row][i % d]
                })
                .collect()
        }
        // A network's outputs share every layer before the last: computed whole.
        Shape::Cnn { .. } | Shape::Encoder { .. } => {
            let all = crate::network::reference(shape, inputs);
            indices.iter().map(|&i| all[i]).collect()
        }
        _ => indices
            .par_iter()
            .map(|&i| element_f64(shape, inputs, i))
            .collect(),
    }
}

/// At most `count` of `candidates` (ascending output indices), spread evenly over them from
/// the first to the last, with their f64 values: a sampled reference at the elements a run
/// of some of the blocks wrote.
pub fn spread(
    shape: &Shape,
    inputs: &[Vec<f32>],
    candidates: &[usize],
    count: usize,
) -> (Vec<usize>, Vec<f64>) {
    let step = candidates.len().div_ceil(count.max(1)).max(1);
    let mut indices: Vec<usize> = candidates.iter().step_by(step).copied().collect();
    if let Some(&last) = candidates.last()
        && indices.last() != Some(&last)
    {
        indices.push(last);
    }
    let values = at(shape, inputs, &indices);
    (indices, values)
}

/// What a row-wise workload needs of a whole row before it can write any element: the mean
/// and 1 / sqrt(var + eps) of the layer normalization, the maximum and the sum of
/// exp(x - max) of the softmax. In f64, from the f32 row.
struct RowStats {
    center: f64,
    scale: f64,
}

impl RowStats {
    fn of(shape: &Shape, row: &[f32]) -> Self {
        let n = row.len() as f64;
        match shape {
            Shape::Layernorm { .. } => {
                let mean = row.iter().map(|&x| f64::from(x)).sum::<f64>() / n;
                let var = row
                    .iter()
                    .map(|&x| (f64::from(x) - mean).powi(2))
                    .sum::<f64>()
                    / n;
                Self {
                    center: mean,
                    scale: 1.0 / (var + crate::workload::LAYERNORM_EPS).sqrt(),
                }
            }
            Shape::Softmax { .. } => {
                let max = row
                    .iter()
                    .map(|&x| f64::from(x))
                    .fold(f64::NEG_INFINITY, f64::max);
                let sum = row.iter().map(|&x| (f64::from(x) - max).exp()).sum::<f64>();
                Self {
                    center: max,
                    scale: 1.0 / sum,
                }
            }
            other => unreachable!("{other} is not a row-wise workload"),
        }
    }

    /// Element `j` of the output row of `row`.
    fn output(&self, shape: &Shape, inputs: &[Vec<f32>], row: &[f32], j: usize) -> f64 {
        let x = f64::from(row[j]) - self.center;
        match shape {
            Shape::Layernorm { .. } => {
                x * self.scale * f64::from(inputs[1][j]) + f64::from(inputs[2][j])
            }
            _ => x.exp() * self.scale,
        }
    }
}

/// One output element in f64 (GEMM, linear, convolution, element-wise chain, radial basis,
/// pooling; a layer normalization or softmax element from its whole row).
fn element_f64(shape: &Shape, inputs: &[Vec<f32>], index: usize) -> f64 {
    let dot = |a: &mut dyn Iterator<Item = (f32, f32)>| -> f64 {
        a.map(|(x, y)| f64::from(x) * f64::from(y)).sum()
    };
    match *shape {
        Shape::Gemm { n, k, .. } => {
            let (i, j) = (index / n, index % n);
            let (a, b) = (&inputs[0], &inputs[1]);
            dot(&mut (0..k).map(|p| (a[i * k + p], b[p * n + j])))
        }
        Shape::Linear { n, k, act, .. } => {
            let (i, j) = (index / n, index % n);
            let (x, w, bias) = (&inputs[0], &inputs[1], &inputs[2]);
            let v = dot(&mut (0..k).map(|p| (x[i * k + p], w[j * k + p])));
            act.apply_f64(v + f64::from(bias[j]))
        }
        Shape::Conv { c, m, h, w, k, .. } => {
            let (ho, wo) = Shape::conv_out(h, w, k);
            let (x, f) = (&inputs[0], &inputs[1]);
            let (bm, p) = (index / (ho * wo), index % (ho * wo));
            let (bi, mi, oh, ow) = (bm / m, bm % m, p / wo, p % wo);
            let mut acc = 0.0;
            for ci in 0..c {
                for r in 0..k {
                    for q in 0..k {
                        let xv = x[((bi * c + ci) * h + oh + r) * w + ow + q];
                        let fv = f[((mi * c + ci) * k + r) * k + q];
                        acc += f64::from(xv) * f64::from(fv);
                    }
                }
            }
            acc
        }
        Shape::Eltwise { n, .. } => {
            let (x, bias, r) = (&inputs[0], &inputs[1], &inputs[2]);
            let v = f64::from(x[index]) + f64::from(bias[index % n]);
            crate::Activation::Gelu.apply_f64(v) + f64::from(r[index])
        }
        Shape::Rbf { k, .. } => {
            crate::workload::rbf_f64(f64::from(inputs[0][index / k]), index % k, k)
        }
        Shape::Layernorm { n, .. } | Shape::Softmax { n, .. } => {
            let row = &inputs[0][index / n * n..(index / n + 1) * n];
            RowStats::of(shape, row).output(shape, inputs, row, index % n)
        }
        // The ReLU: max(relu(x)) = max(0, max(x)).
        Shape::Pool { .. } => window_max(shape, inputs, index, 0.0),
        Shape::Reduce { .. } => sum_f64(&inputs[0]),
        // Y[j][i] = X[i][j]: element (j, i) of the N x M output.
        Shape::Transpose { m, n } => f64::from(inputs[0][index % m * n + index / m]),
        Shape::Attention { .. } => unreachable!("attention is sampled by rows"),
        Shape::Cnn { .. } | Shape::Encoder { .. } => unreachable!("networks are computed whole"),
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
    gemm_blocked(m, n, k, a, &bt)
}

/// Row-major C[M,N] = A[M,K] * B[K,N] in f64, B given in f64: bands of rows in parallel, K and
/// N in blocks that stay in cache, four rows sharing every load of B.
pub fn gemm_blocked<T: Copy + Into<f64> + Sync>(
    m: usize,
    n: usize,
    k: usize,
    a: &[T],
    bt: &[f64],
) -> Vec<f64> {
    assert_eq!(a.len(), m * k);
    assert_eq!(bt.len(), k * n);
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
                                let av: f64 = a[(row0 + i + r) * k + kk].into();
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

fn conv_f64(shape: &Shape, inputs: &[Vec<f32>]) -> Vec<f64> {
    (0..shape.output().len())
        .into_par_iter()
        .map(|i| element_f64(shape, inputs, i))
        .collect()
}

fn attention_f64(shape: &Shape, q: &[f32], kmat: &[f32], v: &[f32]) -> Vec<f64> {
    let Shape::Attention { b, h, s, .. } = *shape else {
        unreachable!("attention shape")
    };
    (0..b * h * s)
        .into_par_iter()
        .flat_map_iter(|row| attention_row_f64(shape, q, kmat, v, row))
        .collect()
}

/// Row `row` (over B x H x S) of the attention output, in f64.
fn attention_row_f64(shape: &Shape, q: &[f32], kmat: &[f32], v: &[f32], row: usize) -> Vec<f64> {
    let Shape::Attention { s, d, causal, .. } = *shape else {
        unreachable!("attention shape")
    };
    let scale = 1.0 / (d as f64).sqrt();
    let (head, i) = (row / s, row % s);
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
    let mut out = vec![0.0f64; d];
    for (j, wgt) in weights.iter().enumerate() {
        let vj = &v[base + j * d..base + (j + 1) * d];
        for (x, &y) in out.iter_mut().zip(vj) {
            *x += wgt / total * f64::from(y);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocked_gemm_matches_the_triple_loop_on_awkward_shapes() {
        for (m, n, k) in [(1, 1, 1), (5, 300, 129), (37, 17, 260), (64, 64, 64)] {
            let shape = Shape::gemm(m, n, k);
            let x = crate::testing::inputs(&shape, 3);
            let got = gemm_f64(m, n, k, &x[0], &x[1], false);
            let want = crate::testing::gemm_f64((m, n, k), &x[0], &x[1], |v| v);
            for (g, w) in got.iter().zip(&want) {
                assert!((g - w).abs() < 1e-9, "{m}x{n}x{k}: {g} vs {w}");
            }
        }
    }

    #[test]
    fn transposed_b_is_the_same_product() {
        let (m, n, k) = (9, 13, 7);
        let s = Shape::gemm(m, n, k);
        let x = crate::testing::inputs(&s, 5);
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
    fn sampled_references_match_the_full_ones() {
        let shapes = [
            Shape::gemm(37, 29, 41),
            Shape::Linear {
                m: 9,
                n: 13,
                k: 17,
                act: crate::Activation::Gelu,
            },
            Shape::Conv {
                b: 3,
                c: 2,
                m: 5,
                h: 9,
                w: 11,
                k: 3,
            },
            Shape::Attention {
                b: 2,
                h: 3,
                s: 7,
                d: 4,
                causal: true,
            },
            Shape::Layernorm { m: 11, n: 37 },
            Shape::Softmax { m: 13, n: 9 },
            Shape::Transpose { m: 13, n: 7 },
            Shape::Pool {
                b: 2,
                c: 3,
                h: 13,
                w: 11,
                p: 2,
            },
        ];
        for shape in shapes {
            let x = crate::testing::inputs(&shape, 11);
            let full = reference(&shape, &x);
            let (idx, vals) = sampled(&shape, &x, 50, 1);
            assert!(
                idx.len() >= 40 && idx.windows(2).all(|w| w[0] < w[1]),
                "{shape}"
            );
            assert_eq!(idx[0], 0, "{shape}: the first element is always checked");
            assert_eq!(
                *idx.last().unwrap(),
                full.len() - 1,
                "{shape}: so is the last"
            );
            for (i, v) in idx.iter().zip(&vals) {
                assert!(
                    (full[*i] - v).abs() < 1e-12,
                    "{shape} [{i}]: {} vs {v}",
                    full[*i]
                );
            }
            // Spread over the elements some blocks wrote (every third, parts of rows).
            let written: Vec<usize> = (5..full.len()).step_by(3).collect();
            let (idx, vals) = spread(&shape, &x, &written, 10);
            assert!(
                idx.len() <= 11 && idx.len() >= 10.min(written.len()),
                "{shape}"
            );
            assert_eq!(
                (idx.first(), idx.last()),
                (written.first(), written.last()),
                "{shape}"
            );
            assert!(idx.iter().all(|i| written.contains(i)), "{shape}");
            for (i, v) in idx.iter().zip(&vals) {
                assert!((full[*i] - v).abs() < 1e-12, "{shape} [{i}]");
            }
        }
    }

    #[test]
    fn the_transpose_reference_puts_x_row_i_in_column_i() {
        let (m, n) = (3, 5);
        let x: Vec<f32> = (0..m * n).map(|i| i as f32 + 0.5).collect();
        let y = reference(&Shape::Transpose { m, n }, std::slice::from_ref(&x));
        for (i, j) in (0..m).flat_map(|i| (0..n).map(move |j| (i, j))) {
            assert_eq!(y[j * m + i], f64::from(x[i * n + j]), "X[{i}][{j}]");
        }
    }

    #[test]
    fn row_references_follow_their_definitions() {
        // Layer normalization: each row has mean beta and, with gamma = 1, variance
        // var / (var + eps).
        let (m, n) = (3, 6);
        let x: Vec<f32> = (0..m * n).map(|i| (i * 7 % 5) as f32 - 1.5).collect();
        let y = reference(
            &Shape::Layernorm { m, n },
            &[x.clone(), vec![1.0; n], vec![0.25; n]],
        );
        for row in y.chunks(n) {
            let mean = row.iter().sum::<f64>() / n as f64;
            assert!((mean - 0.25).abs() < 1e-12, "{row:?}");
            let var = row.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / n as f64;
            assert!((var - 1.0).abs() < 1e-4, "{row:?}");
        }
        // Softmax: rows sum to 1 and keep the order of their inputs; a large shift of the
        // whole row changes nothing (the maximum is subtracted).
        let s = reference(&Shape::Softmax { m, n }, std::slice::from_ref(&x));
        let shifted: Vec<f32> = x.iter().map(|v| v + 80.0).collect();
        let t = reference(&Shape::Softmax { m, n }, &[shifted]);
        for (row, xr) in s.chunks(n).zip(x.chunks(n)) {
            assert!((row.iter().sum::<f64>() - 1.0).abs() < 1e-12);
            for a in 0..n {
                for b in 0..n {
                    assert_eq!(xr[a] < xr[b], row[a] < row[b]);
                }
            }
        }
        for (a, b) in s.iter().zip(&t) {
            assert!((a - b).abs() < 1e-12, "{a} vs {b}");
        }
    }

    #[test]
    fn pooling_takes_the_window_maximum_after_the_relu() {
        // One 5 x 5 image, 2 x 2 windows: the last row and column are dropped.
        let x: Vec<f32> = (0..25)
            .map(|i| if i % 3 == 0 { -(i as f32) } else { i as f32 })
            .collect();
        let shape = Shape::Pool {
            b: 1,
            c: 1,
            h: 5,
            w: 5,
            p: 2,
        };
        let y = reference(&shape, &[x]);
        // Window (0,0) holds 0, 1, 5, -6; (0,1) 2, -3, 7, 8; (1,0) 10, 11, -15, 16; (1,1)
        // -12, 13, 17, -18.
        assert_eq!(y, vec![5.0, 8.0, 16.0, 17.0]);
        let negative = reference(&shape, &[vec![-1.0; 25]]);
        assert_eq!(negative, vec![0.0; 4], "a window of negatives pools to 0");
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
