//! CPU ports of the flash rungs: one tiled online-softmax routine, configured the way each
//! kernel works (tile sizes, when the output is normalized, whether fully masked tiles are
//! skipped, 16-bit rounding of the operands).

use half::{bf16, f16};
use kernel::{AttentionDims, Shape, attention_dims};
use rayon::prelude::*;

/// How a rung walks the problem.
#[derive(Clone, Copy)]
pub struct Tiling {
    /// Query rows that share each K/V tile (a block of the kernel).
    pub rows: usize,
    /// Keys per tile.
    pub keys: usize,
    /// Rung 02 (FlashAttention-1): keep the output normalized by l after every tile. The later
    /// rungs (FlashAttention-2) divide once at the end.
    pub normalize_each_tile: bool,
    /// Stop a block's tiles after its last row when causal (rung 04 on).
    pub skip_masked_tiles: bool,
    /// Round Q, K, V and P to this 16-bit type, as the tensor-core rungs store them.
    pub round: Option<Round>,
    /// Rungs 03 on: a row's scores of a tile are computed key-parallel (a lane per key on the
    /// GPU) from the tile transposed once per block, instead of one dot product per key.
    pub keys_parallel: bool,
}

/// A 16-bit storage type (round to nearest even).
#[derive(Clone, Copy)]
pub enum Round {
    F16,
    Bf16,
}

impl Round {
    #[inline]
    fn apply(self, x: f32) -> f32 {
        match self {
            Self::F16 => f16::from_f32(x).to_f32(),
            Self::Bf16 => bf16::from_f32(x).to_f32(),
        }
    }
}

/// Tiled attention with the online softmax: for each block of query rows, K and V tiles are
/// visited once; each row keeps its running maximum `m`, sum `l` and output accumulator, and
/// rescales the accumulator by exp(m_old - m_new) when the maximum grows. Blocks of all heads
/// are spread over rayon's threads.
pub fn flash(t: Tiling, shape: &Shape, inputs: &[&[f32]], out: &mut [f32]) {
    let dims = attention_dims(shape);
    let rounded: Option<Vec<Vec<f32>>> = t.round.map(|r| {
        inputs[..3]
            .iter()
            .map(|x| x.par_iter().map(|&v| r.apply(v)).collect())
            .collect()
    });
    let (q, k, v) = match &rounded {
        Some(r) => (&r[0][..], &r[1][..], &r[2][..]),
        None => (inputs[0], inputs[1], inputs[2]),
    };
    let hl = dims.head_len();
    // Blocks never span two heads; the last block of a head may be short.
    out.par_chunks_mut(hl).enumerate().for_each(|(h, oh)| {
        let base = h * hl;
        let (qh, kh, vh) = (
            &q[base..base + hl],
            &k[base..base + hl],
            &v[base..base + hl],
        );
        oh.par_chunks_mut(t.rows * dims.d)
            .enumerate()
            .for_each(|(b, ob)| block(t, &dims, b * t.rows, qh, kh, vh, ob));
    });
}

/// One block of query rows `i0..` of one head into `o` (its rows of the output).
fn block(
    t: Tiling,
    dims: &AttentionDims,
    i0: usize,
    q: &[f32],
    k: &[f32],
    v: &[f32],
    o: &mut [f32],
) {
    let (s, d, scale) = (dims.s, dims.d, dims.scale());
    let rows = o.len() / d;
    let mut m = vec![f32::NEG_INFINITY; rows];
    let mut l = vec![0.0f32; rows];
    o.fill(0.0);
    let mut p = vec![0.0f32; t.keys];
    let kv_end = if dims.causal && t.skip_masked_tiles {
        s.min(i0 + rows)
    } else {
        s
    };
    let mut kt = vec![0.0f32; if t.keys_parallel { d * t.keys } else { 0 }];
    for j0 in (0..kv_end).step_by(t.keys) {
        let j1 = (j0 + t.keys).min(s);
        let n = j1 - j0;
        if t.keys_parallel {
            // The tile as [D][keys], shared by every row of the block.
            for (j, kj) in k[j0 * d..j1 * d].chunks(d).enumerate() {
                for (c, &x) in kj.iter().enumerate() {
                    kt[c * n + j] = x;
                }
            }
        }
        for r in 0..rows {
            let i = i0 + r;
            let qi = &q[i * d..(i + 1) * d];
            let visible = dims.keys_for(i).min(j1);
            let p = &mut p[..n];
            if t.keys_parallel {
                // Each key's partial sum advances together: the inner loop vectorizes.
                p.fill(0.0);
                for (&qc, ktc) in qi.iter().zip(kt.chunks(n)) {
                    for (x, &y) in p.iter_mut().zip(ktc) {
                        *x += qc * y;
                    }
                }
            } else {
                for (j, pj) in (j0..j1).zip(p.iter_mut()) {
                    let kj = &k[j * d..(j + 1) * d];
                    *pj = qi.iter().zip(kj).map(|(a, b)| a * b).sum::<f32>();
                }
            }
            let mut tile_max = f32::NEG_INFINITY;
            for (j, pj) in (j0..j1).zip(p.iter_mut()) {
                *pj = if j < visible {
                    *pj * scale
                } else {
                    f32::NEG_INFINITY
                };
                tile_max = tile_max.max(*pj);
            }
            let m_new = m[r].max(tile_max);
            if m_new == f32::NEG_INFINITY {
                continue; // no visible key yet in this row
            }
            let alpha = (m[r] - m_new).exp();
            let mut p_sum = 0.0f32;
            for pj in p.iter_mut() {
                let e = (*pj - m_new).exp();
                p_sum += e;
                *pj = t.round.map_or(e, |rd| rd.apply(e));
            }
            let l_new = l[r] * alpha + p_sum;
            let orow = &mut o[r * d..(r + 1) * d];
            let (keep, w) = if t.normalize_each_tile {
                (l[r] * alpha / l_new, 1.0 / l_new)
            } else {
                (alpha, 1.0)
            };
            orow.iter_mut().for_each(|x| *x *= keep);
            for (j, &pj) in (j0..j1).zip(p.iter()) {
                if pj == 0.0 {
                    continue;
                }
                let vj = &v[j * d..(j + 1) * d];
                let c = pj * w;
                for (x, &y) in orow.iter_mut().zip(vj) {
                    *x += c * y;
                }
            }
            m[r] = m_new;
            l[r] = l_new;
        }
    }
    if !t.normalize_each_tile {
        for (orow, &lr) in o.chunks_mut(d).zip(&l) {
            let inv = 1.0 / lr;
            orow.iter_mut().for_each(|x| *x *= inv);
        }
    }
}
