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

/// Panics unless the front end runs every inline-PTX statement of the lab headers' GPU bodies
/// that `k` includes: one it does not run would fail only a launch that reaches it, and a
/// branch these shapes never take would go unchecked.
fn assert_every_statement_emulated(k: &dyn Kernel, shape: &Shape) {
    for step in k.cuda(shape).map(|p| p.steps).unwrap_or_default() {
        if let Step::Kernel(l) = step
            && let Some(src) = gpu_bodies(&l.source)
        {
            let code = kernel::sim::compile::strip_comments(&src.code);
            let rewritten = kernel::sim::inline_asm::rewrite(&code, &src.file)
                .unwrap_or_else(|r| panic!("{}: {r}", k.info().id))
                .unwrap_or_default();
            if let Some(at) = rewritten.find("not_simulated(") {
                let line = rewritten[at..].lines().next().unwrap_or("");
                panic!("{}: the simulator does not run {line}", k.info().id);
            }
        }
    }
}

/// Runs `k` at `shape` with the emulation bodies and with the inline PTX; panics unless the
/// outputs are the same bits.
fn assert_same_bits(dev: &SimDevice, k: &dyn Kernel, shape: &Shape) {
    let data = inputs(shape, 0x6b0d1e5);
    let id = k.info().id;
    let run = |k: &dyn Kernel| {
        dev.prepare(k, shape, &data)
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
}

#[test]
fn every_rung_gives_the_same_bits_from_its_inline_ptx_as_from_the_emulation() {
    let dev = SimDevice::new().expect("the simulator needs a host C++ compiler");
    let all = registry::all();
    let mut checked = Vec::new();
    for shape in shapes() {
        for k in registry::for_workload(&all, shape.workload()) {
            if k.supports(&shape).is_err() || !two_bodied(k, &shape) {
                continue;
            }
            assert_every_statement_emulated(k, &shape);
            assert_same_bits(&dev, k, &shape);
            checked.push(k.info().id);
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

/// Rung 28 where it splits (at the shapes above it is rung 25): its generic `mapa` and
/// cluster barriers, from their PTX too.
#[test]
fn the_cluster_split_k_gives_the_same_bits_from_its_inline_ptx() {
    let dev = SimDevice::new().expect("the simulator needs a host C++ compiler");
    let rung = tensorcore::GemmWgmmaSplitK { sms: 16 };
    let shape = Shape::gemm(130, 264, 1032);
    assert_eq!(rung.splits(&shape), 4);
    assert_same_bits(&dev, &rung, &shape);
}
