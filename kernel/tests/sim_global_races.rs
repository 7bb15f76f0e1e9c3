//! The simulator's race checker of global memory on planted bugs and their fixes: blocks
//! adding into one output element with plain loads and stores (the simulator's schedule gets
//! the sum right), a last-block reduction without the fence on either side of its atomic (or
//! with a block-scope fence, which orders nothing between blocks; its count in a buffer or in
//! a `__device__` variable), the same with its count as inline PTX of each semantics and scope,
//! a flag between blocks as plain and as volatile accesses, and threads of one block reading
//! what others wrote with no barrier between, and stores of the same and of other values over
//! another thread's. Each bug must fail its run with "race
//! on global memory" and name the other thread (and its block, between blocks), under several
//! block orders; each fix must pass, and so must atomics from every block.

use kernel::sim::SimDevice;
use kernel::testing::{PlanKernel, gemm_launch, inputs};
use kernel::{CudaPlan, DeviceError, Executor, Shape};

const KERNELS: &str = r#"
// Each block's thread 0 adds its block's first input into C[0].
template <bool ATOMIC>
__device__ void accumulate(const float *A, float *C) {
    if (threadIdx.x != 0) return;
    if (ATOMIC) atomicAdd(&C[0], A[blockIdx.x]);
    else C[0] += A[blockIdx.x];
}
extern "C" __global__ void accumulate_atomic(const float *A, const float *B, float *C, int M, int N, int K) {
    accumulate<true>(A, C);
}
extern "C" __global__ void accumulate_plain(const float *A, const float *B, float *C, int M, int N, int K) {
    accumulate<false>(A, C);
}

// A counter of finished blocks in a __device__ variable, as the CUDA Programming Guide's
// reduction has it. atomicInc wraps it back to 0 at the last block's count, so that the next
// launch of the module starts from 0 even after a launch that failed in its last block.
__device__ unsigned blocks_done = 0;

// Each block stores the sum of its 64 inputs to C[16 + block], then counts itself done on
// the counter in C[0] (or in blocks_done, DEVICE_COUNTER); the block that counts last adds
// the partial sums into C[1]. WRITER: the fence between a block's partial and its count (0
// none, 1 block scope, 2 GPU scope); READER: whether the last block fences between the count
// and its reads.
template <int WRITER, bool READER, bool DEVICE_COUNTER = false>
__device__ void last_block(const float *A, float *C) {
    __shared__ bool last;
    unsigned t = threadIdx.x, b = blockIdx.x;
    unsigned *count = DEVICE_COUNTER ? &blocks_done : (unsigned *)C;
    if (t == 0) {
        float s = 0.f;
        for (int i = 0; i < 64; ++i) s += A[b * 64 + i];
        C[16 + b] = s;
        if (WRITER == 1) __threadfence_block();
        if (WRITER == 2) __threadfence();
        last = (DEVICE_COUNTER ? atomicInc(count, gridDim.x - 1) : atomicAdd(count, 1u)) == gridDim.x - 1;
        if (last && READER) __threadfence();
    }
    __syncthreads();
    if (last && t == 0) {
        float total = 0.f;
        for (unsigned i = 0; i < gridDim.x; ++i) total += C[16 + i];
        C[1] = total;
    }
}
extern "C" __global__ void last_block_device_counter(const float *A, const float *B, float *C, int M, int N, int K) {
    last_block<2, true, true>(A, C);
}
extern "C" __global__ void last_block_device_counter_no_reader_fence(const float *A, const float *B, float *C, int M, int N, int K) {
    last_block<2, false, true>(A, C);
}
extern "C" __global__ void last_block_fenced(const float *A, const float *B, float *C, int M, int N, int K) {
    last_block<2, true>(A, C);
}
extern "C" __global__ void last_block_no_writer_fence(const float *A, const float *B, float *C, int M, int N, int K) {
    last_block<0, true>(A, C);
}
extern "C" __global__ void last_block_block_fence(const float *A, const float *B, float *C, int M, int N, int K) {
    last_block<1, true>(A, C);
}
extern "C" __global__ void last_block_no_reader_fence(const float *A, const float *B, float *C, int M, int N, int K) {
    last_block<2, false>(A, C);
}

// The same reduction with its count in inline PTX: atom.acq_rel.gpu (a release before, an
// acquire after), fences around a relaxed atom, or a relaxed atom alone, or one at .cta
// scope, neither of which orders the blocks.
template <int SEM>
__device__ unsigned count_done(float *C) {
    unsigned done = 0;
    if (SEM == 0) asm volatile("atom.acq_rel.gpu.global.add.u32 %0, [%1], 1;" : "=r"(done) : "l"(C) : "memory");
    if (SEM == 1)
        asm volatile("fence.sc.gpu;\n atom.global.add.u32 %0, [%1], 1;\n membar.gl;" : "=r"(done) : "l"(C) : "memory");
    if (SEM == 2) asm volatile("atom.relaxed.gpu.global.add.u32 %0, [%1], 1;" : "=r"(done) : "l"(C) : "memory");
    if (SEM == 3) asm volatile("atom.acq_rel.cta.global.add.u32 %0, [%1], 1;" : "=r"(done) : "l"(C) : "memory");
    return done;
}
template <int SEM>
__device__ void last_block_ptx(const float *A, float *C) {
    __shared__ bool last;
    unsigned t = threadIdx.x, b = blockIdx.x;
    if (t == 0) {
        float s = 0.f;
        for (int i = 0; i < 64; ++i) s += A[b * 64 + i];
        asm volatile("st.global.f32 [%0], %1;" :: "l"(C + 16 + b), "f"(s) : "memory");
        last = count_done<SEM>(C) == gridDim.x - 1;
    }
    __syncthreads();
    if (last && t == 0) {
        float total = 0.f, p;
        for (unsigned i = 0; i < gridDim.x; ++i) {
            asm volatile("ld.global.f32 %0, [%1];" : "=f"(p) : "l"(C + 16 + i) : "memory");
            total += p;
        }
        C[1] = total;
    }
}
extern "C" __global__ void last_block_acq_rel(const float *A, const float *B, float *C, int M, int N, int K) {
    last_block_ptx<0>(A, C);
}
extern "C" __global__ void last_block_fences(const float *A, const float *B, float *C, int M, int N, int K) {
    last_block_ptx<1>(A, C);
}
extern "C" __global__ void last_block_relaxed(const float *A, const float *B, float *C, int M, int N, int K) {
    last_block_ptx<2>(A, C);
}
extern "C" __global__ void last_block_cta_scope(const float *A, const float *B, float *C, int M, int N, int K) {
    last_block_ptx<3>(A, C);
}

// Each block's thread 0 reads a "found" flag in C[2] and sets it: as volatile accesses,
// which PTX defines as strong (relaxed, at system scope) and which race with nothing, or as
// plain ones, which race.
template <bool VOLATILE>
__device__ void found_flag(float *C) {
    if (threadIdx.x != 0) return;
    if (VOLATILE) {
        volatile float *flag = C + 2;
        C[16 + blockIdx.x] = *flag;
        *flag = 1.f;
    } else {
        C[16 + blockIdx.x] = C[2];
        C[2] = 1.f;
    }
}
extern "C" __global__ void found_volatile(const float *A, const float *B, float *C, int M, int N, int K) {
    found_flag<true>(C);
}
extern "C" __global__ void found_plain(const float *A, const float *B, float *C, int M, int N, int K) {
    found_flag<false>(C);
}

// Each thread of a block stores its input, then reads its neighbour's store.
template <bool FIXED>
__device__ void neighbours(const float *A, float *C) {
    unsigned t = threadIdx.x;
    C[t] = A[t];
    if (FIXED) __syncthreads();
    C[64 + t] = C[(t + 1) % 64];
}
extern "C" __global__ void neighbours_fixed(const float *A, const float *B, float *C, int M, int N, int K) {
    neighbours<true>(A, C);
}
extern "C" __global__ void neighbours_race(const float *A, const float *B, float *C, int M, int N, int K) {
    neighbours<false>(A, C);
}

// Every thread of every block stores C[0] and the float2 of C[2] and C[3]: the same values
// (SAME), as when each lane of a warp stores the warp's result, or values of its own.
template <bool SAME>
__device__ void same_stores(const float *A, float *C) {
    C[0] = A[SAME ? 0 : blockIdx.x];
    reinterpret_cast<float2 *>(C)[1] = make_float2(A[1], A[SAME ? 2 : threadIdx.x % 2 + 2]);
}
extern "C" __global__ void same_value_stores(const float *A, const float *B, float *C, int M, int N, int K) {
    same_stores<true>(A, C);
}
// Every block writes all of C, each element the same value: blocks running at once on other
// OS threads store the same bytes, each store judged against what the last one left.
extern "C" __global__ void every_block_writes_all(const float *A, const float *B, float *C, int M, int N, int K) {
    for (int i = threadIdx.x; i < M * N; i += blockDim.x) C[i] = A[i];
}
extern "C" __global__ void other_value_stores(const float *A, const float *B, float *C, int M, int N, int K) {
    same_stores<false>(A, C);
}
"#;

const DIMS: (usize, usize, usize) = (64, 64, 64);

/// Runs `entry` with `blocks` blocks of 64 threads on random 64^3 GEMM inputs in the
/// instrumented simulator with schedule `seed`: the output, and the first input.
fn run(entry: &str, blocks: u32, seed: u64) -> Result<(Vec<f32>, Vec<f32>), DeviceError> {
    let plan: CudaPlan = gemm_launch(
        "tests/global_races.cu",
        KERNELS,
        entry,
        [blocks, 1, 1],
        [64, 1, 1],
        DIMS,
    );
    let dev = SimDevice::new()?.instrumented().with_seed(seed);
    let shape = Shape::gemm(DIMS.0, DIMS.1, DIMS.2);
    let x = inputs(&shape, 11);
    let kernel = PlanKernel::fp32(plan);
    let out = {
        let mut p = dev.prepare(&kernel, &shape, &x)?;
        p.run()?;
        p.output()?
    };
    Ok((out, x[0].clone()))
}

/// The error of a run that must find a race on global memory.
fn race(r: Result<(Vec<f32>, Vec<f32>), DeviceError>) -> String {
    let e = r.map(|_| ()).expect_err("the race is reported").to_string();
    assert!(
        e.contains("race on global memory") && e.contains("which thread ("),
        "{e}"
    );
    e
}

fn close(got: f32, want: f64) -> bool {
    (f64::from(got) - want).abs() <= 1e-4 * want.abs().max(1.0)
}

#[test]
fn blocks_adding_with_plain_stores_race_and_with_atomics_do_not() {
    for seed in 0..4 {
        let (out, a) = run("accumulate_atomic", 8, seed).unwrap();
        let want: f64 = a[..8].iter().map(|&v| f64::from(v)).sum();
        assert!(close(out[0], want), "{} against {want}", out[0]);
        let e = race(run("accumulate_plain", 8, seed));
        assert!(
            // Blocks run on several OS threads: the byte of the float found first may vary.
            e.contains("element 0 (byte ")
                && e.contains("of buffer 'C'")
                && e.contains("of block ("),
            "{e}"
        );
    }
}

#[test]
fn a_last_block_reduction_needs_a_gpu_fence_on_both_sides_of_its_atomic() {
    for seed in 0..4 {
        let (out, a) = run("last_block_fenced", 6, seed).unwrap();
        let want: f64 = a[..6 * 64].iter().map(|&v| f64::from(v)).sum();
        assert!(close(out[1], want), "{} against {want}", out[1]);
        // A counter in a __device__ variable orders the blocks as one in a buffer does.
        let (out, _) = run("last_block_device_counter", 6, seed).unwrap();
        assert!(close(out[1], want), "{} against {want}", out[1]);
        for bug in [
            "last_block_no_writer_fence",
            "last_block_block_fence",
            "last_block_no_reader_fence",
            "last_block_device_counter_no_reader_fence",
        ] {
            let e = race(run(bug, 6, seed));
            assert!(
                e.contains("this thread reads element 1")
                    && e.contains("of buffer 'C'")
                    && e.contains("nothing orders the two blocks"),
                "{bug}: {e}"
            );
        }
    }
}

/// A store over bytes another thread stored, unordered with it, is no race when it writes the
/// same bytes again (the shared-memory checker's rule), and one when it writes others.
#[test]
fn stores_of_the_same_bytes_are_no_race_and_of_other_bytes_are() {
    for seed in 0..4 {
        let (out, a) = run("same_value_stores", 4, seed).unwrap();
        assert_eq!([out[0], out[2], out[3]], [a[0], a[1], a[2]]);
        let e = race(run("other_value_stores", 4, seed));
        assert!(e.contains("this thread writes element "), "{e}");
    }
}

/// Blocks that run at once on other OS threads and store the same bytes are no race, at every
/// schedule: a store is judged against what the store before it left once that one landed,
/// not against bytes read while it was between its check and its landing.
#[test]
fn blocks_storing_the_same_bytes_at_once_are_no_race() {
    for seed in 0..6 {
        let (out, a) = run("every_block_writes_all", 16, seed).unwrap();
        assert_eq!(out[..], a[..out.len()]);
    }
}

#[test]
fn threads_of_a_block_reading_each_others_stores_need_a_barrier() {
    for seed in 0..4 {
        let (out, a) = run("neighbours_fixed", 1, seed).unwrap();
        assert_eq!(out[64 + 63], a[0]);
        let e = race(run("neighbours_race", 1, seed));
        assert!(
            e.contains("of this block") && e.contains("in the same barrier interval"),
            "{e}"
        );
    }
}

#[test]
fn inline_ptx_atomics_order_blocks_by_their_semantics_and_scope() {
    for seed in 0..4 {
        for fixed in ["last_block_acq_rel", "last_block_fences"] {
            let (out, a) = run(fixed, 6, seed).unwrap();
            let want: f64 = a[..6 * 64].iter().map(|&v| f64::from(v)).sum();
            assert!(close(out[1], want), "{fixed}: {} against {want}", out[1]);
        }
        for bug in ["last_block_relaxed", "last_block_cta_scope"] {
            let e = race(run(bug, 6, seed));
            assert!(
                e.contains("this thread reads element 1")
                    && e.contains("nothing orders the two blocks"),
                "{bug}: {e}"
            );
        }
    }
}

#[test]
fn volatile_global_accesses_are_strong_and_race_with_nothing() {
    for seed in 0..4 {
        let (out, _) = run("found_volatile", 8, seed).unwrap();
        assert_eq!(out[2], 1.0);
        // The block that ran first found the flag unset (so may others running beside it);
        // every block read one of the two values.
        let seen = &out[16..24];
        assert!(seen.iter().all(|&v| v == 0.0 || v == 1.0), "{seen:?}");
        assert!(seen.contains(&0.0), "{seen:?}");
        let e = race(run("found_plain", 8, seed));
        assert!(
            e.contains("element 2 (byte ") && e.contains("of buffer 'C'"),
            "{e}"
        );
    }
}
