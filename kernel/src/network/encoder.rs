//! One transformer encoder block in the shape of a protein language model's layer
//! (pre-LayerNorm, as ESM-2's layers are):
//!
//! h = x + (MHA(LN1(x)) W_o + b_o),  y = h + (GELU(LN2(h) W_1 + b_1) W_2 + b_2)
//!
//! with MHA over `h` heads of `e / h` features (QKV by one `[E, 3E]` projection), no mask,
//! the FFN `4 E` wide, LayerNorm eps 1e-5 (biased variance), GELU by the tanh formula.
//! Weights are stored `[in, out]`, as the GEMM ladder's B operand is.

use super::{layernorm_f64, matmul_f64, softmax_f64};
use crate::workload::{Activation, TensorSpec};
use rayon::prelude::*;

/// The FFN's width over the hidden size.
pub const FFN: usize = 4;

pub fn inputs(b: usize, s: usize, e: usize) -> Vec<TensorSpec> {
    let f = FFN * e;
    vec![
        TensorSpec::new("x", &[b, s, e]),
        TensorSpec::new("ln1_gamma", &[e]),
        TensorSpec::new("ln1_beta", &[e]),
        TensorSpec::weight("w_qkv", &[e, 3 * e], e),
        TensorSpec::weight("b_qkv", &[3 * e], e),
        TensorSpec::weight("w_o", &[e, e], e),
        TensorSpec::weight("b_o", &[e], e),
        TensorSpec::new("ln2_gamma", &[e]),
        TensorSpec::new("ln2_beta", &[e]),
        TensorSpec::weight("w_1", &[e, f], e),
        TensorSpec::weight("b_1", &[f], e),
        TensorSpec::weight("w_2", &[f, e], f),
        TensorSpec::weight("b_2", &[e], f),
    ]
}

/// The four projections' multiply-adds (2 FLOP each) and attention's two products
/// (4 B H S^2 D = 4 B S^2 E); LayerNorm, softmax, GELU and the adds are below 1% at any
/// useful size and are not counted.
pub fn flops(b: usize, s: usize, e: usize) -> f64 {
    let rows = (b * s) as f64;
    let e = e as f64;
    let projections = 2.0 * rows * e * (3.0 * e + e + 2.0 * FFN as f64 * e);
    projections + 4.0 * rows * s as f64 * e
}

/// The block's output in f64 from the same f32 inputs the kernels see.
pub fn forward_f64(b: usize, s: usize, e: usize, heads: usize, inputs: &[Vec<f32>]) -> Vec<f64> {
    let t: Vec<Vec<f64>> = inputs
        .iter()
        .map(|v| v.iter().map(|&x| f64::from(x)).collect())
        .collect();
    let (x, rows, d) = (&t[0], b * s, e / heads);
    let f = FFN * e;
    let add_bias = |m: &mut [f64], bias: &[f64]| {
        m.par_chunks_mut(bias.len()).for_each(|row| {
            row.iter_mut().zip(bias).for_each(|(v, b)| *v += b);
        });
    };
    // Attention sub-block.
    let ln1 = layernorm_f64(x, e, &t[1], &t[2]);
    let mut qkv = matmul_f64(&ln1, rows, e, &t[3], 3 * e);
    add_bias(&mut qkv, &t[4]);
    let scale = 1.0 / (d as f64).sqrt();
    let qkv = &qkv;
    // Each (batch, head, query row) gives D outputs of the merged [B*S, E] matrix.
    let merged: Vec<f64> = (0..rows * heads)
        .into_par_iter()
        .flat_map_iter(|task| {
            let (r, hd) = (task / heads, task % heads);
            let bi = r / s;
            let q = &qkv[r * 3 * e + hd * d..][..d];
            let key_row = move |j: usize, which: usize| -> &[f64] {
                &qkv[(bi * s + j) * 3 * e + which * e + hd * d..][..d]
            };
            let scores: Vec<f64> = (0..s)
                .map(|j| q.iter().zip(key_row(j, 1)).map(|(a, b)| a * b).sum::<f64>() * scale)
                .collect();
            let p = softmax_f64(&scores);
            // P V a row of V at a time: rows lie contiguous, columns 3E apart.
            let mut out = vec![0.0f64; d];
            for (j, &pj) in p.iter().enumerate() {
                for (o, &v) in out.iter_mut().zip(key_row(j, 2)) {
                    *o += pj * v;
                }
            }
            out
        })
        .collect();
    let mut h = matmul_f64(&merged, rows, e, &t[5], e);
    add_bias(&mut h, &t[6]);
    h.par_iter_mut().zip(x).for_each(|(v, x)| *v += x);
    // FFN sub-block.
    let ln2 = layernorm_f64(&h, e, &t[7], &t[8]);
    let mut a = matmul_f64(&ln2, rows, e, &t[9], f);
    add_bias(&mut a, &t[10]);
    a.par_iter_mut()
        .for_each(|v| *v = Activation::Gelu.apply_f64(*v));
    let mut y = matmul_f64(&a, rows, f, &t[11], e);
    add_bias(&mut y, &t[12]);
    y.par_iter_mut().zip(&h).for_each(|(v, h)| *v += h);
    y
}
