//! What every attention kernel shares: the dimensions of a shape, the softmax scale and the
//! parameter list, kept in one place so the rungs and their CPU ports agree.

use crate::plan::{Arg, At, Buf};
use crate::workload::Shape;

/// The dimensions of an attention shape as the kernels see them: `heads` = B * H independent
/// problems, each `s` x `d`, stored one after another.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AttentionDims {
    pub heads: usize,
    pub s: usize,
    pub d: usize,
    pub causal: bool,
}

impl AttentionDims {
    /// The softmax scale 1 / sqrt(D).
    pub fn scale(&self) -> f32 {
        (1.0 / (self.d as f64).sqrt()) as f32
    }

    /// Elements of one head's Q, K, V or O.
    pub fn head_len(&self) -> usize {
        self.s * self.d
    }

    /// Keys query `i` attends to: all `s`, or `i + 1` when causal.
    pub fn keys_for(&self, i: usize) -> usize {
        if self.causal { i + 1 } else { self.s }
    }
}

/// The dimensions of an attention shape. The harness only hands a kernel shapes of its own
/// workload.
pub fn attention_dims(shape: &Shape) -> AttentionDims {
    match *shape {
        Shape::Attention { b, h, s, d, causal } => AttentionDims {
            heads: b * h,
            s,
            d,
            causal,
        },
        other => panic!("an attention kernel was given {other}"),
    }
}

/// The parameter list `(Q, K, V, O, heads, S, D, scale, causal)` every fused attention kernel
/// of the ladder takes, for `heads` heads starting at head `first`.
pub fn attention_args(dims: &AttentionDims, first: usize, heads: usize) -> Vec<Arg> {
    let at = |b: Buf| {
        Arg::PtrAt(At {
            buf: b,
            offset: first * dims.head_len(),
        })
    };
    vec![
        at(Buf::Input(0)),
        at(Buf::Input(1)),
        at(Buf::Input(2)),
        at(Buf::Output),
        Arg::I32(heads as i32),
        Arg::I32(dims.s as i32),
        Arg::I32(dims.d as i32),
        Arg::F32(dims.scale()),
        Arg::I32(i32::from(dims.causal)),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dims_scale_and_args_follow_the_shape() {
        let shape = Shape::Attention {
            b: 2,
            h: 3,
            s: 5,
            d: 16,
            causal: true,
        };
        let d = attention_dims(&shape);
        assert_eq!((d.heads, d.s, d.d, d.causal), (6, 5, 16, true));
        assert_eq!(d.scale(), 0.25);
        assert_eq!(d.keys_for(2), 3);
        let args = attention_args(&d, 2, 4);
        assert_eq!(args.len(), 9);
        assert_eq!(
            args[0],
            Arg::PtrAt(At {
                buf: Buf::Input(0),
                offset: 160
            })
        );
        assert_eq!(args[4], Arg::I32(4));
        assert_eq!(args[8], Arg::I32(1));
    }
}
