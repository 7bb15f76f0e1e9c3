//! Every CUDA kernel of every stage, executed from its real source by the CUDA simulator on the
//! CPU, on the configured simulator shapes (tails included), must match the f64 reference.
//! A kernel joins this matrix by being registered: no new test code. A kernel may be skipped
//! only for a declared reason (GPU-only features, a library call, a shape it declines, no CUDA
//! source at all); any
//! other skip fails the test.

use harness::config::Config;
use harness::results::Status;
use harness::run::{evaluate, reference_for};
use harness::{inputs, registry};
use kernel::sim::SimDevice;
use kernel::{Executor, Step, Workload};

#[test]
fn every_kernel_matches_the_reference_in_the_simulator() {
    let dev = SimDevice::new()
        .expect("the simulator needs a host C++ compiler (g++)")
        .instrumented();
    let config = Config::defaults();
    let all = registry::all();
    let refs: Vec<&dyn kernel::Kernel> = all.iter().map(|k| k.as_ref()).collect();
    // Every module built on all cores first, as a run builds them.
    harness::run::Ablation {
        dev: &dev,
        config: &config,
        kernels: refs.clone(),
        shapes: Workload::ALL
            .iter()
            .map(|&w| (w, config.shapes(w, "sim")))
            .collect(),
        timing: None,
        keep_unrunnable: false,
    }
    .precompile();
    let (mut passed, mut skipped, mut problems) = (Vec::new(), Vec::new(), Vec::new());
    for w in Workload::ALL {
        let shapes = config.shapes(w, "sim");
        for k in registry::for_workload(&all, w) {
            let id = k.info().id;
            for shape in &shapes {
                let x = inputs::random_inputs(shape, config.seed);
                let reference = reference_for(&dev, &refs, shape, &x, &config);
                let (row, _) = evaluate(&dev, k, shape, &x, &x, &reference);
                // CPU-only rows (peer crates) have no CUDA source to simulate.
                let declared = k.gpu_only().is_some()
                    || k.supports(shape).is_err()
                    || k.cuda(shape).is_none()
                    || k.cuda(shape)
                        .is_some_and(|p| p.steps.iter().any(|s| matches!(s, Step::Library(_))));
                match row.status {
                    Status::Passed => passed.push(format!("{id} {}", shape.label())),
                    Status::Unsupported if declared => skipped.push(format!(
                        "{id} {}: {}",
                        shape.label(),
                        row.reason.as_deref().unwrap_or("")
                    )),
                    _ => problems.push(format!(
                        "{id} {}: {:?}: {}",
                        shape.label(),
                        row.status,
                        row.reason.as_deref().unwrap_or("")
                    )),
                }
            }
        }
    }
    println!(
        "simulated and passed ({}):\n  {}",
        passed.len(),
        passed.join("\n  ")
    );
    println!(
        "skipped, with their declared reasons ({}):\n  {}",
        skipped.len(),
        skipped.join("\n  ")
    );
    assert!(problems.is_empty(), "{}", problems.join("\n"));
    assert!(passed.len() >= 6, "too few kernels simulated: {passed:?}");
    assert_eq!(dev.kind(), kernel::DeviceKind::Sim);
}

/// A GEMM "rung" that writes one element past the end of C.
struct WritesPastTheEnd;

const PAST_THE_END: &str = r#"
extern "C" __global__ void past_the_end(const float *A, const float *B, float *C, int M, int N, int K) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i <= M * N) C[i] = 0.0f;  // <= : one too far
}
"#;

impl kernel::Kernel for WritesPastTheEnd {
    fn info(&self) -> kernel::KernelInfo {
        kernel::KernelInfo {
            id: "gemm-past-the-end".into(),
            workload: Workload::Gemm,
            stage: kernel::Stage::Baseline,
            precision: kernel::Precision::Fp32,
            role: kernel::Role::Rung,
            rung: 2,
            summary: "a planted out-of-bounds write".into(),
        }
    }

    fn cuda(&self, shape: &kernel::Shape) -> Option<kernel::CudaPlan> {
        let (m, n, k) = kernel::gemm_dims(shape);
        Some(kernel::CudaPlan::single(
            2,
            kernel::Launch {
                source: kernel::CudaSource::embedded("tests/past_the_end.cu", PAST_THE_END),
                entry: "past_the_end".into(),
                grid: [(m * n).div_ceil(64) as u32 + 1, 1, 1],
                block: [64, 1, 1],
                dynamic_smem: 0,
                args: kernel::gemm_args(m, n, k),
            },
        ))
    }
}

#[test]
fn an_out_of_bounds_kernel_fails_its_row_and_the_run_goes_on() {
    let dev = SimDevice::new()
        .expect("the simulator needs a host C++ compiler (g++)")
        .instrumented();
    let config = Config::defaults();
    let all = registry::all();
    let pick = |id: &str| all.iter().find(|k| k.info().id == id).unwrap().as_ref();
    let ablation = harness::run::Ablation {
        dev: &dev,
        config: &config,
        kernels: vec![pick("gemm-naive"), &WritesPastTheEnd, pick("gemm-tiled")],
        shapes: vec![(Workload::Gemm, vec![kernel::Shape::gemm(20, 12, 7)])],
        timing: None,
        keep_unrunnable: false,
    };
    let results = ablation.run(|_| {}).unwrap();
    let rows = &results.workloads[0].shapes[0].rows;
    let status: Vec<Status> = rows.iter().map(|r| r.status).collect();
    assert_eq!(status, vec![Status::Passed, Status::Error, Status::Passed]);
    let why = rows[1].reason.as_deref().unwrap();
    assert!(
        why.contains("past_the_end") && why.contains("out-of-bounds write") && why.contains("'C'"),
        "the error names the kernel, the access and the buffer: {why}"
    );
    let failures = harness::report::failures(&results);
    assert_eq!(failures.len(), 1, "{failures:?}");
    assert!(failures[0].contains("gemm-past-the-end"), "{failures:?}");
}

/// A few configurations of rung 09's tuning grid, covering 128 and 256 threads, BK 8 and 16,
/// one and two sub-tiles across and several float4 loads per thread, match the reference in
/// the simulator on shapes that are not multiples of any tile.
#[test]
fn tuning_configurations_match_the_reference_in_the_simulator() {
    use restrict_unroll::{GemmTuned, TileConfig};
    let dev = SimDevice::new()
        .expect("the simulator needs a host C++ compiler (g++)")
        .instrumented();
    let config = Config::defaults();
    let grid = TileConfig::grid();
    let pick = |bm, bn, bk, wm, wn, wniter| {
        let c = TileConfig {
            bm,
            bn,
            bk,
            wm,
            wn,
            wniter,
        };
        assert!(grid.contains(&c), "{c} is not in the grid");
        c
    };
    let configs = [
        TileConfig::default(),
        pick(64, 128, 16, 32, 64, 1),
        pick(256, 64, 16, 64, 32, 2),
        pick(128, 128, 8, 64, 64, 2),
    ];
    let mut problems = Vec::new();
    for shape in [
        kernel::Shape::gemm(130, 260, 72),
        kernel::Shape::gemm(67, 36, 20),
    ] {
        let x = inputs::random_inputs(&shape, config.seed);
        let reference = reference_for(&dev, &[], &shape, &x, &config);
        for c in configs {
            let k = GemmTuned::fixed(c);
            let (row, _) = evaluate(&dev, &k, &shape, &x, &x, &reference);
            if row.status != Status::Passed {
                problems.push(format!(
                    "{c} {}: {:?} {:?}",
                    shape.label(),
                    row.status,
                    row.reason
                ));
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// The lesson of the GEMM ladder in the simulator's counts: each reuse idea issues fewer bytes
/// of global-memory traffic for the same shape, so the rows stand at rising intensity, none
/// above the compulsory one (every input read once, the output written once).
#[test]
fn a_simulator_run_places_the_gemm_rungs_at_their_own_intensity() {
    let dev = SimDevice::new().unwrap().instrumented();
    let config = Config::defaults();
    let all = registry::all();
    let refs: Vec<&dyn kernel::Kernel> = all.iter().map(|k| k.as_ref()).collect();
    let shape = kernel::Shape::gemm(64, 96, 80);
    let x = inputs::random_inputs(&shape, config.seed);
    let reference = reference_for(&dev, &refs, &shape, &x, &config);
    let intensity = |id: &str| {
        let k = all.iter().find(|k| k.info().id == id).unwrap();
        let (row, _) = evaluate(&dev, k.as_ref(), &shape, &x, &x, &reference);
        assert_eq!(row.status, Status::Passed, "{id}: {:?}", row.reason);
        let t = row
            .traffic
            .unwrap_or_else(|| panic!("{id}: no traffic counted"));
        assert!(
            t.bytes() >= row.min_bytes,
            "{id}: {t:?} below {}",
            row.min_bytes
        );
        shape.flops() / t.bytes()
    };
    let (naive, tiled, blocked) = (
        intensity("gemm-naive"),
        intensity("gemm-tiled"),
        intensity("gemm-regblock-2d"),
    );
    // Two loads of 4 bytes per multiply-add, whatever the shape (the output store aside).
    assert!((naive - 0.25).abs() < 0.01, "naive {naive}");
    assert!(
        tiled > 4.0 * naive && blocked > tiled,
        "{naive} {tiled} {blocked}"
    );
}

/// The persistent Hopper rung planned for 2 SMs: each block walks several tiles, its ring
/// running on across them (a ring position or phase parity restarted per tile would hang or
/// mix tiles), at shapes with M, N and K tails.
#[test]
fn the_persistent_rung_walks_several_tiles_per_block() {
    let dev = SimDevice::new().unwrap().instrumented();
    let config = Config::defaults();
    let all = registry::all();
    let refs: Vec<&dyn kernel::Kernel> = all.iter().map(|k| k.as_ref()).collect();
    let k = tensorcore::GemmWgmmaPersistent { sms: 2 };
    for (m, n, k_) in [(300, 520, 136), (130, 776, 72)] {
        let shape = kernel::Shape::gemm(m, n, k_);
        let plan = kernel::Kernel::cuda(&k, &shape).unwrap();
        assert_eq!(plan.launches().next().unwrap().grid, [2, 1, 1]);
        let x = inputs::random_inputs(&shape, config.seed);
        let reference = reference_for(&dev, &refs, &shape, &x, &config);
        let (row, _) = evaluate(&dev, &k, &shape, &x, &x, &reference);
        assert_eq!(row.status, Status::Passed, "{shape}: {:?}", row.reason);
    }
}

/// A registered rung with one line of its source replaced.
struct Edited<'a> {
    rung: &'a dyn kernel::Kernel,
    from: &'static str,
    to: &'static str,
}

impl kernel::Kernel for Edited<'_> {
    fn info(&self) -> kernel::KernelInfo {
        kernel::KernelInfo {
            id: format!("{}-edited", self.rung.info().id).into(),
            ..self.rung.info()
        }
    }

    fn cuda(&self, shape: &kernel::Shape) -> Option<kernel::CudaPlan> {
        let mut plan = self.rung.cuda(shape)?;
        for step in &mut plan.steps {
            if let Step::Kernel(l) = step {
                assert!(l.source.code.contains(self.from), "no `{}`", self.from);
                l.source.code = l.source.code.replace(self.from, self.to).into();
            }
        }
        Some(plan)
    }
}

/// reduce/08_one_pass.cu: "a second __threadfence(), after its count, keeps its reads of them
/// from moving before it (without it the simulator reports the race)".
#[test]
fn the_one_launch_sum_without_the_fence_after_its_count_is_a_race() {
    let dev = SimDevice::new()
        .expect("the simulator needs a host C++ compiler (g++)")
        .instrumented();
    let config = Config::defaults();
    let rung = registry::all()
        .into_iter()
        .find(|k| k.info().id == "reduce-one-pass")
        .unwrap();
    let rung = rung.as_ref();
    let unfenced = Edited {
        rung,
        from: "if (last) __threadfence();",
        to: "",
    };
    let results = harness::run::Ablation {
        dev: &dev,
        config: &config,
        kernels: vec![rung, &unfenced],
        shapes: vec![(Workload::Reduce, vec![kernel::Shape::Reduce { n: 70_001 }])],
        timing: None,
        keep_unrunnable: false,
    }
    .run(|_| {})
    .unwrap();
    let rows = &results.workloads[0].shapes[0].rows;
    let status: Vec<Status> = rows.iter().map(|r| r.status).collect();
    assert_eq!(status, vec![Status::Passed, Status::Error]);
    let why = rows[1].reason.as_deref().unwrap();
    assert!(
        why.contains("race on global memory") && why.contains("'partial sums'"),
        "{why}"
    );
}

/// fusion/README.md: "Each port adds in the order of its rung, so it rounds as the rung does":
/// every rung of the sum gives, in the simulator, the very bits its CPU port gives, at sizes
/// that take one, two and three launches and the fixed grid's second trip.
#[test]
fn the_sums_ports_round_as_their_rungs_do() {
    let dev = SimDevice::new().expect("the simulator needs a host C++ compiler (g++)");
    let config = Config::defaults();
    let all = registry::all();
    let rungs = registry::for_workload(&all, Workload::Reduce);
    assert_eq!(rungs.len(), 8);
    for n in [7, 70_001, 300_001] {
        let shape = kernel::Shape::Reduce { n };
        let x = inputs::random_inputs(&shape, config.seed);
        for k in &rungs {
            let mut run = dev.prepare(*k, &shape, &x).unwrap();
            run.run().unwrap();
            let got = run.output().unwrap();
            let mut want = [f32::NAN];
            (k.cpu().unwrap())(&shape, &[&x[0]], &mut want);
            assert_eq!(
                got[0].to_bits(),
                want[0].to_bits(),
                "{} at N = {n}: {} in the simulator, {} by its port",
                k.info().id,
                got[0],
                want[0]
            );
        }
    }
}
