//! The PTX a GPU is given, run before a GPU runs it. Every rung that includes `lab/ptx.h` or
//! `lab/hopper.h` is run in the simulator twice on an awkward shape: as the simulator normally
//! compiles it (the headers' emulation bodies) and with the headers' inline-PTX bodies, which
//! the simulator's front end reads instruction by instruction (`kernel::sim::gpu_bodies`). The
//! outputs must be the same bits: an operand in the wrong place, a wrong immediate (scale-d,
//! a transpose flag), a state space or a fragment order that the emulation bodies do not share
//! shows here, not on the GPU.

use harness::registry;
use kernel::sim::{SimDevice, gpu_bodies};
use kernel::testing::inputs;
use kernel::{CudaPlan, Executor, Kernel, KernelInfo, Shape, Step};

/// A rung with its launches' sources in their GPU bodies.
struct GpuBodies<'a>(&'a dyn Kernel);

impl Kernel for GpuBodies<'_> {
    fn info(&self) -> KernelInfo {
        self.0.info()
    }

    fn cuda(&self, shape: &Shape) -> Option<CudaPlan> {
        let mut plan = self.0.cuda(shape)?;
        for step in &mut plan.steps {
            if let Step::Kernel(l) = step
                && let Some(src) = gpu_bodies(&l.source)
            {
                l.source = src;
            }
        }
        Some(plan)
    }
}

/// Whether any launch of the rung's plan at `shape` includes a two-bodied header.
fn two_bodied(k: &dyn Kernel, shape: &Shape) -> bool {
    k.cuda(shape).is_some_and(|plan| {
        plan.steps.iter().any(|s| match s {
            Step::Kernel(l) => gpu_bodies(&l.source).is_some(),
            _ => false,
        })
    })
}

/// An awkward shape of each workload whose rungs use inline PTX: tails in every dimension the
/// tiles cover, attention with a causal mask and the head dimension its rungs take.
fn shapes() -> [Shape; 2] {
    [
        Shape::gemm(130, 264, 72),
        Shape::Attention {
            b: 1,
            h: 2,
            s: 130,
            d: 64,
            causal: true,
        },
    ]
}

#[test]
fn every_rung_gives_the_same_bits_from_its_inline_ptx_as_from_the_emulation() {
    let dev = SimDevice::new().expect("the simulator needs a host C++ compiler");
    let all = registry::all();
    let mut checked = Vec::new();
    for shape in shapes() {
        let data = inputs(&shape, 0x6b0d1e5);
        for k in registry::for_workload(&all, shape.workload()) {
            if k.supports(&shape).is_err() || !two_bodied(k, &shape) {
                continue;
            }
            let id = k.info().id;
            let run = |k: &dyn Kernel| {
                dev.prepare(k, &shape, &data)
                    .and_then(|mut p| {
                        p.run()?;
                        p.output()
                    })
                    .unwrap_or_else(|e| panic!("{id} at {shape}: {e}"))
            };
            let emulated = run(k);
            let from_ptx = run(&GpuBodies(k));
            let differ = emulated
                .iter()
                .zip(&from_ptx)
                .position(|(a, b)| a.to_bits() != b.to_bits());
            assert!(
                differ.is_none() && emulated.len() == from_ptx.len(),
                "{id} at {shape}: element {differ:?} is {:?} from the emulation bodies, {:?} \
                 from the inline PTX",
                differ.map(|i| emulated[i]),
                differ.map(|i| from_ptx[i])
            );
            checked.push(id);
        }
    }
    eprintln!("the same bits both ways: {}", checked.join(", "));
    // The rungs of both headers: mma.sync and cp.async (lab/ptx.h), wgmma and TMA
    // (lab/hopper.h), in GEMM and attention.
    for want in ["gemm-mma-ldmatrix", "gemm-wgmma-tma", "attn-flash-wgmma"] {
        assert!(
            checked.iter().any(|c| c.starts_with(want)),
            "{want} not checked; checked: {checked:?}"
        );
    }
}
