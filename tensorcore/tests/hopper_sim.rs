//! Rung 18 (wgmma fed by TMA through an mbarrier ring) executed from its CUDA source by the
//! simulator's Hopper emulation, on aligned and awkward shapes: M, N and K tails, N <= 64 (the
//! second 64-column box of B lies wholly outside the tensor), K long enough for the 5-stage
//! ring to wrap. Planted bugs in the source (a wrong expected byte count, swizzle or
//! descriptor field, a stage freed too early, a missing wait) must fail: by a wrong result, or
//! by a deadlock report that names the mbarrier's phase, pending arrivals and tx-count.
//! Rung 23 (rung 22 walking its tiles in groups of block-rows) on awkward shapes and tile
//! counts, and its walk recorded by the kernel against `tensorcore::grouped_tile`. Rung 25
//! (one k-tile of wgmma left in flight) likewise, and with its stage freed a k-tile too early.

use kernel::sim::SimDevice;
use kernel::testing::{gemm_f64, inputs, relative_error, source_line};
use kernel::{CudaPlan, DeviceError, Executor, Kernel, KernelInfo, Shape};

fn bf16(v: f32) -> f32 {
    half::bf16::from_f32(v).to_f32()
}

/// Runs `kernel` on `(m, n, k)` with seeded inputs; the output, or the simulator's error.
fn run(
    dev: &SimDevice,
    kernel: &dyn Kernel,
    (m, n, k): (usize, usize, usize),
) -> (Result<Vec<f32>, DeviceError>, Vec<Vec<f32>>) {
    let shape = Shape::gemm(m, n, k);
    let data = inputs(&shape, (m * 131 + n * 17 + k) as u64);
    let out = dev.prepare(kernel, &shape, &data).and_then(|mut r| {
        r.run()?;
        r.output()
    });
    (out, data)
}

/// Aligned tiles, tails in M, N and K, N <= 64 with a ring that wraps, a single row.
const SHAPES: [(usize, usize, usize); 6] = [
    (128, 128, 64),
    (256, 256, 384),
    (130, 264, 72),
    (72, 40, 392),
    (200, 136, 520),
    (1, 8, 8),
];

#[test]
fn wgmma_tma_matches_the_reference_on_aligned_and_awkward_shapes() {
    let dev = SimDevice::new().expect("the simulator needs a C++ compiler");
    let rung = tensorcore::GemmWgmmaTma;
    let port = rung.cpu().expect("rung 18 has a CPU port");
    for (m, n, k) in SHAPES {
        let (out, data) = run(&dev, &rung, (m, n, k));
        let out = out.unwrap_or_else(|e| panic!("{m}x{n}x{k}: {e}"));
        // Products of BF16 operands are exact in FP32: only the FP32 sums differ from f64.
        let exact = gemm_f64((m, n, k), &data[0], &data[1], bf16);
        let err = relative_error(&out, &exact);
        assert!(
            err < 1e-6,
            "{m}x{n}x{k}: {err:e} from the f64 product of BF16 operands"
        );
        let mut cpu = vec![f32::NAN; m * n];
        port(&Shape::gemm(m, n, k), &[&data[0], &data[1]], &mut cpu);
        let vs_port = relative_error(&out, &cpu.iter().map(|&v| f64::from(v)).collect::<Vec<_>>());
        assert!(vs_port < 1e-5, "{m}x{n}x{k}: {vs_port:e} from the CPU port");
    }
}

/// Rung 18 with its source changed (the same launch otherwise).
struct Planted {
    edits: &'static [(&'static str, &'static str)],
}

impl Kernel for Planted {
    fn info(&self) -> KernelInfo {
        tensorcore::GemmWgmmaTma.info()
    }

    fn cuda(&self, shape: &Shape) -> Option<CudaPlan> {
        let mut plan = tensorcore::GemmWgmmaTma.cuda(shape)?;
        edit_launches(&mut plan, self.edits, 0);
        Some(plan)
    }
}

/// Replaces every `from` by its `to` in the source of each launch of `plan` (each must be
/// there) and widens its grid by `extra_blocks`.
fn edit_launches(plan: &mut CudaPlan, edits: Edits, extra_blocks: u32) {
    for step in &mut plan.steps {
        if let kernel::Step::Kernel(l) = step {
            let mut code = l.source.code.to_string();
            for (from, to) in edits {
                assert!(code.contains(from), "nothing to edit: {from}");
                code = code.replace(from, to);
            }
            l.source.code = code.into();
            l.grid[0] += extra_blocks;
        }
    }
}

/// What a planted bug must produce.
enum Expect {
    /// A deadlock report containing all of these.
    Deadlock(&'static [&'static str]),
    /// A wrong result, or an error of the simulator (a deadlock, a misuse).
    Fails,
}

/// Runs the planted bug; the simulator's message, where it stopped with one.
fn planted_fails(edits: &'static [(&'static str, &'static str)], expect: Expect) -> Option<String> {
    let dev = SimDevice::new().expect("the simulator needs a C++ compiler");
    let bug = Planted { edits };
    let shape = (256, 256, 384);
    let (out, data) = run(&dev, &bug, shape);
    let what = format!("{:?}", edits.iter().map(|e| e.1).collect::<Vec<_>>());
    match (out, expect) {
        (Err(DeviceError::Sim(msg)), Expect::Deadlock(want)) => {
            eprintln!("{what}: {msg}");
            for w in want {
                assert!(msg.contains(w), "{what}: the report lacks {w:?}: {msg}");
            }
            Some(msg)
        }
        (Err(DeviceError::Sim(msg)), Expect::Fails) => {
            // A deadlock, or a misuse the emulation reports (an arrival on a phase that
            // cannot take one).
            eprintln!("{what}: {msg}");
            assert!(msg.starts_with("gemm_wgmma_tma: "), "{what}: {msg}");
            Some(msg)
        }
        (Ok(out), Expect::Fails) => {
            let err = relative_error(&out, &gemm_f64(shape, &data[0], &data[1], bf16));
            eprintln!("{what}: relative error {err:e}");
            assert!(
                err.is_nan() || err > 1e-2,
                "{what} went unnoticed: relative error {err:e}"
            );
            None
        }
        (other, _) => panic!("{what}: expected a failure, got {:?}", other.map(|_| ())),
    }
}

/// A failure inside one of lab/hopper.h's emulations names the rung's line that called it
/// (here a TMA box into shared memory 16 bytes off the 128-byte alignment TMA requires).
#[test]
fn a_misaligned_tma_destination_names_the_rungs_line() {
    let dev = SimDevice::new().expect("the simulator needs a C++ compiler");
    let call = "hopper::tma_load_2d(as + s * A_TILE,";
    let bug = Planted {
        edits: &[(
            "hopper::tma_load_2d(as + s * A_TILE,",
            "hopper::tma_load_2d(as + s * A_TILE + 8,",
        )],
    };
    let (out, _) = run(&dev, &bug, (256, 256, 384));
    let e = out
        .map(|_| ())
        .expect_err("the misaligned box is reported")
        .to_string();
    let line = source_line(include_str!("../kernels/18_wgmma_tma.cu"), call);
    assert!(
        e.contains("must be 128-byte aligned")
            && e.contains(&format!(
                "; this thread's access is at tensorcore/kernels/18_wgmma_tma.cu:{line} ("
            )),
        "{e}"
    );
}

/// The deadlock names the barrier's state, and the lines its threads wait at: the consumers'
/// wait for the full stage.
#[test]
fn more_expected_bytes_than_land_is_a_deadlock_naming_the_barrier() {
    let msg = planted_fails(
        &[(
            "mbar_expect_tx(&full[s], STAGE_BYTES)",
            "mbar_expect_tx(&full[s], STAGE_BYTES + 16)",
        )],
        Expect::Deadlock(&[
            "gemm_wgmma_tma: deadlock at an mbarrier wait",
            "wait for parity 0 of the mbarrier at shared address 0x",
            "phase parity 0, 0 of 1 arrivals pending, tx-count 16",
        ]),
    )
    .unwrap();
    let line = source_line(
        include_str!("../kernels/18_wgmma_tma.cu"),
        "hopper::mbar_wait(&full[s]",
    );
    assert!(
        msg.contains(&format!(
            "; waiting at tensorcore/kernels/18_wgmma_tma.cu:{line} (256 threads)"
        )),
        "{msg}"
    );
}

#[test]
fn fewer_expected_bytes_than_land_is_a_deadlock_naming_the_barrier() {
    planted_fails(
        &[(
            "mbar_expect_tx(&full[s], STAGE_BYTES)",
            "mbar_expect_tx(&full[s], STAGE_BYTES - 16)",
        )],
        Expect::Deadlock(&[
            "deadlock at an mbarrier wait",
            "phase parity 0, 0 of 1 arrivals pending, tx-count -16",
        ]),
    );
}

#[test]
fn a_wrong_swizzle_in_the_descriptor_fails() {
    planted_fails(
        &[(
            "hopper::smem_desc_128b(a + kk * 16, 16, 1024)",
            "hopper::smem_desc(a + kk * 16, 16, 1024, hopper::SWIZZLE_64B)",
        )],
        Expect::Fails,
    );
}

#[test]
fn wrong_descriptor_fields_fail() {
    // A's 8-row groups are 1024 B apart, not 512; B's 64-column boxes 8192 B apart, not 4096.
    planted_fails(
        &[(
            "hopper::smem_desc_128b(a + kk * 16, 16, 1024)",
            "hopper::smem_desc_128b(a + kk * 16, 16, 512)",
        )],
        Expect::Fails,
    );
    planted_fails(
        &[(
            "hopper::smem_desc_128b(b + kk * 16 * 64, B_CHUNK * 2, 1024)",
            "hopper::smem_desc_128b(b + kk * 16 * 64, B_CHUNK, 1024)",
        )],
        Expect::Fails,
    );
    // The K step inside a swizzled row is 32 B (16 elements), not 16 B.
    planted_fails(
        &[(
            "hopper::smem_desc_128b(a + kk * 16, 16, 1024)",
            "hopper::smem_desc_128b(a + kk * 8, 16, 1024)",
        )],
        Expect::Fails,
    );
}

/// One arrival per warpgroup after its wgmma.wait_group, as CUTLASS's and FlashAttention-3's
/// pipelines free a stage: a wgmma is one operation of the four warps, so the wait of the warp
/// that arrives covers the whole warpgroup's reads, and the simulator must not report a race
/// there. Under every schedule (seeds), the product is exact.
#[test]
fn a_stage_freed_once_per_warpgroup_after_its_wait_is_correct() {
    let bug = Planted {
        edits: &[
            (
                "mbar_init(&empty[s], CONSUMERS * 4)",
                "mbar_init(&empty[s], CONSUMERS)",
            ),
            (
                "if (threadIdx.x % 32 == 0) hopper::mbar_arrive(&empty[s]);",
                "if (threadIdx.x % 128 == 0) hopper::mbar_arrive(&empty[s]);",
            ),
        ],
    };
    let shape = (256, 256, 384);
    for seed in 0..3 {
        let dev = SimDevice::new()
            .expect("the simulator needs a C++ compiler")
            .with_seed(seed);
        let (out, data) = run(&dev, &bug, shape);
        let out = out.unwrap_or_else(|e| panic!("seed {seed}: {e}"));
        let err = relative_error(&out, &gemm_f64(shape, &data[0], &data[1], bf16));
        assert!(err < 1e-6, "seed {seed}: relative error {err:e}");
    }
}

#[test]
fn a_consumer_that_does_not_wait_for_its_stage_fails() {
    planted_fails(
        &[(
            "hopper::mbar_wait(&full[s], (kt / STAGES) & 1);",
            "/* no wait for the stage */",
        )],
        Expect::Fails,
    );
}

/// Rung 23 with its source edited and its grid possibly widened (the same launch otherwise).
struct L2Order {
    sms: u32,
    edits: Edits,
    /// Blocks beyond the plan's min(tiles, sms), which find no tile to walk.
    extra_blocks: u32,
}

impl Kernel for L2Order {
    fn info(&self) -> KernelInfo {
        tensorcore::GemmWgmmaL2Order::default().info()
    }

    fn cuda(&self, shape: &Shape) -> Option<CudaPlan> {
        let mut plan = tensorcore::GemmWgmmaL2Order { sms: self.sms }.cuda(shape)?;
        edit_launches(&mut plan, self.edits, self.extra_blocks);
        Some(plan)
    }
}

/// Source edits: each (from, to) replaces every `from`.
type Edits = &'static [(&'static str, &'static str)];

/// Groups of 2 block-rows instead of 16, so that small shapes span several groups.
const SMALL_GROUP: (&str, &str) = ("#define GROUP 16", "#define GROUP 2");
const SMALL_GROUPS: Edits = &[SMALL_GROUP];

/// Rung 23 on shapes with M, N and K tails, K long enough for the 4-stage ring to wrap inside
/// a tile, blocks that walk several tiles (planned for 3 SMs), groups of 2 block-rows with a
/// short last group, more blocks than tiles, and fewer tiles than SMs.
#[test]
fn l2_order_matches_the_reference_on_awkward_shapes() {
    let dev = SimDevice::new().expect("the simulator needs a C++ compiler");
    let cases: [(L2Order, (usize, usize, usize)); 5] = [
        (
            L2Order {
                sms: 3,
                edits: &[],
                extra_blocks: 0,
            },
            (300, 520, 136),
        ),
        (
            L2Order {
                sms: 3,
                edits: &[],
                extra_blocks: 0,
            },
            (130, 776, 392),
        ),
        (
            L2Order {
                sms: 4,
                edits: SMALL_GROUPS,
                extra_blocks: 0,
            },
            (600, 776, 136),
        ),
        (
            L2Order {
                sms: 132,
                edits: &[],
                extra_blocks: 3,
            },
            (200, 264, 72),
        ),
        (
            L2Order {
                sms: 132,
                edits: &[],
                extra_blocks: 0,
            },
            (1, 8, 8),
        ),
    ];
    for (rung, (m, n, k)) in cases {
        let (out, data) = run(&dev, &rung, (m, n, k));
        let out = out.unwrap_or_else(|e| panic!("{m}x{n}x{k}: {e}"));
        check_gemm(
            &tensorcore::GemmWgmmaL2Order::default(),
            (m, n, k),
            &out,
            &data,
        );
    }
}

/// The kernel's `tile_origin` walks the tiles as `tensorcore::grouped_tile` says: each
/// block's first consumer thread writes, in place of its tile of C, the tile's block-row and
/// block-column at C[2 t] and C[2 t + 1] for tile number t.
#[test]
fn the_kernel_walks_its_tiles_as_grouped_tile_says() {
    const RECORD: (&str, &str) = (
        "        const int row = m0 + c * 64 + warp * 16 + lane / 4;",
        "        if (threadIdx.x == 128) {
            C[2 * tile] = (float)(m0 / BM);
            C[2 * tile + 1] = (float)(n0 / BN);
        }
        continue;
        const int row = m0 + c * 64 + warp * 16 + lane / 4;",
    );
    let dev = SimDevice::new().expect("the simulator needs a C++ compiler");
    // 37 x 3 tiles in groups of 16 (a short last group of 5), 8 x 5 in groups of 2.
    let cases: [(Edits, u32, (usize, usize, usize)); 2] = [
        (&[RECORD], tensorcore::L2_GROUP, (4700, 520, 8)),
        (&[RECORD, SMALL_GROUP], 2, (1000, 1160, 8)),
    ];
    for (edits, group, (m, n, k)) in cases {
        let rung = L2Order {
            sms: 7,
            edits,
            extra_blocks: 0,
        };
        let out = run(&dev, &rung, (m, n, k))
            .0
            .unwrap_or_else(|e| panic!("{m}x{n}x{k}: {e}"));
        let (tiles_m, tiles_n) = (m.div_ceil(128) as u32, n.div_ceil(256) as u32);
        for t in 0..tiles_m * tiles_n {
            let got = (out[2 * t as usize], out[2 * t as usize + 1]);
            let (tm, tn) = tensorcore::grouped_tile(t, tiles_m, tiles_n, group);
            assert_eq!(got, (tm as f32, tn as f32), "{m}x{n}: tile {t}");
        }
    }
}

/// Rung 24 (or 26, `cta`) with its source edited (the same launch otherwise).
struct Clustered {
    sms: u32,
    edits: Edits,
    cta: bool,
}

impl Kernel for Clustered {
    fn info(&self) -> KernelInfo {
        match self.cta {
            false => tensorcore::GemmWgmmaCluster::default().info(),
            true => tensorcore::GemmWgmmaClusterCta::default().info(),
        }
    }

    fn cuda(&self, shape: &Shape) -> Option<CudaPlan> {
        let sms = self.sms;
        let mut plan = match self.cta {
            false => tensorcore::GemmWgmmaCluster { sms }.cuda(shape)?,
            true => tensorcore::GemmWgmmaClusterCta { sms }.cuda(shape)?,
        };
        edit_launches(&mut plan, self.edits, 0);
        Some(plan)
    }
}

/// Checks `out` against the f64 product of the BF16-rounded inputs and the CPU port.
fn check_gemm(rung: &dyn Kernel, (m, n, k): (usize, usize, usize), out: &[f32], data: &[Vec<f32>]) {
    let exact = gemm_f64((m, n, k), &data[0], &data[1], bf16);
    let err = relative_error(out, &exact);
    assert!(
        err < 1e-6,
        "{m}x{n}x{k}: {err:e} from the f64 product of BF16 operands"
    );
    let port = rung.cpu().expect("the rung has a CPU port");
    let mut cpu = vec![f32::NAN; m * n];
    port(&Shape::gemm(m, n, k), &[&data[0], &data[1]], &mut cpu);
    let vs_port = relative_error(out, &cpu.iter().map(|&v| f64::from(v)).collect::<Vec<_>>());
    assert!(vs_port < 1e-5, "{m}x{n}x{k}: {vs_port:e} from the CPU port");
}

/// Rung 24 on awkward shapes: M, N and K tails; an odd count of block-rows, so that the last
/// pair's second block lies wholly past M (its A boxes are all fill); a single row; clusters
/// walking several pair tiles with a ring that wraps (planned for 4 and 2 SMs); groups of one
/// pair-row; fewer pair tiles than clusters. Several schedules for the first shape.
#[test]
fn cluster_matches_the_reference_on_awkward_shapes() {
    type Case = (u32, Edits, (usize, usize, usize), u64);
    let cases: [Case; 8] = [
        (4, &[], (300, 520, 136), 0),
        (4, &[], (300, 520, 136), 1),
        (4, &[], (300, 520, 136), 2),
        (2, &[], (130, 776, 392), 0),
        (
            6,
            &[("#define GROUP 8", "#define GROUP 1")],
            (600, 776, 136),
            0,
        ),
        (132, &[], (200, 264, 72), 0),
        (132, &[], (1, 8, 8), 0),
        (3, &[], (520, 264, 264), 3),
    ];
    for (sms, edits, (m, n, k), seed) in cases {
        let dev = SimDevice::new()
            .expect("the simulator needs a C++ compiler")
            .with_seed(seed);
        let rung = Clustered {
            sms,
            edits,
            cta: false,
        };
        let (out, data) = run(&dev, &rung, (m, n, k));
        let out = out.unwrap_or_else(|e| panic!("{m}x{n}x{k} seed {seed}: {e}"));
        check_gemm(
            &tensorcore::GemmWgmmaCluster::default(),
            (m, n, k),
            &out,
            &data,
        );
    }
}

/// Rung 26 (24 with its arrivals released at CTA scope) on the shapes of 24's test that
/// exercise the pairs: tails, the odd block-row, a ring wrapping across pair tiles, one pair.
#[test]
fn cluster_cta_matches_the_reference_on_awkward_shapes() {
    let cases: [(u32, (usize, usize, usize), u64); 4] = [
        (4, (300, 520, 136), 0),
        (4, (300, 520, 136), 1),
        (2, (130, 776, 392), 0),
        (132, (1, 8, 8), 0),
    ];
    for (sms, (m, n, k), seed) in cases {
        let dev = SimDevice::new()
            .expect("the simulator needs a C++ compiler")
            .with_seed(seed);
        let rung = Clustered {
            sms,
            edits: &[],
            cta: true,
        };
        let (out, data) = run(&dev, &rung, (m, n, k));
        let out = out.unwrap_or_else(|e| panic!("{m}x{n}x{k} seed {seed}: {e}"));
        check_gemm(
            &tensorcore::GemmWgmmaClusterCta::default(),
            (m, n, k),
            &out,
            &data,
        );
    }
}

/// What a planted bug in rung 24 gives under each of `seeds` schedules: the simulator's
/// message, a wrong result, or nothing (a schedule that did not expose it).
fn cluster_bug(edits: Edits, seeds: u64) -> Vec<Result<String, f64>> {
    let shape = (300, 520, 264);
    (0..seeds)
        .filter_map(|seed| {
            let dev = SimDevice::new()
                .expect("the simulator needs a C++ compiler")
                .with_seed(seed);
            let rung = Clustered {
                sms: 4,
                edits,
                cta: false,
            };
            let (out, data) = run(&dev, &rung, shape);
            match out {
                Err(DeviceError::Sim(msg)) => Some(Ok(msg)),
                Err(e) => panic!("{e}"),
                Ok(out) => {
                    let err = relative_error(&out, &gemm_f64(shape, &data[0], &data[1], bf16));
                    (err.is_nan() || err > 1e-2).then_some(Err(err))
                }
            }
        })
        .collect()
}

#[test]
fn a_multicast_to_one_block_only_is_a_deadlock_on_the_partners_barrier() {
    // The partner's `full` barrier waits for the 16 KB of B this block no longer sends it.
    let found = cluster_bug(&[("(1 << CLUSTER) - 1)", "1 << rank)")], 1);
    let msg = match found.as_slice() {
        [Ok(msg)] => msg,
        other => panic!("expected a deadlock, got {other:?}"),
    };
    for want in [
        "gemm_wgmma_cluster: deadlock at an mbarrier wait",
        "0 of 1 arrivals pending, tx-count 16384",
    ] {
        assert!(msg.contains(want), "lacks {want:?}: {msg}");
    }
}

#[test]
fn a_stage_released_only_in_its_own_block_is_caught() {
    // Consumers that free a stage only for their own producer let the partner's multicast
    // overwrite a stage this block has not finished reading.
    let found = cluster_bug(
        &[
            (
                "mbar_init(&empty[s], CLUSTER * CONSUMERS * 4)",
                "mbar_init(&empty[s], CONSUMERS * 4)",
            ),
            (
                "for (unsigned r = 0; r < CLUSTER; ++r) hopper::mbar_arrive_cluster(&empty[s], r);",
                "hopper::mbar_arrive(&empty[s]);",
            ),
        ],
        6,
    );
    assert!(!found.is_empty(), "no schedule of six exposed it");
}

#[test]
fn empty_barriers_that_count_one_block_reject_the_partners_arrivals() {
    let found = cluster_bug(
        &[(
            "mbar_init(&empty[s], CLUSTER * CONSUMERS * 4)",
            "mbar_init(&empty[s], CONSUMERS * 4)",
        )],
        3,
    );
    assert!(!found.is_empty(), "no schedule of three exposed it");
}

#[test]
fn a_block_that_exits_without_the_final_cluster_barrier_is_reported() {
    let found = cluster_bug(
        &[(
            "    // No block exits while its partner may still arrive on its barriers.\n    hopper::cluster_sync();",
            "",
        )],
        6,
    );
    let exited = found
        .iter()
        .filter(|f| matches!(f, Ok(m) if m.contains("whose threads have all exited")))
        .count();
    assert!(exited > 0, "no schedule of six reported it: {found:?}");
}

#[test]
fn signalling_the_partner_before_its_barriers_are_initialized_is_reported() {
    // A block barrier orders the initialization for the block's own threads, not for the
    // partner's copies and arrivals. Which of them comes first, and so which report (an
    // mbarrier not yet initialized, or one whose init no cluster barrier has published),
    // depends on how the cluster's blocks interleave.
    let found = cluster_bug(
        &[(
            "        hopper::fence_barrier_init();\n    }\n    hopper::cluster_sync();",
            "        hopper::fence_barrier_init();\n    }\n    __syncthreads();",
        )],
        6,
    );
    let uninit = found
        .iter()
        .filter(|f| {
            matches!(f, Ok(m) if (m.contains("which mbarrier.init has not initialized")
                || m.contains("no cluster barrier has completed since that block's mbarrier.init"))
                && (m.contains("TMA copy") || m.contains("::cluster")))
        })
        .count();
    assert!(uninit > 0, "no schedule of six reported it: {found:?}");
}

/// Rung 25 with its source edited (the same launch otherwise).
struct Overlap {
    sms: u32,
    edits: Edits,
}

impl Kernel for Overlap {
    fn info(&self) -> KernelInfo {
        tensorcore::GemmWgmmaOverlap::default().info()
    }

    fn cuda(&self, shape: &Shape) -> Option<CudaPlan> {
        let mut plan = tensorcore::GemmWgmmaOverlap { sms: self.sms }.cuda(shape)?;
        edit_launches(&mut plan, self.edits, 0);
        Some(plan)
    }
}

/// Rung 25 on tails in M, N and K, a single k-tile (nothing left in flight to wait for), a
/// ring that wraps inside a tile and across the tiles a block walks, and several schedules.
#[test]
fn overlap_matches_the_reference_on_awkward_shapes() {
    let cases: [(u32, (usize, usize, usize)); 4] = [
        (3, (300, 520, 136)),
        (3, (130, 776, 392)),
        (132, (200, 264, 8)),
        (2, (1, 8, 8)),
    ];
    for seed in 0..2 {
        let dev = SimDevice::new()
            .expect("the simulator needs a C++ compiler")
            .with_seed(seed);
        for (sms, (m, n, k)) in cases {
            let (out, data) = run(&dev, &Overlap { sms, edits: &[] }, (m, n, k));
            let out = out.unwrap_or_else(|e| panic!("{m}x{n}x{k}: {e}"));
            check_gemm(
                &tensorcore::GemmWgmmaOverlap::default(),
                (m, n, k),
                &out,
                &data,
            );
        }
    }
}

/// With wait_group 1, the stage of the k-tile just committed is still being read by wgmma in
/// flight: freeing it at once, as rung 23 does after wait_group 0, lets the producer refill it
/// under them. The simulator runs a warp's wgmma at the wait_group that covers it, so the
/// refill lands first and the result is wrong under some schedule.
#[test]
fn freeing_the_stage_still_in_flight_is_caught() {
    const EARLY: Edits = &[
        (
            "if (kt > 0 && threadIdx.x % 32 == 0) hopper::mbar_arrive(&empty[(it - 1) % STAGES]);",
            "if (threadIdx.x % 32 == 0) hopper::mbar_arrive(&empty[s]);",
        ),
        (
            "if (ktiles > 0 && threadIdx.x % 32 == 0) hopper::mbar_arrive(&empty[(it - 1) % STAGES]);",
            "",
        ),
    ];
    let shape = (300, 520, 264);
    let caught = (0..4).any(|seed| {
        let dev = SimDevice::new()
            .expect("the simulator needs a C++ compiler")
            .with_seed(seed);
        let (out, data) = run(
            &dev,
            &Overlap {
                sms: 4,
                edits: EARLY,
            },
            shape,
        );
        match out {
            Err(DeviceError::Sim(msg)) => {
                eprintln!("seed {seed}: {msg}");
                true
            }
            Err(e) => panic!("{e}"),
            Ok(out) => {
                let err = relative_error(&out, &gemm_f64(shape, &data[0], &data[1], bf16));
                eprintln!("seed {seed}: relative error {err:e}");
                err.is_nan() || err > 1e-2
            }
        }
    });
    assert!(
        caught,
        "a stage freed while its wgmma were in flight went unnoticed"
    );
}

/// Rung 28 planned for `sms` SMs, its source edited.
struct SplitK {
    sms: u32,
    edits: Edits,
}

impl Kernel for SplitK {
    fn info(&self) -> KernelInfo {
        tensorcore::GemmWgmmaSplitK::default().info()
    }

    fn cuda(&self, shape: &Shape) -> Option<CudaPlan> {
        let mut plan = tensorcore::GemmWgmmaSplitK { sms: self.sms }.cuda(shape)?;
        edit_launches(&mut plan, self.edits, 0);
        Some(plan)
    }
}

/// Rung 28 split 4, 3 and 8 ways (clusters of that many blocks; 3 splits the tile's 128 rows
/// unevenly among the reducing blocks) on shapes with M, N and K tails, under several
/// schedules; and unsplit, where it is rung 25.
#[test]
fn split_k_matches_the_reference_split_or_not() {
    type Case = (u32, (usize, usize, usize), usize, u64);
    let cases: [Case; 6] = [
        (16, (130, 264, 1032), 4, 0),
        (16, (130, 264, 1032), 4, 1),
        (12, (130, 264, 1032), 3, 2),
        (132, (72, 40, 2048), 8, 0),
        (132, (200, 264, 72), 1, 0),
        (132, (1, 8, 8), 1, 0),
    ];
    for (sms, (m, n, k), splits, seed) in cases {
        let rung = SplitK { sms, edits: &[] };
        assert_eq!(
            tensorcore::GemmWgmmaSplitK { sms }.splits(&Shape::gemm(m, n, k)),
            splits,
            "{m}x{n}x{k} on {sms} SMs"
        );
        let dev = SimDevice::new()
            .expect("the simulator needs a C++ compiler")
            .with_seed(seed);
        let (out, data) = run(&dev, &rung, (m, n, k));
        let out = out.unwrap_or_else(|e| panic!("{m}x{n}x{k} split {splits} seed {seed}: {e}"));
        check_gemm(
            &tensorcore::GemmWgmmaSplitK::default(),
            (m, n, k),
            &out,
            &data,
        );
    }
}

/// Rung 28 at 130x264x1032 split 4 ways, its source edited, under seeds 0, 1 and 2 (plain) or
/// seed 0 (instrumented, as `harness` runs it): the simulator's message, or the relative error
/// of the result.
fn split_k_bug(edits: Edits, instrumented: bool) -> Vec<Result<String, f64>> {
    let (m, n, k) = (130, 264, 1032);
    let seeds = if instrumented { 0..1 } else { 0..3 };
    seeds
        .map(|seed| {
            let dev = SimDevice::new()
                .expect("the simulator needs a C++ compiler")
                .with_seed(seed);
            let dev = if instrumented {
                dev.instrumented()
            } else {
                dev
            };
            let (out, data) = run(&dev, &SplitK { sms: 16, edits }, (m, n, k));
            match out {
                Err(e) => Ok(e.to_string()),
                Ok(out) => Err(relative_error(
                    &out,
                    &gemm_f64((m, n, k), &data[0], &data[1], bf16),
                )),
            }
        })
        .collect()
}

/// Each of rung 28's three barriers is needed: without the first, a block's partial
/// overwrites the ring while its other consumer's last wgmma still reads it; without the
/// second, blocks read partials not yet written; without the last, a block reads the partial
/// of one that has exited, whose shared memory is gone (the poison, and in the instrumented
/// build that `harness` runs a failure naming that block).
#[test]
fn split_k_without_any_one_of_its_barriers_fails() {
    const RING_FREE: Edits = &[("    hopper::named_sync(1, 128 * CONSUMERS);", "")];
    const PARTIALS_WRITTEN: Edits = &[(
        "    // Every block's partial is written (release), and readable by the others (acquire).\n    hopper::cluster_sync();",
        "",
    )];
    const NONE_EXITED: Edits = &[(
        "    // No block exits while another may still read its partial.\n    hopper::cluster_sync();",
        "",
    )];
    for edits in [RING_FREE, PARTIALS_WRITTEN, NONE_EXITED] {
        for r in split_k_bug(edits, false) {
            assert!(
                !matches!(r, Err(e) if e < 1e-3),
                "{edits:?}: passed ({r:?})"
            );
        }
    }
    let msg = split_k_bug(NONE_EXITED, true)
        .remove(0)
        .expect("a failure in the instrumented build");
    assert!(
        msg.contains("bytes of the shared memory of block (")
            && msg.contains("of the cluster, whose threads have all exited"),
        "{msg}"
    );
}
