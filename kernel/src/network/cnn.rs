//! The small convolutional network: a LeNet-5-like classifier of 86 x 86 single-channel
//! images, the network the convolution ladder's two layers come from.
//!
//! conv 1 (4 maps, 7 x 7) -> ReLU -> max pool 2 -> conv 2 (16 maps, 7 x 7) -> ReLU ->
//! max pool 4 -> FC 32 -> ReLU -> FC 10 -> softmax. The convolutions have no bias, as the
//! convolution ladder computes them; the fully connected layers have one.

use crate::workload::{Shape, TensorSpec};
use rayon::prelude::*;

pub const IMAGE: usize = 86;
pub const FILTER: usize = 7;
pub const MAPS1: usize = 4;
pub const POOL1: usize = 2;
pub const MAPS2: usize = 16;
pub const POOL2: usize = 4;
pub const HIDDEN: usize = 32;
pub const CLASSES: usize = 10;

/// Side of conv 1's output (80).
pub const CONV1_OUT: usize = IMAGE + 1 - FILTER;
/// Side after the first pooling (40).
pub const POOL1_OUT: usize = CONV1_OUT / POOL1;
/// Side of conv 2's output (34).
pub const CONV2_OUT: usize = POOL1_OUT + 1 - FILTER;
/// Side after the second pooling (8: the windows that fit; the last two rows and columns
/// are dropped, as a pooling layer without padding does).
pub const POOL2_OUT: usize = CONV2_OUT / POOL2;
/// Features into FC 1 (16 x 8 x 8 = 1024).
pub const FLAT: usize = MAPS2 * POOL2_OUT * POOL2_OUT;

/// The shapes of the two convolution layers at batch `b`.
pub fn conv_shapes(b: usize) -> [Shape; 2] {
    [
        Shape::Conv {
            b,
            c: 1,
            m: MAPS1,
            h: IMAGE,
            w: IMAGE,
            k: FILTER,
        },
        Shape::Conv {
            b,
            c: MAPS1,
            m: MAPS2,
            h: POOL1_OUT,
            w: POOL1_OUT,
            k: FILTER,
        },
    ]
}

pub fn inputs(b: usize) -> Vec<TensorSpec> {
    vec![
        TensorSpec::new("x", &[b, 1, IMAGE, IMAGE]),
        TensorSpec::weight("conv1", &[MAPS1, 1, FILTER, FILTER], FILTER * FILTER),
        TensorSpec::weight(
            "conv2",
            &[MAPS2, MAPS1, FILTER, FILTER],
            MAPS1 * FILTER * FILTER,
        ),
        TensorSpec::weight("fc1_w", &[HIDDEN, FLAT], FLAT),
        TensorSpec::weight("fc1_b", &[HIDDEN], FLAT),
        TensorSpec::weight("fc2_w", &[CLASSES, HIDDEN], HIDDEN),
        TensorSpec::weight("fc2_b", &[CLASSES], HIDDEN),
    ]
}

/// Multiply-adds count 2; a ReLU, a comparison of the pooling, an exponential count 1 each.
pub fn flops(b: usize) -> f64 {
    let [c1, c2] = conv_shapes(b);
    let b = b as f64;
    let relu_pool = |maps: usize, side: usize| 2.0 * b * (maps * side * side) as f64;
    let fc = |n: usize, k: usize| 2.0 * b * (n * k + n) as f64;
    c1.flops()
        + c2.flops()
        + relu_pool(MAPS1, CONV1_OUT)
        + relu_pool(MAPS2, CONV2_OUT)
        + fc(HIDDEN, FLAT)
        + b * HIDDEN as f64
        + fc(CLASSES, HIDDEN)
        + 3.0 * b * CLASSES as f64
}

/// The forward pass in f64 for one image (`x` of 86 x 86), the class probabilities.
fn forward_one(x: &[f32], w: &[Vec<f64>]) -> Vec<f64> {
    let conv = |input: &[f64], c: usize, side: usize, f: &[f64], m: usize| {
        let out = side + 1 - FILTER;
        let mut y = vec![0.0f64; m * out * out];
        for mi in 0..m {
            for oh in 0..out {
                for ow in 0..out {
                    let mut acc = 0.0;
                    for ci in 0..c {
                        for r in 0..FILTER {
                            for q in 0..FILTER {
                                acc += input[(ci * side + oh + r) * side + ow + q]
                                    * f[((mi * c + ci) * FILTER + r) * FILTER + q];
                            }
                        }
                    }
                    y[(mi * out + oh) * out + ow] = acc;
                }
            }
        }
        y
    };
    let relu_pool = |input: &[f64], maps: usize, side: usize, p: usize| {
        let out = side / p;
        let mut y = vec![0.0f64; maps * out * out];
        for mi in 0..maps {
            for oh in 0..out {
                for ow in 0..out {
                    let mut best = 0.0f64; // ReLU: the maximum is at least 0
                    for r in 0..p {
                        for q in 0..p {
                            best = best.max(input[(mi * side + oh * p + r) * side + ow * p + q]);
                        }
                    }
                    y[(mi * out + oh) * out + ow] = best;
                }
            }
        }
        y
    };
    let dense = |input: &[f64], wt: &[f64], bias: &[f64], relu: bool| -> Vec<f64> {
        bias.iter()
            .enumerate()
            .map(|(j, &b)| {
                let k = input.len();
                let v: f64 = input.iter().zip(&wt[j * k..]).map(|(a, b)| a * b).sum();
                if relu { (v + b).max(0.0) } else { v + b }
            })
            .collect()
    };
    let x: Vec<f64> = x.iter().map(|&v| f64::from(v)).collect();
    let a = conv(&x, 1, IMAGE, &w[0], MAPS1);
    let a = relu_pool(&a, MAPS1, CONV1_OUT, POOL1);
    let a = conv(&a, MAPS1, POOL1_OUT, &w[1], MAPS2);
    let a = relu_pool(&a, MAPS2, CONV2_OUT, POOL2);
    let a = dense(&a, &w[2], &w[3], true);
    let logits = dense(&a, &w[4], &w[5], false);
    super::softmax_f64(&logits)
}

/// The network's output for the batch in f64 from the same f32 inputs the kernels see.
pub fn forward_f64(b: usize, inputs: &[Vec<f32>]) -> Vec<f64> {
    let w: Vec<Vec<f64>> = inputs[1..]
        .iter()
        .map(|t| t.iter().map(|&v| f64::from(v)).collect())
        .collect();
    let per = IMAGE * IMAGE;
    (0..b)
        .into_par_iter()
        .flat_map_iter(|i| forward_one(&inputs[0][i * per..(i + 1) * per], &w))
        .collect()
}
