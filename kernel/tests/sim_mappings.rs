//! The simulator keeps a pool of workers per loaded module, each with fiber stacks for 1024
//! threads below guard pages; every guard page splits the stacks' mapping. A process that
//! runs many modules (a network's forward pass, `harness check` of every workload) must not
//! keep those splits between launches, or it reaches the kernel's limit on mappings
//! (vm.max_map_count, 65530 by default) and thread creation fails.

use kernel::sim::SimDevice;
use kernel::testing::{PlanKernel, gemm_launch, inputs};
use kernel::{Executor, Shape};

/// One 1024-thread block writing C; `VARIANT` makes each define a module of its own.
const KERNEL: &str = r#"
extern "C" __global__ void wide(const float *A, const float *B, float *C, int M, int N, int K) {
    int i = threadIdx.x;
    if (i < M * N) C[i] = A[i % (M * K)] + VARIANT;
}
"#;

fn mappings() -> usize {
    std::fs::read_to_string("/proc/self/maps")
        .expect("Linux /proc")
        .lines()
        .count()
}

#[test]
fn launches_of_many_modules_leave_no_guard_page_mappings_behind() {
    let dev = SimDevice::new().unwrap();
    let shape = Shape::gemm(32, 32, 32);
    let x = inputs(&shape, 3);
    let run = |variant: usize| {
        let mut plan = gemm_launch(
            "tests/wide.cu",
            KERNEL,
            "wide",
            [1, 1, 1],
            [1024, 1, 1],
            (32, 32, 32),
        );
        for step in &mut plan.steps {
            if let kernel::Step::Kernel(l) = step {
                l.source = l.source.clone().define("VARIANT", variant);
            }
        }
        let k = PlanKernel::fp32(plan);
        let mut p = dev.prepare(&k, &shape, &x).unwrap();
        p.run().unwrap();
        assert_eq!(p.output().unwrap()[0], x[0][0] + variant as f32);
    };
    // The first module loaded, and the g++ runtime's own mappings, before counting.
    run(0);
    let before = mappings();
    const MODULES: usize = 6;
    for v in 1..=MODULES {
        run(v);
    }
    let grown = mappings().saturating_sub(before);
    // A kept pool costs each module two mappings per guarded stack: 2049 for a 1024-thread
    // block. Loading a module itself takes a few dozen.
    assert!(
        grown < MODULES * 200,
        "{grown} more mappings after {MODULES} modules of 1024-thread blocks"
    );
}
