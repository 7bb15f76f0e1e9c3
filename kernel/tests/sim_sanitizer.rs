//! The simulator's watchdog and memory check. A launch that runs past its limit ends with the
//! thread and block still running, whether the thread spins without ever calling into the
//! simulator or waits on a flag no one sets, and the device runs the next launch normally. A
//! write far past the end of the output is reported against the output, at any launch shape,
//! and by the lines of the kernel's own code that made it.

use kernel::sim::SimDevice;
use kernel::testing::{PlanKernel, gemm_launch, inputs, source_line};
use kernel::{CudaPlan, Executor, Shape};
use std::time::{Duration, Instant};

const KERNELS: &str = r#"
// Thread 5 of block 1 spins on its own; the others finish.
extern "C" __global__ void spin(const float *A, const float *B, float *C, int M, int N, int K) {
    volatile int forever = 1;
    if (blockIdx.x == 1 && threadIdx.x == 5) while (forever) {}
    C[blockIdx.x * blockDim.x + threadIdx.x] = A[0];
}

// Every thread waits for a flag in shared memory that no thread sets, syncing its warp.
extern "C" __global__ void wait_flag(const float *A, const float *B, float *C, int M, int N, int K) {
    __shared__ volatile int flag;
    if (threadIdx.x == 0) flag = 0;
    __syncthreads();
    while (!flag) __syncwarp();
}

// Correct, and far too long: every thread passes a barrier 2^40 times.
extern "C" __global__ void slow(const float *A, const float *B, float *C, int M, int N, int K) {
    __shared__ float s[64];
    s[threadIdx.x] = 0.0f;
    for (long long i = 0; i < (1LL << 40); ++i) {
        s[threadIdx.x] += A[i % 16];
        __syncthreads();
    }
    C[blockIdx.x * blockDim.x + threadIdx.x] = s[threadIdx.x];
}

// Nothing but barriers, 2^40 of them: the simulator spends much of its time between threads,
// passing them.
extern "C" __global__ void barriers(const float *A, const float *B, float *C, int M, int N, int K) {
    for (long long i = 0; i < (1LL << 40); ++i) __syncthreads();
    C[blockIdx.x * blockDim.x + threadIdx.x] = A[0];
}

// Thread 0 of the last block writes 2000 elements past the end of C.
extern "C" __global__ void overrun(const float *A, const float *B, float *C, int M, int N, int K) {
    if (blockIdx.x == gridDim.x - 1 && threadIdx.x == 0) C[M * N + 2000] = A[0];
}

// Thread 0 writes 2^46 elements past C: outside the address space, where the CPU's fault
// names no address.
extern "C" __global__ void far_away(const float *A, const float *B, float *C, int M, int N, int K) {
    if (blockIdx.x == 0 && threadIdx.x == 0) C[(1LL << 46) + M] = A[0];
}

extern "C" __global__ void copy(const float *A, const float *B, float *C, int M, int N, int K) {
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t < M * N) C[t] = A[t];
}

// The overrun, in a helper of a header of the kernel's own (below).
__device__ void store_past(float *C, int end, float v);
extern "C" __global__ void overrun_in_helper(const float *A, const float *B, float *C, int M, int N, int K) {
    if (blockIdx.x == gridDim.x - 1 && threadIdx.x == 0) store_past(C, M * N, A[0]);  // the call
}
#line 1 "tests/helpers.cuh"
__device__ void store_past(float *C, int end, float v) {
    C[end + 2000] = v;  // the store
}
"#;

fn plan(entry: &str) -> CudaPlan {
    plan_on(entry, [4, 1, 1], [64, 1, 1])
}

fn plan_on(entry: &str, grid: [u32; 3], block: [u32; 3]) -> CudaPlan {
    gemm_launch("tests/hang.cu", KERNELS, entry, grid, block, (16, 16, 16))
}

fn run(dev: &SimDevice, entry: &str) -> Result<Vec<f32>, kernel::DeviceError> {
    run_plan(dev, plan(entry))
}

fn run_plan(dev: &SimDevice, plan: CudaPlan) -> Result<Vec<f32>, kernel::DeviceError> {
    let shape = Shape::gemm(16, 16, 16);
    let x = inputs(&shape, 3);
    let k = PlanKernel::fp32(plan);
    let mut p = dev.prepare(&k, &shape, &x)?;
    p.run()?;
    p.output()
}

#[test]
fn a_launch_past_its_limit_names_the_thread_still_running_and_the_next_one_runs() {
    let dev = SimDevice::new()
        .unwrap()
        .with_timeout(Duration::from_secs(1));
    let start = Instant::now();
    let e = run(&dev, "spin").unwrap_err().to_string();
    assert!(
        e.contains("kernel did not finish")
            && e.contains("thread (5,0,0) of block (1,0,0)")
            && e.contains("after 1 s"),
        "{e}"
    );
    let e = run(&dev, "wait_flag").unwrap_err().to_string();
    assert!(e.contains("kernel did not finish"), "{e}");
    assert!(
        start.elapsed() < Duration::from_secs(30),
        "{:?}",
        start.elapsed()
    );
    let out = run(&dev, "copy").unwrap();
    assert!(out.iter().all(|v| v.is_finite()));
    // Where an instrumented build sees every volatile access: a kernel that keeps passing
    // barriers without one has work left, and is not said to wait on memory; one polling a
    // flag is.
    let counting = SimDevice::new()
        .unwrap()
        .instrumented()
        .with_timeout(Duration::from_secs(1));
    // The watchdog tells them apart by what the thread it finds did between two looks. A look
    // that finds the scheduler between two threads (one in twelve, for a kernel of barriers
    // alone) once named a thread as waiting on memory; it now waits for a look at a thread,
    // and every try must tell.
    let tries = [("slow", 64)].into_iter().chain([("barriers", 256); 6]);
    for (entry, threads) in tries {
        let plan = plan_on(entry, [4, 1, 1], [threads, 1, 1]);
        let e = run_plan(&counting, plan).unwrap_err().to_string();
        assert!(
            e.contains("its threads still passing barriers, not waiting on memory"),
            "{entry}: {e}"
        );
    }
    let e = run(&counting, "wait_flag").unwrap_err().to_string();
    assert!(
        e.contains("waiting on memory no other thread changes"),
        "{e}"
    );
}

/// A fault in a function of a header of the kernel's own names the header's line and the
/// kernel's line that calls it: the innermost line alone would not say which call it was.
#[test]
fn a_fault_in_a_helper_names_its_line_and_the_kernels_line_that_calls_it() {
    let dev = SimDevice::new().unwrap();
    let e = run(&dev, "overrun_in_helper").unwrap_err().to_string();
    let (call, store) = (
        source_line(KERNELS, "// the call"),
        source_line(KERNELS, "// the store"),
    );
    assert!(
        e.contains("out-of-bounds write past the end of buffer 'C'")
            && e.ends_with(&format!(
                ", at tests/helpers.cuh:{store}, called at tests/hang.cu:{call}"
            )),
        "{e}"
    );
}

#[test]
fn an_access_outside_the_address_space_is_not_called_a_read_at_address_zero() {
    for dev in [
        SimDevice::new().unwrap(),
        SimDevice::new().unwrap().instrumented(),
    ] {
        let e = run(&dev, "far_away").unwrap_err().to_string();
        assert!(
            e.contains(
                "far_away: invalid access at an address the CPU could not name (a \
                 general-protection fault"
            ) && e.contains("by thread (0,0,0) of block (0,0,0)"),
            "{e}"
        );
        assert!(!e.contains("at address 0x0"), "{e}");
    }
}

#[test]
fn a_write_far_past_the_end_of_c_is_reported_against_c_at_any_launch_shape() {
    let dev = SimDevice::new().unwrap().instrumented();
    for (grid, block) in [
        ([4, 1, 1], [64, 1, 1]),
        ([1, 1, 1], [32, 1, 1]),
        ([9, 1, 1], [128, 1, 1]),
    ] {
        let e = run_plan(&dev, plan_on("overrun", grid, block))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("out-of-bounds write past the end of buffer 'C' at element 2256"),
            "{grid:?} {block:?}: {e}"
        );
    }
}
