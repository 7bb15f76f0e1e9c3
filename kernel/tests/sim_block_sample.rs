//! `--sim-blocks`: the simulator runs a sample of a launch's blocks, always with the grid's
//! corners (where the tails are), the same blocks on every run, and says which output
//! elements they wrote. Plans whose result needs every block are declined.

use kernel::sim::SimDevice;
use kernel::testing::{PlanKernel, gemm_f64, gemm_launch, inputs};
use kernel::{CudaPlan, Executor, Fill, Shape};

const KERNELS: &str = r#"
// One thread per output of C = A B, 16x16 blocks, tails guarded.
extern "C" __global__ void naive(const float *A, const float *B, float *C, int M, int N, int K) {
    int row = blockIdx.y * 16 + threadIdx.y, col = blockIdx.x * 16 + threadIdx.x;
    if (row >= M || col >= N) return;
    float acc = 0.0f;
    for (int k = 0; k < K; ++k) acc += A[row * K + k] * B[k * N + col];
    C[row * N + col] = acc;
}

// The same, with the column guard forgotten: the last column of blocks reads past B's rows
// (and past B itself on the last one) and writes into the next row of C.
extern "C" __global__ void unguarded(const float *A, const float *B, float *C, int M, int N, int K) {
    int row = blockIdx.y * 16 + threadIdx.y, col = blockIdx.x * 16 + threadIdx.x;
    if (row >= M) return;
    float acc = 0.0f;
    for (int k = 0; k < K; ++k) acc += A[row * K + k] * B[k * N + col];
    C[row * N + col] = acc;
}
"#;

const ATOMIC: &str = r#"
// Every block adds its part into C.
extern "C" __global__ void partials(const float *A, const float *B, float *C, int M, int N, int K) {
    atomicAdd(&C[threadIdx.x], A[blockIdx.x]);
}
"#;

const ATOMIC_PTX: &str = r#"
// The same as inline PTX.
extern "C" __global__ void partials_ptx(const float *A, const float *B, float *C, int M, int N, int K) {
    float old;
    asm volatile("atom.global.add.f32 %0, [%1], %2;" : "=f"(old) : "l"(C + threadIdx.x), "f"(A[blockIdx.x]));
}
"#;

// Block b waits for block b - 1's flag: with a volatile load, or ld.acquire (whose asm
// statement is `asm volatile`, which alone declines nothing).
const WAIT_VOLATILE: &str = r#"
extern "C" __global__ void wait_volatile(const float *A, const float *B, float *C, int M, int N, int K) {
    volatile float *flag = C;
    if (blockIdx.x > 0) while (flag[blockIdx.x - 1] == 0.f) {}
    flag[blockIdx.x] = 1.f;
}
"#;
const WAIT_ACQUIRE: &str = r#"
extern "C" __global__ void wait_acquire(const float *A, const float *B, float *C, int M, int N, int K) {
    float f = 0.f;
    if (blockIdx.x > 0)
        while (f == 0.f) asm volatile("ld.global.acquire.gpu.f32 %0, [%1];" : "=f"(f) : "l"(C + blockIdx.x - 1));
    C[blockIdx.x] = 1.f;
}
"#;

const DIMS: (usize, usize, usize) = (100, 70, 33);
/// 5 x 7 blocks of 16 x 16 threads cover 100 x 70 outputs.
const GRID: [u32; 3] = [5, 7, 1];

fn plan(entry: &str) -> CudaPlan {
    let mut p = gemm_launch("tests/sample.cu", KERNELS, entry, GRID, [16, 16, 1], DIMS);
    p.output_fill = Fill::Nan;
    p
}

fn shape() -> Shape {
    Shape::gemm(DIMS.0, DIMS.1, DIMS.2)
}

/// Output, and the sample the run reports.
fn run(
    dev: &SimDevice,
    plan: CudaPlan,
) -> Result<(Vec<f32>, Option<kernel::BlockSample>), kernel::DeviceError> {
    let x = inputs(&shape(), 11);
    let k = PlanKernel::fp32(plan);
    let mut p = dev.prepare(&k, &shape(), &x)?;
    p.run()?;
    Ok((p.output()?, p.sample()))
}

/// The block (x, y) that owns output element `i`.
fn owner(i: usize) -> (usize, usize) {
    let (row, col) = (i / DIMS.1, i % DIMS.1);
    (col / 16, row / 16)
}

#[test]
fn a_sample_runs_the_corners_and_whole_blocks_and_says_what_they_wrote() {
    let dev = SimDevice::new().unwrap().with_block_sample(6);
    let (out, sample) = run(&dev, plan("naive")).unwrap();
    let s = sample.expect("35 blocks, 6 run: a sample");
    assert_eq!((s.blocks_run, s.blocks), (6, 35));
    let x = inputs(&shape(), 11);
    let reference = gemm_f64(DIMS, &x[0], &x[1], |v| v);
    let mut blocks: Vec<(usize, usize)> = s.written.iter().map(|&i| owner(i)).collect();
    blocks.dedup();
    blocks.sort();
    blocks.dedup();
    assert_eq!(blocks.len(), 6, "{blocks:?}");
    for corner in [(0, 0), (4, 0), (0, 6), (4, 6)] {
        assert!(
            blocks.contains(&corner),
            "corner {corner:?} not run: {blocks:?}"
        );
    }
    for (i, (&o, &r)) in out.iter().zip(&reference).enumerate() {
        if blocks.contains(&owner(i)) {
            assert!(
                s.written.binary_search(&i).is_ok(),
                "element {i} of a run block"
            );
            assert!(
                (f64::from(o) - r).abs() < 1e-3 * r.abs().max(1.0),
                "{i}: {o} vs {r}"
            );
        } else {
            assert!(o.is_nan(), "element {i} of a block not run holds {o}");
        }
    }
    // The same blocks on another run of the device.
    let (_, again) = run(&dev, plan("naive")).unwrap();
    assert_eq!(again.unwrap().written, s.written);
}

#[test]
fn a_sample_as_large_as_the_grid_is_a_full_run() {
    let dev = SimDevice::new().unwrap().with_block_sample(35);
    let (out, sample) = run(&dev, plan("naive")).unwrap();
    assert!(sample.is_none());
    assert!(out.iter().all(|v| v.is_finite()));
}

#[test]
fn a_tail_bug_is_caught_by_a_small_sample() {
    // 4 blocks: the corners only, and the bug lives in the last column of blocks.
    let dev = SimDevice::new().unwrap().with_block_sample(4);
    let e = run(&dev, plan("unguarded")).unwrap_err().to_string();
    assert!(e.contains("'B'"), "{e}");
}

#[test]
fn plans_whose_result_needs_every_block_are_declined() {
    let dev = SimDevice::new().unwrap().with_block_sample(4);
    let mut two = plan("naive");
    let again = two.steps[0].clone();
    two.steps.push(again);
    let e = run(&dev, two).unwrap_err().to_string();
    assert!(
        e.contains("--sim-blocks 4") && e.contains("2 launches"),
        "{e}"
    );
    let atomic = gemm_launch(
        "tests/atomic.cu",
        ATOMIC,
        "partials",
        [64, 1, 1],
        [16, 1, 1],
        DIMS,
    );
    let e = run(&dev, atomic).unwrap_err().to_string();
    assert!(e.contains("atomicAdd"), "{e}");
    let atomic = gemm_launch(
        "tests/atomic_ptx.cu",
        ATOMIC_PTX,
        "partials_ptx",
        [64, 1, 1],
        [16, 1, 1],
        DIMS,
    );
    let e = run(&dev, atomic).unwrap_err().to_string();
    assert!(e.contains("uses atom."), "{e}");
    for (code, entry, what) in [
        (WAIT_VOLATILE, "wait_volatile", "volatile"),
        (WAIT_ACQUIRE, "wait_acquire", ".acquire"),
    ] {
        let wait = gemm_launch("tests/waits.cu", code, entry, [64, 1, 1], [16, 1, 1], DIMS);
        let e = run(&dev, wait).unwrap_err().to_string();
        assert!(
            e.contains(&format!("uses {what}, as a block waiting for another does")),
            "{e}"
        );
    }
    // Small enough to run whole: nothing is sampled, nothing declined.
    let dev = SimDevice::new().unwrap().with_block_sample(64);
    let mut two = plan("naive");
    let again = two.steps[0].clone();
    two.steps.push(again);
    assert!(run(&dev, two).unwrap().1.is_none());
}
