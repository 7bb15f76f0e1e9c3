//! Rungs 09 and 10 executed from their CUDA source by the simulator at both head dimensions,
//! causal or not, with query-row and key tails (the harness's simulator matrix runs D = 64
//! only), and planted bugs in what 09 changes (the one-barrier ring, the masks applied only on
//! boundary tiles) that must fail.

use flash_attn::Flash2Br128;
use flash_attn::cpu::Round;
use kernel::sim::SimDevice;
use kernel::testing::{inputs, relative_error};
use kernel::{Executor, Kernel, Shape, Workload};

/// 256 rows (two 128-row blocks) causal at D = 128; 200 keys (a 64-key tile holding 8) and 200
/// rows (the second block 72 rows); 129 rows causal (a block of one row); 300 causal at D = 64.
const SHAPES: [&str; 4] = [
    "1x2x256x128-causal",
    "1x1x200x128",
    "1x1x129x128-causal",
    "1x1x300x64-causal",
];

fn error(dev: &SimDevice, kernel: &dyn Kernel, shape: &Shape) -> f64 {
    let data = inputs(shape, 3);
    let out = dev
        .prepare(kernel, shape, &data)
        .and_then(|mut r| {
            r.run()?;
            r.output()
        })
        .unwrap_or_else(|e| panic!("{} on {shape}: {e}", kernel.info().id));
    relative_error(&out, &kernel::reference::reference(shape, &data))
}

#[test]
fn br128_rungs_match_the_reference_on_tails() {
    let dev = SimDevice::new().expect("the simulator needs a C++ compiler");
    for rung in [Flash2Br128(Round::F16), Flash2Br128(Round::Bf16)] {
        let bound = rung.info().precision.tolerance();
        for text in SHAPES {
            let shape = Shape::parse(Workload::Attention, text).unwrap();
            let err = error(&dev, &rung, &shape);
            assert!(err < bound, "{} on {text}: {err:e}", rung.info().id);
        }
    }
}

/// Rung 09 with one planted change to its source.
struct Planted {
    from: &'static str,
    to: &'static str,
}

impl Kernel for Planted {
    fn info(&self) -> kernel::KernelInfo {
        Flash2Br128(Round::F16).info()
    }

    fn cuda(&self, shape: &Shape) -> Option<kernel::CudaPlan> {
        let mut plan = Flash2Br128(Round::F16).cuda(shape)?;
        for step in &mut plan.steps {
            if let kernel::Step::Kernel(l) = step {
                assert!(l.source.code.contains(self.from), "nothing to plant");
                l.source.code = l.source.code.replace(self.from, self.to).into();
            }
        }
        Some(plan)
    }
}

#[test]
fn planted_ring_and_mask_bugs_fail() {
    let dev = SimDevice::new().expect("the simulator needs a C++ compiler");
    let bugs = [
        // One group per tile: waiting for all but the newest reads a tile before it lands.
        Planted {
            from: "ptx::cp_async_wait_group<0>();",
            to: "ptx::cp_async_wait_group<1>();",
        },
        // The diagonal tiles left unmasked: causal rows see later keys.
        Planted {
            from: "(causal && j0 + BC - 1 > q0 + w0)",
            to: "false",
        },
    ];
    let shape = Shape::parse(Workload::Attention, "1x2x256x128-causal").unwrap();
    for bug in &bugs {
        let err = error(&dev, bug, &shape);
        eprintln!("with {:?}: relative error {err:e}", bug.to);
        assert!(
            err > 1e-2,
            "with {:?} the rung still passes ({err:e})",
            bug.to
        );
    }
}
