//! The pipelined rungs (14..17) executed from their CUDA source by the simulator on shapes the
//! harness's simulator matrix does not reach: K and N multiples of 8, so the 16-byte
//! `cp.async` path runs (the matrix's shapes take the guarded 2-byte path), with row, column
//! and K tails, and K long enough for the ring to wrap around. Each output must agree with
//! the rung's CPU port (same rounded operands, FP32 sums in another order) far inside the
//! precision's bound, and with the f64 reference within it.

use kernel::sim::SimDevice;
use kernel::testing::{gemm_f64, inputs, relative_error};
use kernel::{Executor, Kernel, Shape};

/// M, N and K with tails: 136 = 128 + 8 rows, 264 = 2 x 128 + 8 columns, K = 200 is 7 tiles
/// of 32 (rung 14 and 15's 4-stage rings wrap) or 4 of 64 (16 and 17's 3-stage ring wraps)
/// with a partial last tile.
const SHAPES: [(usize, usize, usize); 2] = [(136, 264, 200), (8, 16, 24)];

fn check(kernel: &dyn Kernel) {
    let dev = SimDevice::new().expect("the simulator needs a C++ compiler");
    let id = kernel.info().id;
    let port = kernel.cpu().expect("every rung has a CPU port");
    let bound = kernel.info().precision.tolerance();
    for (m, n, k) in SHAPES {
        let shape = Shape::gemm(m, n, k);
        let data = inputs(&shape, (m * 31 + n * 7 + k) as u64);
        let mut run = dev.prepare(kernel, &shape, &data).expect("prepare");
        run.run().unwrap_or_else(|e| panic!("{id} on {shape}: {e}"));
        let out = run.output().expect("output");
        assert_eq!(out.len(), m * n);
        let mut cpu = vec![f32::NAN; m * n];
        port(&shape, &[&data[0], &data[1]], &mut cpu);
        let vs_port = relative_error(&out, &cpu.iter().map(|&v| f64::from(v)).collect::<Vec<_>>());
        assert!(
            vs_port < 1e-5,
            "{id} on {shape}: {vs_port:e} from its CPU port"
        );
        let vs_f64 = relative_error(&out, &gemm_f64((m, n, k), &data[0], &data[1], |v| v));
        assert!(vs_f64 < bound, "{id} on {shape}: {vs_f64:e} from f64");
    }
}

#[test]
fn wmma_cp_async_ring_on_aligned_tails() {
    check(&tensorcore::GemmWmmaCpAsync);
}

#[test]
fn mma_ldmatrix_swizzle_on_aligned_tails() {
    check(&tensorcore::GemmMmaLdmatrix);
}

#[test]
fn mma_double_buffer_on_aligned_tails() {
    check(&tensorcore::GemmMmaDoubleBuffer);
}

#[test]
fn mma_bf16_on_aligned_tails() {
    check(&tensorcore::GemmMmaBf16);
}

/// A rung with one planted change to its source (the same launch otherwise).
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

    fn cpu(&self) -> Option<kernel::CpuPort> {
        self.rung.cpu()
    }
}

/// Planted pipeline and layout bugs must fail the check: the simulator's cp.async completes a
/// group only at the wait that covers it, and its ldmatrix hands out the real lane mapping.
#[test]
fn planted_ring_and_swizzle_bugs_fail() {
    let dev = SimDevice::new().expect("the simulator needs a C++ compiler");
    let (m, n, k) = (136, 264, 200);
    let shape = Shape::gemm(m, n, k);
    let data = inputs(&shape, 7);
    let expected = gemm_f64((m, n, k), &data[0], &data[1], |v| v);
    let bugs = [
        // One group short: tile kt is read before its copies land.
        Planted {
            rung: &tensorcore::GemmMmaLdmatrix,
            from: "cp_async_wait_group<STAGES - 2>",
            to: "cp_async_wait_group<STAGES - 1>",
        },
        // Reads swizzled one way, written another (B's ldmatrix without the XOR).
        Planted {
            rung: &tensorcore::GemmMmaDoubleBuffer,
            from: "ptx::smem_addr(bs + swz_b(kk + lrow, wn * 64 + p * 16 + lchunk))",
            to: "ptx::smem_addr(bs + (kk + lrow) * BN + wn * 64 + p * 16 + lchunk)",
        },
    ];
    for bug in &bugs {
        let id = bug.info().id;
        let err = match dev.prepare(bug, &shape, &data).and_then(|mut r| {
            r.run()?;
            r.output()
        }) {
            Ok(out) => relative_error(&out, &expected),
            Err(e) => panic!(
                "{id} with {:?} must run and compute wrong values: {e}",
                bug.to
            ),
        };
        eprintln!("{id} with {:?}: relative error {err:e}", bug.to);
        assert!(
            err > bug.info().precision.tolerance(),
            "{id} with {:?} still passes ({err:e})",
            bug.to
        );
    }
}
