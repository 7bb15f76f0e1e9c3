//! What every convolution kernel shares: the dimensions of a [`Shape::Conv`], the parameter
//! list of the one-kernel rungs and the batch chunking of multi-launch pipelines.

use crate::plan::{Arg, Buf};
use crate::workload::Shape;

/// The dimensions of an NCHW convolution, stride 1, no padding: input `b x c x h x w`,
/// filter `m x c x k x k`, output `b x m x ho x wo`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ConvDims {
    pub b: usize,
    pub c: usize,
    pub m: usize,
    pub h: usize,
    pub w: usize,
    pub k: usize,
    pub ho: usize,
    pub wo: usize,
}

impl ConvDims {
    /// Rows of the unrolled (im2col) matrix: the length of one output's dot product.
    pub fn ckk(&self) -> usize {
        self.c * self.k * self.k
    }

    /// Outputs per feature map (`ho * wo`).
    pub fn plane(&self) -> usize {
        self.ho * self.wo
    }

    /// Elements of one image of the input (`c * h * w`).
    pub fn image(&self) -> usize {
        self.c * self.h * self.w
    }

    /// Elements of one image of the output (`m * ho * wo`).
    pub fn out_image(&self) -> usize {
        self.m * self.plane()
    }
}

/// The dimensions of a convolution shape. The harness only hands a kernel shapes of its own
/// workload.
pub fn conv_dims(shape: &Shape) -> ConvDims {
    match *shape {
        Shape::Conv { b, c, m, h, w, k } => {
            let (ho, wo) = Shape::conv_out(h, w, k);
            ConvDims {
                b,
                c,
                m,
                h,
                w,
                k,
                ho,
                wo,
            }
        }
        other => panic!("a convolution kernel was given {other}"),
    }
}

/// The parameter list `(x, filter, y, B, C, M, H, W, K)` of the one-kernel convolution rungs.
pub fn conv_args(d: &ConvDims) -> Vec<Arg> {
    vec![
        Arg::Ptr(Buf::Input(0)),
        Arg::Ptr(Buf::Input(1)),
        Arg::Ptr(Buf::Output),
        Arg::I32(d.b as i32),
        Arg::I32(d.c as i32),
        Arg::I32(d.m as i32),
        Arg::I32(d.h as i32),
        Arg::I32(d.w as i32),
        Arg::I32(d.k as i32),
    ]
}

/// Images per chunk of a pipeline whose scratch holds `per_image` elements for each image:
/// as many as fit in `budget` elements, at least one, at most the batch.
pub fn conv_chunk(d: &ConvDims, per_image: usize, budget: usize) -> usize {
    (budget / per_image.max(1)).clamp(1, d.b)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dims_follow_the_shape_and_chunks_stay_in_the_budget() {
        let d = conv_dims(&Shape::Conv {
            b: 10,
            c: 4,
            m: 16,
            h: 40,
            w: 39,
            k: 7,
        });
        assert_eq!((d.ho, d.wo, d.ckk(), d.plane()), (34, 33, 196, 34 * 33));
        assert_eq!(d.out_image(), 16 * 34 * 33);
        assert_eq!(conv_chunk(&d, 100, 350), 3);
        assert_eq!(conv_chunk(&d, 100, 50), 1, "at least one image");
        assert_eq!(conv_chunk(&d, 100, 1 << 30), 10, "at most the batch");
        assert_eq!(conv_args(&d)[8], Arg::I32(7));
    }
}
