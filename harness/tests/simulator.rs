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
    let dev = SimDevice::new().expect("the simulator needs a host C++ compiler (g++)");
    let config = Config::defaults();
    let all = registry::all();
    let refs: Vec<&dyn kernel::Kernel> = all.iter().map(|k| k.as_ref()).collect();
    let (mut passed, mut skipped, mut problems) = (Vec::new(), Vec::new(), Vec::new());
    for w in Workload::ALL {
        let shapes = config.shapes(w, "sim");
        for k in registry::for_workload(&all, w) {
            let id = k.info().id;
            for shape in &shapes {
                let x = inputs::random_inputs(shape, config.seed);
                let reference = reference_for(&dev, &refs, shape, &x, &config);
                let (row, _) = evaluate(&dev, k, shape, &x, &reference);
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
