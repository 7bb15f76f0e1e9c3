//! The pipelined rungs (14..17, 19, 20, 27) executed from their CUDA source by the simulator on shapes the
//! harness's simulator matrix does not reach: K and N multiples of 8, so the 16-byte
//! `cp.async` path runs (the matrix's shapes take the guarded 2-byte path), with row, column
//! and K tails, and K long enough for the ring to wrap around. Each output must agree with
//! the rung's CPU port (same rounded operands, FP32 sums in another order) far inside the
//! precision's bound, and with the f64 reference within it.

use kernel::sim::SimDevice;
use kernel::testing::{gemm_f64, inputs, relative_error, source_line};
use kernel::{Executor, Kernel, Shape};

/// M, N and K with tails: 136 = 128 + 8 rows, 264 = 2 x 128 + 8 columns, K = 200 is 7 tiles
/// of 32 (rung 14 and 15's 4-stage rings wrap) or 4 of 64 (16 and 17's 3-stage ring wraps)
/// with a partial last tile.
const SHAPES: [(usize, usize, usize); 2] = [(136, 264, 200), (8, 16, 24)];

fn check(kernel: &dyn Kernel) {
    check_on(kernel, &SHAPES);
}

fn check_on(kernel: &dyn Kernel, shapes: &[(usize, usize, usize)]) {
    let dev = SimDevice::new().expect("the simulator needs a C++ compiler");
    let id = kernel.info().id;
    let port = kernel.cpu().expect("every rung has a CPU port");
    let bound = kernel.info().precision.tolerance();
    for &(m, n, k) in shapes {
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

#[test]
fn mma_128x256_on_aligned_tails() {
    check(&tensorcore::GemmMma128x256);
}

/// Rung 27's first loop (k-tiles whose refill lies inside A and B) runs in the block at the
/// origin of 136x264 (its 128x256 tile lies inside C), for 3 k-tiles at K = 200 and for 29,
/// wrapping the ring 7 times, at K = 1040; the other blocks and the last tiles take 19's
/// bounds-checked copies, and 8x16x24 only those.
#[test]
fn mma_hoisted_on_aligned_tails_and_a_long_k() {
    check_on(
        &tensorcore::GemmMmaHoisted,
        &[(136, 264, 200), (136, 264, 1040), (8, 16, 24)],
    );
}

/// Rung 20 splits K on these shapes at its default SM count (the simulator has no SMs to
/// count): 136x264x1040 is 4 tiles of 128x256 with row and column tails and 33 k-tiles (the
/// last one half full) in 3 splits, on the 16-byte path; 100x37x1000 one tile in 4 splits on
/// the guarded 2-byte path (K and N not multiples of 8). Each block order the simulator's
/// seeds produce (a different block arrives last at each tile) must give the same bits, and
/// those must match the CPU port, which adds the same partials in the same order, and the f64
/// reference.
#[test]
fn split_k_is_deterministic_on_tails() {
    let rung = tensorcore::GemmMmaSplitK::default();
    let port = rung.cpu().expect("a CPU port");
    for (m, n, k) in [(136, 264, 1040), (100, 37, 1000)] {
        let shape = Shape::gemm(m, n, k);
        assert!(rung.splits(&shape) > 1, "{shape} must split");
        let data = inputs(&shape, (m + n + k) as u64);
        let mut cpu = vec![f32::NAN; m * n];
        port(&shape, &[&data[0], &data[1]], &mut cpu);
        let cpu: Vec<f64> = cpu.iter().map(|&v| f64::from(v)).collect();
        let exact = gemm_f64((m, n, k), &data[0], &data[1], |v| v);
        let mut first: Option<Vec<u32>> = None;
        for seed in [1, 2, 3] {
            let dev = SimDevice::new()
                .expect("the simulator needs a C++ compiler")
                .with_seed(seed);
            let mut run = dev.prepare(&rung, &shape, &data).expect("prepare");
            run.run()
                .unwrap_or_else(|e| panic!("{shape}, seed {seed}: {e}"));
            let out = run.output().expect("output");
            let vs_port = relative_error(&out, &cpu);
            assert!(
                vs_port < 1e-5,
                "{shape}, seed {seed}: {vs_port:e} from the port"
            );
            let vs_f64 = relative_error(&out, &exact);
            assert!(vs_f64 < 1e-2, "{shape}, seed {seed}: {vs_f64:e} from f64");
            let bits: Vec<u32> = out.iter().map(|v| v.to_bits()).collect();
            match &first {
                None => first = Some(bits),
                Some(b) => assert!(b == &bits, "{shape}: seed {seed} changed the result bits"),
            }
        }
    }
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
        // Rung 19's one barrier per k-tile moved past the next tile's first ldmatrix: the
        // fragments are read before the copies of that tile have landed.
        Planted {
            rung: &tensorcore::GemmMma128x256,
            from: "            if (s == KSTEPS - 2) {",
            to: "            if (s == KSTEPS - 1) {",
        },
        // Rung 27's plain copies of B placed one repeat's rows apart in elements, not bytes:
        // the offsets worked out once must still be the swizzled ones.
        Planted {
            rung: &tensorcore::GemmMmaHoisted,
            from: "i * (B_REP_ROWS * BN * 2)",
            to: "i * (B_REP_ROWS * BN)",
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

/// Split-K's reduction must wait for every split: a tile reduced by the first block to arrive
/// (which then leaves the counter as it is) reads partial slots the other splits have not
/// written yet, poisoned with NaN by the plan.
#[test]
fn split_k_reduced_by_the_first_arrival_fails() {
    static SPLIT: tensorcore::GemmMmaSplitK =
        tensorcore::GemmMmaSplitK::for_sms(tensorcore::DEFAULT_SMS);
    let dev = SimDevice::new().expect("the simulator needs a C++ compiler");
    let shape = Shape::gemm(136, 264, 1040);
    let data = inputs(&shape, 5);
    let bug = Planted {
        rung: &SPLIT,
        from: concat!(
            "if (arrived != (unsigned)splits - 1) return;\n",
            "    __threadfence();  // the other splits' partials, fenced before their counts, are seen now\n",
            "    if (threadIdx.x == 0) counters[tile] = 0;"
        ),
        to: "if (arrived != 0) return;",
    };
    let out = dev
        .prepare(&bug, &shape, &data)
        .and_then(|mut r| {
            r.run()?;
            r.output()
        })
        .expect("the planted kernel runs");
    let err = relative_error(&out, &gemm_f64((136, 264, 1040), &data[0], &data[1], |v| v));
    assert!(err > 1e-2, "the first arrival's sum still passes ({err:e})");
}

/// Split-K's reduction is ordered by a fence on each side of its atomic count. Without either,
/// the simulator's result is still right (its atomics are sequentially consistent, its blocks
/// share one cache), but the race checker of global memory names the unordered read of another
/// split's partial, and its line.
#[test]
fn split_k_without_either_fence_is_a_race_on_global_memory() {
    static SPLIT: tensorcore::GemmMmaSplitK =
        tensorcore::GemmMmaSplitK::for_sms(tensorcore::DEFAULT_SMS);
    let dev = SimDevice::new()
        .expect("the simulator needs a C++ compiler")
        .instrumented();
    let (m, n, k) = (136, 264, 1040);
    let shape = Shape::gemm(m, n, k);
    let data = inputs(&shape, 5);
    let run = |rung: &dyn Kernel| {
        dev.prepare(rung, &shape, &data).and_then(|mut r| {
            r.run()?;
            r.output()
        })
    };
    let out = run(&SPLIT).expect("split-K as it stands is race-free");
    let err = relative_error(&out, &gemm_f64((m, n, k), &data[0], &data[1], |v| v));
    assert!(err < 1e-2, "{err:e}");
    // The read of the partials that meets the other block's write, by its line, or by a line
    // of the unrolled loops around it (optimized code gives the loads to the loops' lines).
    let source = include_str!("../kernels/20_mma_split_k.cu");
    let line_of = |text: &str| source_line(source, text);
    let sites: Vec<String> = (line_of("for (int s = 0; s < splits; ++s)")
        ..=line_of("const float4 p = all["))
        .map(|n| format!("; this thread's access is at tensorcore/kernels/20_mma_split_k.cu:{n} ("))
        .collect();
    for fence in [
        "    __threadfence();  // the partial is visible to the whole GPU before the count says so\n",
        "    __threadfence();  // the other splits' partials, fenced before their counts, are seen now\n",
    ] {
        let bug = Planted {
            rung: &SPLIT,
            from: fence,
            to: "",
        };
        let e = run(&bug)
            .map(|_| ())
            .expect_err("the race is reported")
            .to_string();
        assert!(
            e.contains("race on global memory: this thread reads")
                && e.contains("of buffer 'split-K partial tiles'")
                && e.contains("nothing orders the two blocks")
                && sites.iter().any(|site| e.contains(site)),
            "without {fence:?}: {e}"
        );
        // The other block's write, by the line of the partial's store (the statement spans
        // two; the line table gives the store its value's).
        let store = line_of("mine[(i * 8 + j) * NTHREADS + threadIdx.x] =");
        assert!(
            [store, store + 1].iter().any(|n| e.contains(&format!(
                "wrote (at tensorcore/kernels/20_mma_split_k.cu:{n}), and nothing orders"
            ))),
            "without {fence:?}: {e}"
        );
    }
}
