//! Threads that wait for other threads by spinning on memory: blocks chained by a flag (as
//! volatile accesses; as inline PTX's acquire and release with `__nanosleep` between tries,
//! the form of CUTLASS's split-K semaphore; as libcu++'s `cuda::atomic_ref`, by block index
//! or by ticket as a decoupled look-back orders them), a grid-wide barrier of atomics, a warp
//! waiting for another warp of its block, a lock taken with atomicCAS whose holder yields
//! inside it. The simulator switches threads only at synchronizations, so the waits hung
//! before it noticed spinning; each must now finish with the right result and pass the race
//! checker, under several block orders, the lock must still exclude, and relaxed atomics,
//! which order nothing, must be a race. A wait no thread ever satisfies must end at the time
//! limit, naming the spinning thread (and saying whether it spins on volatile loads or on
//! plain ones the compiler read once, even where its OS thread gets little CPU between the
//! watchdog's looks), or at the kernel's own `clock64` bound with its
//! `__trap()`; a fault in the block others wait for must end the run promptly with the
//! fault. NVRTC compiles the same sources against the real libcu++ headers.

use kernel::cuda::nvrtc;
use kernel::sim::SimDevice;
use kernel::testing::{PlanKernel, gemm_launch, inputs};
use kernel::{CudaPlan, CudaSource, DeviceError, Executor, Shape};
use std::time::{Duration, Instant};

const KERNELS: &str = r#"
#include <cuda/atomic>

// Block b waits until block b - 1 has stored the running total of A[0..b) in C[b - 1] and
// raised its flag (C[64 + b - 1], as bits), then stores the total of A[0..b] and raises its own.
__device__ void chain_volatile_step(const float *A, float *C) {
    volatile unsigned *flag = (volatile unsigned *)(C + 64);
    const unsigned b = blockIdx.x;
    if (threadIdx.x != 0) return;
    float before = 0.f;
    if (b > 0) {
        while (flag[b - 1] == 0) {
        }
        __threadfence();
        before = C[b - 1];
    }
    C[b] = before + A[b];
    __threadfence();
    flag[b] = 1;
}
extern "C" __global__ void chain_volatile(const float *A, const float *B, float *C, int M, int N, int K) {
    chain_volatile_step(A, C);
}

// The same chain with CUTLASS's semaphore instructions: ld.acquire.gpu in a loop that sleeps
// between tries, st.release.gpu to signal. Each block also fills a __shared__ array before it
// waits and reads it back after: blocks that run side by side on one OS thread must each keep
// their own (mismatches are counted in C[200], as bits).
__device__ unsigned load_acquire(const unsigned *p) {
    unsigned v;
    asm volatile("ld.global.acquire.gpu.b32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
    return v;
}
__device__ void store_release(unsigned *p, unsigned v) {
    asm volatile("st.global.release.gpu.b32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
}
extern "C" __global__ void chain_acquire(const float *A, const float *B, float *C, int M, int N, int K) {
    unsigned *flag = (unsigned *)(C + 64);
    const unsigned b = blockIdx.x, t = threadIdx.x;
    __shared__ float before;
    __shared__ unsigned tag[64];
    tag[t] = b * 64 + t;
    __syncthreads();
    if (threadIdx.x == 0) {
        before = 0.f;
        if (b > 0) {
            while (load_acquire(&flag[b - 1]) == 0) __nanosleep(40);
            before = C[b - 1];
        }
    }
    __syncthreads();
    if (tag[(t + 1) % 64] != b * 64 + (t + 1) % 64) atomicAdd((unsigned *)(C + 200), 1u);
    if (threadIdx.x == 0) {
        C[b] = before + A[b];
        store_release(&flag[b], 1);
    }
}

// The chain with libcu++'s cuda::atomic_ref: wait() for the flag with acquire, store it with
// release; or a load loop and a store both relaxed, which order nothing between the blocks.
template <bool ORDERED>
__device__ void chain_ref_step(const float *A, float *C) {
    unsigned *flag = (unsigned *)(C + 64);
    const unsigned b = blockIdx.x;
    if (threadIdx.x != 0) return;
    float before = 0.f;
    if (b > 0) {
        cuda::atomic_ref<unsigned, cuda::thread_scope_device> prev(flag[b - 1]);
        if (ORDERED) prev.wait(0u, cuda::memory_order_acquire);
        else
            while (prev.load(cuda::memory_order_relaxed) == 0u) {
            }
        before = C[b - 1];
    }
    C[b] = before + A[b];
    cuda::atomic_ref<unsigned, cuda::thread_scope_device>(flag[b]).store(
        1u, ORDERED ? cuda::memory_order_release : cuda::memory_order_relaxed);
}
extern "C" __global__ void chain_ref(const float *A, const float *B, float *C, int M, int N, int K) {
    chain_ref_step<true>(A, C);
}
extern "C" __global__ void chain_ref_relaxed(const float *A, const float *B, float *C, int M, int N, int K) {
    chain_ref_step<false>(A, C);
}

// The chain by ticket, as a decoupled look-back orders its blocks: each block takes the next
// ticket from a counter (C[63], cuda::std::atomic_ref) and waits for the block with the
// ticket before it, so the wait never depends on the order blocks start in. C[k] ends as the
// sum of A[0..k] whichever block held ticket k.
extern "C" __global__ void chain_ticket(const float *A, const float *B, float *C, int M, int N, int K) {
    unsigned *flag = (unsigned *)(C + 64);
    __shared__ unsigned ticket;
    if (threadIdx.x == 0)
        ticket = cuda::std::atomic_ref<unsigned>(*(unsigned *)(C + 63)).fetch_add(1u, cuda::std::memory_order_relaxed);
    __syncthreads();
    if (threadIdx.x != 0) return;
    const unsigned k = ticket;
    float before = 0.f;
    if (k > 0) {
        cuda::atomic_ref<unsigned, cuda::thread_scope_device> prev(flag[k - 1]);
        while (prev.load(cuda::memory_order_acquire) == 0u) {
        }
        before = C[k - 1];
    }
    C[k] = before + A[k];
    cuda::atomic_ref<unsigned, cuda::thread_scope_device>(flag[k]).store(1u, cuda::memory_order_release);
}

// A grid-wide barrier made of an atomic count, as persistent kernels write one: every block
// stores its input, counts itself in (C[63], as bits) and waits until all have, then reads
// its neighbour's store. Every block must be in flight at once.
extern "C" __global__ void grid_barrier(const float *A, const float *B, float *C, int M, int N, int K) {
    unsigned *count = (unsigned *)(C + 63);
    const unsigned b = blockIdx.x, blocks = gridDim.x;
    if (threadIdx.x == 0) {
        C[b] = A[b];
        __threadfence();
        atomicAdd(count, 1u);
        while (atomicAdd(count, 0u) < blocks) {
        }
        __threadfence();
    }
    __syncthreads();
    if (threadIdx.x == 0) C[64 + b] = C[(b + 1) % blocks];
}

// Every block adds its input into C[0] under a lock (C[1], as bits) taken with atomicCAS. The
// holder also counts to 200 on an atomic (C[2]) inside the lock: it yields there as a spinning
// thread does, so the others find the lock taken and must wait for it.
extern "C" __global__ void locked_sum(const float *A, const float *B, float *C, int M, int N, int K) {
    unsigned *lock = (unsigned *)(C + 1), *ticks = (unsigned *)(C + 2);
    if (threadIdx.x != 0) return;
    while (atomicCAS(lock, 0u, 1u) != 0u) {
    }
    __threadfence();
    const float before = C[0];
    for (int i = 0; i < 200; ++i) atomicAdd(ticks, 1u);
    C[0] = before + A[blockIdx.x];
    __threadfence();
    atomicExch(lock, 0u);
}

// Warp 1 waits for warp 0 of its block to raise a flag in global memory (C[2], as bits), with
// no barrier between them; then each of its lanes counts itself in C[3].
extern "C" __global__ void warp_waits_for_warp(const float *A, const float *B, float *C, int M, int N, int K) {
    unsigned *flag = (unsigned *)(C + 2), *count = (unsigned *)(C + 3);
    if (blockIdx.x != 0) return;
    if (threadIdx.x / 32 == 1) {
        while (atomicAdd(flag, 0u) == 0u) {
        }
        atomicAdd(count, 1u);
    } else if (threadIdx.x == 0) {
        atomicExch(flag, 1u);
    }
}

// Block 0 never raises its flag: every other block waits forever.
extern "C" __global__ void never_raised(const float *A, const float *B, float *C, int M, int N, int K) {
    volatile unsigned *flag = (volatile unsigned *)(C + 64);
    if (threadIdx.x == 0 && blockIdx.x > 0)
        while (flag[0] == 0) {
        }
}

#ifdef KERNEL_LAB_SIM
// Thread 0 of block 1 polls a flag nothing raises once every 300 ms, off the CPU in between:
// what a spinning thread whose OS thread gets no CPU looks like to the watchdog on a loaded
// machine. (Simulator only: it sleeps with the host's nanosleep.)
extern "C" __global__ void seldom_polled(const float *A, const float *B, float *C, int M, int N, int K) {
    volatile unsigned *flag = (volatile unsigned *)(C + 64);
    if (threadIdx.x != 0 || blockIdx.x != 1) return;
    while (flag[0] == 0) {
        struct timespec t = {0, 300000000};
        while (nanosleep(&t, &t) != 0) {
        }
    }
}
#endif

// Block 0 waits for its flag with plain loads, counting its tries: the compiler may read the
// flag once, and then the loop never ends. (With an empty body gcc deletes the loop: C++ lets
// a compiler assume that a loop without side effects ends.)
extern "C" __global__ void plain_flag(const float *A, const float *B, float *C, int M, int N, int K) {
    if (threadIdx.x == 0 && blockIdx.x == 0)
        while (C[64] == 0.f) C[65] += 1.f;
}

// Thread 0 waits for a flag nothing raises, giving up after a millisecond of clock64 (as a GPU
// kernel bounds a wait): it traps.
extern "C" __global__ void bounded_wait(const float *A, const float *B, float *C, int M, int N, int K) {
    volatile unsigned *flag = (volatile unsigned *)(C + 64);
    if (threadIdx.x != 0) return;
    const long long start = clock64();
    while (flag[0] == 0)
        if (clock64() - start > 1000000) __trap();
}

// Block 0 faults before it raises the flag the others wait for.
extern "C" __global__ void fault_before_raising(const float *A, const float *B, float *C, int M, int N, int K) {
    volatile unsigned *flag = (volatile unsigned *)(C + 64);
    if (threadIdx.x != 0) return;
    if (blockIdx.x == 0) {
        C[M * N + 8] = 1.f;
        flag[0] = 1;
    } else {
        while (flag[0] == 0) {
        }
    }
}
"#;

const DIMS: (usize, usize, usize) = (64, 64, 64);

fn plan(entry: &str, blocks: u32) -> CudaPlan {
    gemm_launch(
        "tests/spin_waits.cu",
        KERNELS,
        entry,
        [blocks, 1, 1],
        [64, 1, 1],
        DIMS,
    )
}

/// Runs `entry` with `blocks` blocks of 64 threads on random 64^3 GEMM inputs in the
/// instrumented simulator with schedule `seed`: the output, and the first input.
fn run(
    entry: &str,
    blocks: u32,
    seed: u64,
    limit: Duration,
) -> Result<(Vec<f32>, Vec<f32>), DeviceError> {
    let dev = SimDevice::new()?
        .instrumented()
        .with_seed(seed)
        .with_timeout(limit);
    let shape = Shape::gemm(DIMS.0, DIMS.1, DIMS.2);
    let x = inputs(&shape, 5);
    let kernel = PlanKernel::fp32(plan(entry, blocks));
    let mut p = dev.prepare(&kernel, &shape, &x)?;
    p.run()?;
    Ok((p.output()?, x[0].clone()))
}

/// A limit no passing run comes near: a regression fails instead of hanging the suite.
const GENEROUS: Duration = Duration::from_secs(120);

/// The error of a run of `entry` that must fail, which must come well before `GENEROUS`
/// (two passes of the plan may each run to a shorter `limit`, nothing much beyond).
fn failure(entry: &str, blocks: u32, seed: u64, limit: Duration) -> String {
    let start = Instant::now();
    let e = run(entry, blocks, seed, limit)
        .map(|_| ())
        .expect_err(entry)
        .to_string();
    assert!(
        start.elapsed() < Duration::from_secs(30),
        "{entry}: {:?}",
        start.elapsed()
    );
    e
}

/// `out` holds the running sums of `a` in its first `n` elements, as the chains store them.
fn assert_running_sums(out: &[f32], a: &[f32], n: usize, what: &str) {
    let mut total = 0f32;
    for b in 0..n {
        total += a[b];
        assert_eq!(out[b], total, "{what}: element {b}");
    }
}

#[test]
fn blocks_chained_by_a_flag_run_in_order_of_the_chain() {
    for entry in ["chain_volatile", "chain_acquire"] {
        for seed in 0..4 {
            let (out, a) =
                run(entry, 16, seed, GENEROUS).unwrap_or_else(|e| panic!("{entry}: {e}"));
            assert_running_sums(&out, &a, 16, &format!("{entry}, seed {seed}"));
            assert_eq!(
                out[200], 0.0,
                "{entry}, seed {seed}: a block's __shared__ array changed"
            );
        }
    }
}

#[test]
fn libcu_atomic_ref_orders_blocks_by_its_memory_orders() {
    for seed in 0..4 {
        for entry in ["chain_ref", "chain_ticket"] {
            let (out, a) =
                run(entry, 16, seed, GENEROUS).unwrap_or_else(|e| panic!("{entry}: {e}"));
            assert_running_sums(&out, &a, 16, &format!("{entry}, seed {seed}"));
        }
        // Relaxed orders nothing.
        let e = failure("chain_ref_relaxed", 16, seed, GENEROUS);
        assert!(
            e.contains("race on global memory") && e.contains("nothing orders the two blocks"),
            "seed {seed}: {e}"
        );
    }
}

#[test]
fn a_grid_wide_barrier_of_atomics_holds_every_block_until_all_arrive() {
    for seed in 0..4 {
        let (out, a) = run("grid_barrier", 48, seed, GENEROUS).unwrap();
        for b in 0..48 {
            assert_eq!(out[64 + b], a[(b + 1) % 48], "seed {seed}: block {b}");
        }
    }
}

#[test]
fn blocks_taking_a_lock_in_turn_all_add_their_part() {
    for seed in 0..4 {
        let (out, a) = run("locked_sum", 24, seed, GENEROUS).unwrap();
        let want: f64 = a[..24].iter().map(|&v| f64::from(v)).sum();
        assert!(
            (f64::from(out[0]) - want).abs() <= 1e-5 * want.abs().max(1.0),
            "seed {seed}: {} against {want}",
            out[0]
        );
        assert_eq!(out[1], 0.0, "the lock is free at the end");
        assert_eq!(out[2].to_bits(), 24 * 200);
    }
}

#[test]
fn a_warp_waiting_for_another_warp_of_its_block_goes_on_once_it_signals() {
    for seed in 0..4 {
        let (out, _) = run("warp_waits_for_warp", 1, seed, GENEROUS).unwrap();
        assert_eq!(
            out[3].to_bits(),
            32,
            "seed {seed}: every lane of warp 1 went on"
        );
    }
}

#[test]
fn a_wait_nothing_satisfies_ends_at_the_time_limit_naming_a_waiting_thread() {
    let limit = Duration::from_secs(2);
    let e = failure("never_raised", 8, 0, limit);
    assert!(
        e.contains("kernel did not finish")
            && e.contains("still running after 2 s (waiting on memory no other thread changes"),
        "{e}"
    );
    assert!(e.contains("thread (0,0,0) of block ("), "{e}");
    let e = failure("plain_flag", 2, 0, limit);
    assert!(
        e.contains(
            "thread (0,0,0) of block (0,0,0) still running after 2 s (without reaching a barrier"
        ) && e.contains("declare the flag volatile"),
        "{e}"
    );
}

#[test]
fn a_spinning_thread_the_os_leaves_without_cpu_is_still_named_as_spinning() {
    let e = failure("seldom_polled", 2, 0, Duration::from_secs(1));
    assert!(
        e.contains(
            "thread (0,0,0) of block (1,0,0) still running after 1 s (waiting on memory no other \
             thread changes"
        ),
        "{e}"
    );
}

#[test]
fn a_fault_in_the_block_others_wait_for_ends_the_run_with_the_fault() {
    let e = failure("fault_before_raising", 8, 1, GENEROUS);
    assert!(
        e.contains("out-of-bounds write") && e.contains("of block (0,0,0)"),
        "{e}"
    );
}

#[test]
fn a_wait_bounded_with_clock64_ends_in_its_trap() {
    let e = failure("bounded_wait", 2, 0, GENEROUS);
    assert!(
        e.contains("__trap(): the kernel aborted the launch")
            && e.contains("(thread (0,0,0) of block ("),
        "{e}"
    );
}

#[test]
fn nvrtc_compiles_the_waiting_kernels_against_the_real_headers() {
    if let Err(e) = nvrtc::version() {
        panic!("{e}\nThis test needs NVRTC: run tools/install-cuda-tools.sh first.");
    }
    let src = CudaSource::embedded("tests/spin_waits.cu", KERNELS);
    for arch in ["sm_80", "sm_90"] {
        let c = nvrtc::compile(&src, arch).unwrap_or_else(|e| panic!("{arch}: {e}"));
        assert_eq!(c.resources.len(), 12, "{arch}: {:?}", c.resources);
    }
}
