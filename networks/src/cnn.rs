//! The small CNN's layers (`kernel::network::cnn`): the convolution is the row's rung; ReLU
//! with pooling, the fully connected layers and the softmax are fixed.

use super::Parts;
use kernel::network::cnn::*;
use kernel::network::{Category, Graph, Layer};
use kernel::{Activation, At, Buf, Kernel, Shape, Unsupported};

/// Fixed layers: ReLU folded into max pooling, the fused linear layer, a warp per softmax row.
const POOL: &str = "pool-fused";
const LINEAR: &str = "linear-fused";
const SOFTMAX: &str = "softmax-warp";

pub fn graph(shape: &Shape, conv: &dyn Kernel, parts: &Parts) -> Result<Graph, Unsupported> {
    let Shape::Cnn { b } = *shape else {
        unreachable!("a CNN row was given {shape}")
    };
    let [c1, c2] = conv_shapes(b);
    let (pool, linear, softmax) = (parts.get(POOL)?, parts.get(LINEAR)?, parts.get(SOFTMAX)?);
    let mut g = Graph::new(shape);
    let a1 = g.activation("conv 1 out", c1.output().len());
    let a2 = g.activation("pool 1 out", b * MAPS1 * POOL1_OUT * POOL1_OUT);
    let a3 = g.activation("conv 2 out", c2.output().len());
    let a4 = g.activation("pool 2 out", b * FLAT);
    let a5 = g.activation("fc 1 out", b * HIDDEN);
    let a6 = g.activation("logits", b * CLASSES);
    let input = |i| Buf::Input(i).at(0);
    let pool_shape = |c, side, p| Shape::Pool {
        b,
        c,
        h: side,
        w: side,
        p,
    };
    let fc = |n, k, act| Shape::Linear { m: b, n, k, act };
    use Category::{Convolution, Elementwise, Gemm};
    let mut add = |name, cat, k: &dyn Kernel, s: Shape, ins: &[At], out: Buf| {
        g.push(Layer::rung(name, cat, k, s, ins, out.at(0))?);
        Ok::<(), Unsupported>(())
    };
    add("conv 1", Convolution, conv, c1, &[input(0), input(1)], a1)?;
    let pool1 = pool_shape(MAPS1, CONV1_OUT, POOL1);
    add(
        "ReLU + max pool 2",
        Elementwise,
        pool,
        pool1,
        &[a1.at(0)],
        a2,
    )?;
    add("conv 2", Convolution, conv, c2, &[a2.at(0), input(2)], a3)?;
    let pool2 = pool_shape(MAPS2, CONV2_OUT, POOL2);
    add(
        "ReLU + max pool 4",
        Elementwise,
        pool,
        pool2,
        &[a3.at(0)],
        a4,
    )?;
    let fc1 = fc(HIDDEN, FLAT, Activation::Relu);
    add(
        "FC 1 + ReLU",
        Gemm,
        linear,
        fc1,
        &[a4.at(0), input(3), input(4)],
        a5,
    )?;
    let fc2 = fc(CLASSES, HIDDEN, Activation::None);
    add(
        "FC 2",
        Gemm,
        linear,
        fc2,
        &[a5.at(0), input(5), input(6)],
        a6,
    )?;
    let sm = Shape::Softmax { m: b, n: CLASSES };
    add(
        "softmax",
        Elementwise,
        softmax,
        sm,
        &[a6.at(0)],
        Buf::Output,
    )?;
    Ok(g)
}
