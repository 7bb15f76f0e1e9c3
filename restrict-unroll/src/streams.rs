//! Convolution rung 07: rung 04's kernel as a batch pipeline. The input starts in pinned host
//! memory and the output ends there; the batch goes through in chunks, each copied in, computed
//! and copied back on one of several streams, so that on a GPU the copies of one chunk overlap
//! the compute of others. Its time is end to end, copies included: rung 04's row is the same
//! kernel with the data already on the device.

use crate::conv::{ConvRestrictUnroll, constant_copy, cpu_restrict_unroll, launch};
use kernel::{
    Arg, Bound, Buf, CpuPort, CudaPlan, Kernel, KernelInfo, Lineage, Pipeline, Precision, Role,
    Shape, Stage, Step, Unsupported, Workload, conv_args, conv_dims,
};

/// Streams the chunks rotate over: with four, up to three chunks can be copying (in, out)
/// while one computes, more than the two copy engines and one compute queue need to stay busy.
pub const STREAMS: usize = 4;
/// Chunks per batch: 1000 images at batch 10000. The first chunk's upload and the last one's
/// download cannot overlap any compute, so each chunk should be a small part of the batch;
/// each should still fill the GPU (1000 images of the first course layer are 25000 blocks).
pub const CHUNKS: usize = 10;

/// Images per chunk for a batch of `b`: the batch in [`CHUNKS`] parts, at least one image.
pub fn chunk_images(b: usize) -> usize {
    b.div_ceil(CHUNKS).max(1)
}

/// `conv/04_restrict_unroll.cu` over the batch in chunks on [`STREAMS`] streams, from pinned
/// host memory.
pub struct ConvStreams;

impl Kernel for ConvStreams {
    fn lineage(&self) -> Option<Lineage> {
        Some(Lineage {
            parent: Some("conv-restrict-unroll"),
            idea: "the batch in chunks on 4 streams from pinned host memory: copies overlap kernels, and the time includes them",
            bound: Some(Bound::Transfers),
        })
    }

    fn info(&self) -> KernelInfo {
        KernelInfo {
            id: "conv-streams".into(),
            workload: Workload::Conv,
            stage: Stage::RestrictUnroll,
            precision: Precision::Fp32,
            role: Role::Rung,
            rung: 7,
            summary: format!(
                "rung 04 over the batch in {CHUNKS} chunks on {STREAMS} streams from pinned host memory; \
                 time includes the host-device copies (kernel-only: conv-restrict-unroll)"
            )
            .into(),
        }
    }

    fn supports(&self, shape: &Shape) -> Result<(), Unsupported> {
        ConvRestrictUnroll.supports(shape)
    }

    fn cuda(&self, shape: &Shape) -> Option<CudaPlan> {
        let d = conv_dims(shape);
        let chunk = chunk_images(d.b);
        let pipeline = Pipeline::chunked(
            STREAMS,
            d.b,
            chunk,
            &[(0, d.image())],
            d.out_image(),
            usize::from(constant_copy(&d).is_some()),
            1,
        );
        // The weights are copied once, before the chunks; each chunk is one launch over its
        // images, at its offset in the input and the output.
        let mut steps: Vec<Step> = constant_copy(&d).into_iter().collect();
        for c in &pipeline.chunks {
            let (x, y) = (c.upload[0], c.download[0]);
            let images = x.len / d.image();
            let args = vec![
                Arg::PtrAt(x.at),
                Arg::Ptr(Buf::Input(1)),
                Arg::PtrAt(y.at),
                Arg::I32(images as i32),
                Arg::I32(d.c as i32),
                Arg::I32(d.m as i32),
                Arg::I32(d.h as i32),
                Arg::I32(d.w as i32),
                Arg::I32(d.k as i32),
            ];
            steps.push(Step::Kernel(launch(&d, images, args)));
        }
        Some(CudaPlan {
            steps,
            pipeline: Some(pipeline),
            ..CudaPlan::single(2, launch(&d, d.b, conv_args(&d)))
        })
    }

    /// The CPU has no copies: its port is rung 04's, the data already in host memory.
    fn cpu(&self) -> Option<CpuPort> {
        Some(cpu_restrict_unroll)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kernel::div_ceil;

    fn shape(b: usize) -> Shape {
        Shape::Conv {
            b,
            c: 1,
            m: 4,
            h: 86,
            w: 86,
            k: 7,
        }
    }

    #[test]
    fn the_default_chunks_are_a_tenth_of_the_batch() {
        assert_eq!(chunk_images(10000), 1000);
        assert_eq!(chunk_images(1), 1);
        assert_eq!(chunk_images(25), 3);
    }

    #[test]
    fn each_chunk_launches_over_its_own_images_after_the_weights() {
        let plan = ConvStreams.cuda(&shape(25)).expect("a CUDA plan");
        let p = plan.pipeline.as_ref().expect("a pipeline");
        assert_eq!((p.streams, p.chunks.len()), (STREAMS, 9));
        assert!(matches!(plan.steps[0], Step::Constant(_)));
        assert_eq!(plan.steps.len(), 10);
        let d = conv_dims(&shape(25));
        let last = plan.launches().last().expect("a launch");
        assert_eq!(last.args[0], Arg::PtrAt(Buf::Input(0).at(24 * d.image())));
        assert_eq!(last.args[2], Arg::PtrAt(Buf::Output.at(24 * d.out_image())));
        assert_eq!(last.args[3], Arg::I32(1), "the partial last chunk");
        assert_eq!(last.grid[0], div_ceil(d.plane(), 256));
        let len = |b: Buf| match b {
            Buf::Input(0) => 25 * d.image(),
            Buf::Output => 25 * d.out_image(),
            _ => d.m * d.ckk(),
        };
        assert_eq!(p.check(&plan, len), Ok(()));
        assert_eq!(plan.sources().len(), 1, "one module for every chunk");
    }
}
