//! Rungs 09 to 14 executed from their CUDA source by the simulator at both head dimensions,
//! causal or not, with query-row and key tails (the harness's simulator matrix runs D = 64
//! only), and planted bugs that must fail: in what 09 changes (the one-barrier ring, the masks
//! applied only on boundary tiles), in what 11 changes (the swizzled layout its wgmma
//! descriptors read, the per-warpgroup causal skip) and in what 13 changes (the wait before P
//! and O are touched again, the third stage, each warpgroup's own last tile).

use flash_attn::cpu::Round;
use flash_attn::{Flash2Br128, FlashWgmma, FlashWgmmaOverlap};
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
fn br128_and_wgmma_rungs_match_the_reference_on_tails() {
    let dev = SimDevice::new().expect("the simulator needs a C++ compiler");
    let rungs: [&dyn Kernel; 6] = [
        &Flash2Br128(Round::F16),
        &Flash2Br128(Round::Bf16),
        &FlashWgmma(Round::F16),
        &FlashWgmma(Round::Bf16),
        &FlashWgmmaOverlap(Round::F16),
        &FlashWgmmaOverlap(Round::Bf16),
    ];
    for rung in rungs {
        let bound = rung.info().precision.tolerance();
        for text in SHAPES {
            let shape = Shape::parse(Workload::Attention, text).unwrap();
            let err = error(&dev, rung, &shape);
            assert!(err < bound, "{} on {text}: {err:e}", rung.info().id);
        }
    }
}

/// A rung (09, 11 or 13) with one planted change to its source.
struct Planted {
    rung: &'static dyn Kernel,
    from: &'static str,
    to: &'static str,
}

impl Kernel for Planted {
    fn info(&self) -> kernel::KernelInfo {
        self.rung.info()
    }

    fn cuda(&self, shape: &Shape) -> Option<kernel::CudaPlan> {
        let mut plan = self.rung.cuda(shape)?;
        for step in &mut plan.steps {
            if let kernel::Step::Kernel(l) = step {
                assert!(l.source.code.contains(self.from), "nothing to plant");
                l.source.code = l.source.code.replace(self.from, self.to).into();
            }
        }
        Some(plan)
    }
}

static BR128: Flash2Br128 = Flash2Br128(Round::F16);
static WGMMA: FlashWgmma = FlashWgmma(Round::F16);
static OVERLAP: FlashWgmmaOverlap = FlashWgmmaOverlap(Round::F16);

#[test]
fn planted_ring_mask_and_layout_bugs_fail() {
    let dev = SimDevice::new().expect("the simulator needs a C++ compiler");
    let bugs = [
        // One group per tile: waiting for all but the newest reads a tile before it lands.
        Planted {
            rung: &BR128,
            from: "ptx::cp_async_wait_group<0>();",
            to: "ptx::cp_async_wait_group<1>();",
        },
        // The diagonal tiles left unmasked: causal rows see later keys.
        Planted {
            rung: &BR128,
            from: "(causal && j0 + BC - 1 > q0 + w0)",
            to: "false",
        },
        // Rung 11's tiles stored unswizzled: the descriptors' 128-byte swizzle reads other chunks.
        Planted {
            rung: &WGMMA,
            from: "(((c % BOX) / 8) ^ (r % 8))",
            to: "((c % BOX) / 8)",
        },
        // V's 64-column boxes taken as adjacent (LBO of one row): D = 128 reads the wrong half.
        Planted {
            rung: &WGMMA,
            from: "BC * BOX * 2, 1024",
            to: "BOX * 2, 1024",
        },
        // Rung 11's descriptors stepped without the stage: odd tiles multiply the even ones'.
        Planted {
            rung: &WGMMA,
            from: "(it % 2) * STAGE",
            to: "0",
        },
        // The causal skip decided by the block's first warpgroup: the second's last tile is lost.
        Planted {
            rung: &WGMMA,
            from: "j0 > q0 + wg * 64 + 63",
            to: "j0 > q0 + 63",
        },
        // Rung 13 touching O and P without waiting for the P V that reads and writes them.
        Planted {
            rung: &OVERLAP,
            from: "hopper::wgmma_wait<0>();  // P V done",
            to: "//",
        },
        // Two K/V stages: tile t + 2 lands where tile t's V is still read.
        Planted {
            rung: &OVERLAP,
            from: "#define STAGES 3",
            to: "#define STAGES 2",
        },
        // Each warpgroup's last tile taken from the block's first warpgroup (causal).
        Planted {
            rung: &OVERLAP,
            from: "(q0 + wg * 64 + 63) / BC + 1",
            to: "(q0 + 63) / BC + 1",
        },
    ];
    let shape = Shape::parse(Workload::Attention, "1x2x256x128-causal").unwrap();
    for bug in &bugs {
        // Caught either as a wrong output or as a fault the simulator names.
        let data = inputs(&shape, 3);
        let out = dev.prepare(bug, &shape, &data).and_then(|mut r| {
            r.run()?;
            r.output()
        });
        match out {
            Ok(out) => {
                let err = relative_error(&out, &kernel::reference::reference(&shape, &data));
                eprintln!("with {:?}: relative error {err:e}", bug.to);
                assert!(
                    err > 1e-2,
                    "with {:?} the rung still passes ({err:e})",
                    bug.to
                );
            }
            Err(e) => eprintln!("with {:?}: {e}", bug.to),
        }
    }
}

/// Rung 11's copies land through the generic proxy and wgmma reads through the async proxy:
/// without each thread's fence.proxy.async the instrumented simulator fails the wgmma that
/// reads them, naming the writer; with it the same run passes.
#[test]
fn a_missing_proxy_fence_before_wgmma_is_reported() {
    let dev = SimDevice::new()
        .expect("the simulator needs a C++ compiler")
        .instrumented();
    let shape = Shape::parse(Workload::Attention, "1x1x200x128-causal").unwrap();
    let data = inputs(&shape, 3);
    let run = |k: &dyn Kernel| {
        dev.prepare(k, &shape, &data).and_then(|mut r| {
            r.run()?;
            r.output()
        })
    };
    let out = run(&WGMMA).unwrap_or_else(|e| panic!("rung 11 with its fence: {e}"));
    let err = relative_error(&out, &kernel::reference::reference(&shape, &data));
    assert!(err < WGMMA.info().precision.tolerance(), "{err:e}");
    let unfenced = Planted {
        rung: &WGMMA,
        from: "hopper::fence_proxy_async();",
        to: "",
    };
    let e = run(&unfenced)
        .map(|_| ())
        .expect_err("an unfenced copy read by wgmma is reported")
        .to_string();
    eprintln!("without the fence: {e}");
    assert!(
        e.contains("wgmma reads") && e.contains("no fence.proxy.async") && e.contains("thread ("),
        "{e}"
    );
}
