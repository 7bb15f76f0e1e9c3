//! Both baseline kernels' CUDA source, executed by the simulator on small shapes (tails
//! included) and compared with an f64 reference.

use kernel::sim::SimDevice;
use kernel::testing::{gemm_f64, inputs, relative_error};
use kernel::{Executor, Kernel, Shape};

const SHAPES: [(usize, usize, usize); 5] = [
    (1, 1, 1),
    (17, 33, 65),
    (100, 37, 129),
    (64, 64, 64),
    (33, 1, 40),
];

fn check(kernel: &dyn Kernel) {
    let dev = SimDevice::new().expect("the simulator needs a C++ compiler");
    dev.can_run(kernel).expect("a baseline kernel is simulable");
    for (m, n, k) in SHAPES {
        let shape = Shape::gemm(m, n, k);
        let data = inputs(&shape, (m * 31 + n * 7 + k) as u64);
        let mut run = dev.prepare(kernel, &shape, &data).expect("prepare");
        run.run()
            .unwrap_or_else(|e| panic!("{} on {shape}: {e}", kernel.info().id));
        let out = run.output().expect("output");
        assert_eq!(out.len(), m * n);
        let err = relative_error(&out, &gemm_f64((m, n, k), &data[0], &data[1], |v| v));
        assert!(
            err <= 1e-5,
            "{} on {shape}: relative error {err:e}",
            kernel.info().id
        );
    }
}

#[test]
fn naive_gemm_matches_the_reference_in_the_simulator() {
    check(&baseline::GemmNaive);
}

#[test]
fn tiled_gemm_matches_the_reference_in_the_simulator() {
    check(&baseline::GemmTiled);
}

#[test]
fn unroll_gemm_convolution_walks_the_batch_in_chunks_in_the_simulator() {
    let dev = SimDevice::new().expect("the simulator needs a C++ compiler");
    let shape = Shape::Conv {
        b: 5,
        c: 2,
        m: 3,
        h: 9,
        w: 8,
        k: 3,
    };
    let d = kernel::conv_dims(&shape);
    // Room for two images: chunks of 2, 2 and 1, so the last chunk is a partial one.
    let rung = baseline::conv::ConvUnrollGemm {
        scratch_elements: 2 * (d.ckk() + d.m) * d.plane(),
    };
    assert_eq!(rung.chunk(&d), 2);
    let data = inputs(&shape, 7);
    let mut run = dev.prepare(&rung, &shape, &data).expect("prepare");
    run.run().expect("run");
    let out = run.output().expect("output");
    let err = relative_error(&out, &kernel::reference::reference(&shape, &data));
    assert!(err <= 1e-5, "relative error {err:e}");
}

/// Rung 01 with its softmax launch replaced by `softmax_rows.cu`, the warp-per-row softmax of
/// the cuBLAS-based reference row (whose library products the simulator cannot run): the
/// softmax kernel is checked end to end here, causal masking included.
struct NaiveWithWarpSoftmax;

impl Kernel for NaiveWithWarpSoftmax {
    fn info(&self) -> kernel::KernelInfo {
        kernel::KernelInfo {
            id: "attn-naive-warp-softmax".into(),
            ..baseline::attention::AttnNaive.info()
        }
    }

    fn cuda(&self, shape: &Shape) -> Option<kernel::CudaPlan> {
        let dims = kernel::attention_dims(shape);
        let mut plan = baseline::attention::AttnNaive.cuda(shape)?;
        plan.steps[1] = kernel::Step::Kernel(baseline::attention::softmax_rows_launch(
            dims.heads * dims.s,
            dims.s,
            dims.causal,
        ));
        Some(plan)
    }
}

#[test]
fn warp_softmax_of_the_cublas_attention_row_matches_the_reference_in_the_simulator() {
    let dev = SimDevice::new().expect("the simulator needs a C++ compiler");
    for text in ["1x1x1x16", "1x2x45x16-causal", "2x1x37x8"] {
        let shape = Shape::parse(kernel::Workload::Attention, text).unwrap();
        let data = inputs(&shape, 7);
        let mut run = dev
            .prepare(&NaiveWithWarpSoftmax, &shape, &data)
            .expect("prepare");
        run.run().unwrap_or_else(|e| panic!("{shape}: {e}"));
        let out = run.output().expect("output");
        let err = relative_error(&out, &kernel::reference::reference(&shape, &data));
        assert!(err <= 1e-5, "{shape}: relative error {err:e}");
    }
}
