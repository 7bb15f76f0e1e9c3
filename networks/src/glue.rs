//! The glue layers of the networks (`kernel::network`): a GEMM rung's epilogue (bias,
//! activation, residual) and the head layout changes around attention. They are not rungs of
//! a ladder: they are checked through the networks' f64 forward pass, and stay the same
//! whichever rung a network swaps in.

use kernel::network::{Binding, Category, Layer, LayerCpu};
use kernel::{Activation, Arg, At, Buf, CudaPlan, Launch, cuda_source, div_ceil};
use rayon::prelude::*;
use std::sync::Arc;

const BLOCK: usize = 256;

fn launch(
    entry: &'static str,
    source: kernel::CudaSource,
    elements: usize,
    args: Vec<Arg>,
) -> Launch {
    Launch {
        source,
        entry: entry.into(),
        grid: [div_ceil(elements, BLOCK).max(1), 1, 1],
        block: [BLOCK as u32, 1, 1],
        dynamic_smem: 0,
        args,
    }
}

fn ptrs(n_inputs: usize) -> Vec<Arg> {
    (0..n_inputs)
        .map(|i| Arg::Ptr(Buf::Input(i)))
        .chain([Arg::Ptr(Buf::Output)])
        .collect()
}

fn layer(
    name: &str,
    category: Category,
    plan: CudaPlan,
    cpu: LayerCpu,
    inputs: Vec<Binding>,
    output: Binding,
) -> Layer {
    Layer {
        name: name.to_string(),
        category,
        rung: None,
        plan: Some(plan),
        cpu: Some(cpu),
        inputs,
        output,
    }
}

/// `Y[rows, n] = act(C + bias[n])`, plus `R` when given: a GEMM rung's epilogue.
#[allow(clippy::too_many_arguments)]
pub fn bias_act(
    name: &str,
    rows: usize,
    n: usize,
    act: Activation,
    c: At,
    bias: At,
    residual: Option<At>,
    out: At,
) -> Layer {
    let len = rows * n;
    let source = cuda_source!("networks", "bias_act.cu");
    let (entry, n_in) = match residual {
        Some(_) => ("net_bias_act_residual", 3),
        None => ("net_bias_act", 2),
    };
    let mut args = ptrs(n_in);
    args.extend([
        Arg::I32(rows as i32),
        Arg::I32(n as i32),
        Arg::I32(fusion::act_code(act)),
    ]);
    let plan = CudaPlan::single(n_in, launch(entry, source, len, args));
    let cpu: LayerCpu = Arc::new(move |ins: &[&[f32]], y: &mut [f32]| {
        let (c, bias) = (ins[0], ins[1]);
        y.par_chunks_mut(n).enumerate().for_each(|(r, row)| {
            for (j, v) in row.iter_mut().enumerate() {
                let i = r * n + j;
                *v = act.apply_f32(c[i] + bias[j]);
                if let Some(res) = ins.get(2) {
                    *v += res[i];
                }
            }
        });
    });
    let mut inputs = vec![Binding { at: c, len }, Binding { at: bias, len: n }];
    inputs.extend(residual.map(|at| Binding { at, len }));
    layer(
        name,
        Category::Elementwise,
        plan,
        cpu,
        inputs,
        Binding { at: out, len },
    )
}

/// `[B*S, 3E]` (plus its bias) into Q, K and V of `[B, H, S, D]` each, one after another.
pub fn split_heads(name: &str, dims: [usize; 4], c: At, bias: At, out: At) -> Layer {
    let [b, s, h, d] = dims;
    let e = h * d;
    let len = 3 * b * s * e;
    let mut args = ptrs(2);
    args.extend([b, s, h, d].map(|v| Arg::I32(v as i32)));
    let plan = CudaPlan::single(
        2,
        launch(
            "net_split_heads",
            cuda_source!("networks", "heads.cu"),
            len,
            args,
        ),
    );
    let cpu: LayerCpu = Arc::new(move |ins: &[&[f32]], y: &mut [f32]| {
        let (c, bias) = (ins[0], ins[1]);
        let per = b * s * e;
        y.par_chunks_mut(d).enumerate().for_each(|(run, out)| {
            // One run of D features: (which, batch, head, position).
            let (which, r) = (run * d / per, run * d % per);
            let (si, hi, bi) = ((r / d) % s, (r / d / s) % h, r / d / s / h);
            let col = which * e + hi * d;
            let src = &c[(bi * s + si) * 3 * e + col..][..d];
            for ((o, x), bv) in out.iter_mut().zip(src).zip(&bias[col..col + d]) {
                *o = x + bv;
            }
        });
    });
    layer(
        name,
        Category::Copies,
        plan,
        cpu,
        vec![
            Binding { at: c, len },
            Binding {
                at: bias,
                len: 3 * e,
            },
        ],
        Binding { at: out, len },
    )
}

/// O of `[B, H, S, D]` back to one row of `E = H D` features per token.
pub fn merge_heads(name: &str, dims: [usize; 4], o: At, out: At) -> Layer {
    let [b, s, h, d] = dims;
    let e = h * d;
    let len = b * s * e;
    let mut args = ptrs(1);
    args.extend([b, s, h, d].map(|v| Arg::I32(v as i32)));
    let plan = CudaPlan::single(
        1,
        launch(
            "net_merge_heads",
            cuda_source!("networks", "heads.cu"),
            len,
            args,
        ),
    );
    let cpu: LayerCpu = Arc::new(move |ins: &[&[f32]], y: &mut [f32]| {
        let o = ins[0];
        y.par_chunks_mut(e).enumerate().for_each(|(row, out)| {
            let (bi, si) = (row / s, row % s);
            for (hi, run) in out.chunks_mut(d).enumerate() {
                run.copy_from_slice(&o[((bi * h + hi) * s + si) * d..][..d]);
            }
        });
    });
    layer(
        name,
        Category::Copies,
        plan,
        cpu,
        vec![Binding { at: o, len }],
        Binding { at: out, len },
    )
}
