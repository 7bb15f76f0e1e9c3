//! The encoder block's layers (`kernel::network::encoder`): the four projections run the
//! row's GEMM rung and the attention its attention rung; LayerNorm, the GEMMs' epilogues and
//! the head layout changes are fixed.

use super::Parts;
use crate::glue::{bias_act, merge_heads, split_heads};
use kernel::network::encoder::FFN;
use kernel::network::{Category, Graph, Layer};
use kernel::{Activation, Buf, Kernel, Shape, Unsupported};

const LAYERNORM: &str = "layernorm-warp";

pub fn graph(
    shape: &Shape,
    gemm: &dyn Kernel,
    attention: &dyn Kernel,
    parts: &Parts,
) -> Result<Graph, Unsupported> {
    let Shape::Encoder { b, s, e, h } = *shape else {
        unreachable!("an encoder row was given {shape}")
    };
    let (rows, d, f) = (b * s, e / h, FFN * e);
    let layernorm = parts.get(LAYERNORM)?;
    let mut g = Graph::new(shape);
    let input = |i| Buf::Input(i).at(0);
    let ln = |name: &str, x, gamma, beta, out: Buf| {
        let s = Shape::Layernorm { m: rows, n: e };
        Layer::rung(
            name,
            Category::Elementwise,
            layernorm,
            s,
            &[x, input(gamma), input(beta)],
            out.at(0),
        )
    };
    let mm = |name: &str, a: Buf, w, n, k, out: Buf| {
        let s = Shape::Gemm { m: rows, n, k };
        Layer::rung(
            name,
            Category::Gemm,
            gemm,
            s,
            &[a.at(0), input(w)],
            out.at(0),
        )
    };
    let ln1 = g.activation("LN 1 out", rows * e);
    let c_qkv = g.activation("QKV", rows * 3 * e);
    let qkv = g.activation("Q, K, V by head", rows * 3 * e);
    let o = g.activation("attention out", rows * e);
    let merged = g.activation("heads merged", rows * e);
    let c_o = g.activation("output projection", rows * e);
    let h1 = g.activation("residual 1", rows * e);
    let ln2 = g.activation("LN 2 out", rows * e);
    let c1 = g.activation("FFN 1", rows * f);
    let a1 = g.activation("GELU out", rows * f);
    let c2 = g.activation("FFN 2", rows * e);
    let heads = [b, s, h, d];
    let per = rows * e;
    g.push(ln("LayerNorm 1", input(0), 1, 2, ln1)?);
    g.push(mm("QKV projection", ln1, 3, 3 * e, e, c_qkv)?);
    g.push(split_heads(
        "bias + split heads",
        heads,
        c_qkv.at(0),
        input(4),
        qkv.at(0),
    ));
    let att = Shape::Attention {
        b,
        h,
        s,
        d,
        causal: false,
    };
    let qkv_at = [qkv.at(0), qkv.at(per), qkv.at(2 * per)];
    g.push(Layer::rung(
        "attention",
        Category::Attention,
        attention,
        att,
        &qkv_at,
        o.at(0),
    )?);
    g.push(merge_heads("merge heads", heads, o.at(0), merged.at(0)));
    g.push(mm("output projection", merged, 5, e, e, c_o)?);
    g.push(bias_act(
        "bias + residual",
        rows,
        e,
        Activation::None,
        c_o.at(0),
        input(6),
        Some(input(0)),
        h1.at(0),
    ));
    g.push(ln("LayerNorm 2", h1.at(0), 7, 8, ln2)?);
    g.push(mm("FFN 1", ln2, 9, f, e, c1)?);
    g.push(bias_act(
        "bias + GELU",
        rows,
        f,
        Activation::Gelu,
        c1.at(0),
        input(10),
        None,
        a1.at(0),
    ));
    g.push(mm("FFN 2", a1, 11, e, f, c2)?);
    g.push(bias_act(
        "bias + residual",
        rows,
        e,
        Activation::None,
        c2.at(0),
        input(12),
        Some(h1.at(0)),
        Buf::Output.at(0),
    ));
    Ok(g)
}
