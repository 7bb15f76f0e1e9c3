//! The batch pipeline row (`conv-streams`) in the simulator: on a partial last chunk and on
//! batch 1 it must match the f64 reference, and a pipeline that forgets a chunk's copy in or
//! out must fail its check (the executor poisons uploaded inputs and the host output).

use harness::config::Config;
use harness::results::Status;
use harness::run::{evaluate, reference_for};
use harness::{inputs, registry};
use kernel::sim::SimDevice;
use kernel::{CpuPort, CudaPlan, Kernel, KernelInfo, Shape, Unsupported, Workload};
use restrict_unroll::streams::ConvStreams;

/// `conv-streams` with one copy of its last chunk dropped.
struct Forgets {
    upload: bool,
}

impl Kernel for Forgets {
    fn info(&self) -> KernelInfo {
        KernelInfo {
            id: "conv-streams-forgets".into(),
            ..ConvStreams.info()
        }
    }

    fn supports(&self, shape: &Shape) -> Result<(), Unsupported> {
        ConvStreams.supports(shape)
    }

    fn cuda(&self, shape: &Shape) -> Option<CudaPlan> {
        let mut plan = ConvStreams.cuda(shape)?;
        let last = plan.pipeline.as_mut()?.chunks.last_mut()?;
        if self.upload {
            last.upload.clear();
        } else {
            last.download.clear();
        }
        Some(plan)
    }

    fn cpu(&self) -> Option<CpuPort> {
        ConvStreams.cpu()
    }
}

fn status(dev: &SimDevice, k: &dyn Kernel, label: &str) -> (Status, Option<String>) {
    let config = Config::defaults();
    let all = registry::all();
    let refs: Vec<&dyn Kernel> = all.iter().map(|k| k.as_ref()).collect();
    let shape = Shape::parse(Workload::Conv, label).expect("a conv shape");
    let x = inputs::random_inputs(&shape, config.seed);
    let reference = reference_for(dev, &refs, &shape, &x, &config);
    let (row, _) = evaluate(dev, k, &shape, &x, &x, &reference);
    (row.status, row.reason)
}

#[test]
fn the_pipeline_row_matches_on_a_partial_last_chunk_and_on_batch_1() {
    let dev = SimDevice::new().expect("the simulator needs a host C++ compiler (g++)");
    // Batch 11: chunks of 2 images, the last holds 1, six chunks over four streams; batch 13
    // likewise. `3x64x17x6x7x5` keeps its filter in shared memory (too large for
    // __constant__), so its plan has no once-only step before the chunks.
    for label in [
        "11x2x5x9x8x3",
        "1x1x4x7x7x7",
        "13x3x17x10x9x5",
        "3x64x17x6x7x5",
    ] {
        let (s, why) = status(&dev, &ConvStreams, label);
        assert_eq!(s, Status::Passed, "{label}: {why:?}");
    }
}

#[test]
fn a_pipeline_that_forgets_a_copy_fails_its_check() {
    let dev = SimDevice::new().expect("the simulator needs a host C++ compiler (g++)");
    for upload in [true, false] {
        let (s, why) = status(&dev, &Forgets { upload }, "11x2x5x9x8x3");
        assert_eq!(s, Status::Failed, "upload dropped: {upload}: {why:?}");
    }
}
