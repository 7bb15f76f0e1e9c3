//! The simulator's race checker on planted bugs and their fixes: a tiled GEMM without its
//! trailing barrier, a `cp.async` pipeline that refills a stage before the barrier (whose
//! result the simulator's schedule happens to get right), and a warp reduction in shared
//! memory without its `__syncwarp()`, a word half of whose bytes another thread writes
//! unordered with its read. Each bug must fail its run with "race" and name both
//! threads (and the lines of both accesses); each fix must pass, and so must shared-memory atomics and a warp's WMMA store. A
//! read of shared memory no thread wrote fails as uninitialized, and an access past the end
//! of a `__shared__` array or of the dynamic shared memory the launch gives fails as out of
//! bounds (it would land in the simulator's own state, or the next block's memory).

use kernel::sim::SimDevice;
use kernel::testing::{PlanKernel, gemm_f64, gemm_launch, inputs, relative_error, source_line};
use kernel::{CudaPlan, DeviceError, Executor, Shape};

const KERNELS: &str = r#"
#include "lab/ptx.h"
#include <mma.h>

// 16 x 16 tiles; FIXED ends each step with the barrier that keeps the next loads from
// overwriting a tile other threads still read.
template <bool FIXED>
__device__ void tiled(const float *A, const float *B, float *C, int M, int N, int K) {
    __shared__ float As[16][16], Bs[16][16];
    int ty = threadIdx.y, tx = threadIdx.x;
    int i = blockIdx.y * 16 + ty, j = blockIdx.x * 16 + tx;
    float acc = 0.f;
    for (int t = 0; t < K; t += 16) {
        As[ty][tx] = A[i * K + t + tx];
        Bs[ty][tx] = B[(t + ty) * N + j];
        __syncthreads();
        for (int k = 0; k < 16; ++k) acc += As[ty][k] * Bs[k][tx];
        if (FIXED) __syncthreads();
    }
    C[i * N + j] = acc;
}
extern "C" __global__ void tiled_fixed(const float *A, const float *B, float *C, int M, int N, int K) {
    tiled<true>(A, B, C, M, N, K);
}
extern "C" __global__ void tiled_no_trailing_barrier(const float *A, const float *B, float *C, int M, int N, int K) {
    tiled<false>(A, B, C, M, N, K);
}

// Two stages of 256 floats filled by cp.async; every thread sums the whole stage. Without the
// barrier at the end of a step, the next step's copy refills the stage others still read.
template <bool FIXED>
__device__ void staged(const float *A, float *C, int steps) {
    __shared__ __align__(16) float s[2][256];
    int t = threadIdx.x;
    float acc = 0.f;
    ptx::cp_async_ca<4>(ptx::smem_addr(&s[0][t]), A + t);
    ptx::cp_async_commit();
    for (int i = 0; i < steps; ++i) {
        if (i + 1 < steps) ptx::cp_async_ca<4>(ptx::smem_addr(&s[(i + 1) % 2][t]), A + (i + 1) * 256 + t);
        ptx::cp_async_commit();
        ptx::cp_async_wait_group<1>();
        __syncthreads();
        for (int k = 0; k < 256; ++k) acc += s[i % 2][(t + k) % 256];
        if (FIXED) __syncthreads();
    }
    C[t] = acc;
}
extern "C" __global__ void staged_fixed(const float *A, const float *B, float *C, int M, int N, int K) {
    staged<true>(A, C, K);
}
extern "C" __global__ void staged_early_refill(const float *A, const float *B, float *C, int M, int N, int K) {
    staged<false>(A, C, K);
}

// A warp's tree reduction in shared memory; each level must be ordered after the one before.
template <bool FIXED>
__device__ void reduce(const float *A, float *C) {
    __shared__ float r[32];
    unsigned lane = threadIdx.x;
    r[lane] = A[lane];
    __syncwarp();
    for (unsigned o = 16; o > 0; o >>= 1) {
        if (lane < o) r[lane] += r[lane + o];
        if (FIXED) __syncwarp();
    }
    if (lane == 0) C[0] = r[0];
}
extern "C" __global__ void reduce_fixed(const float *A, const float *B, float *C, int M, int N, int K) {
    reduce<true>(A, C);
}
extern "C" __global__ void reduce_no_syncwarp(const float *A, const float *B, float *C, int M, int N, int K) {
    reduce<false>(A, C);
}

// Each thread writes one element and reads its neighbour's; the last neighbour is past the
// elements written (UNINIT), or wraps around (fixed).
template <bool UNINIT>
__device__ void neighbours(const float *A, float *C) {
    __shared__ float s[65];
    unsigned t = threadIdx.x;
    s[t] = A[t];
    __syncthreads();
    C[t] = s[UNINIT ? t + 1 : (t + 1) % 64];
}
extern "C" __global__ void neighbours_fixed(const float *A, const float *B, float *C, int M, int N, int K) {
    neighbours<false>(A, C);
}
extern "C" __global__ void neighbours_uninit(const float *A, const float *B, float *C, int M, int N, int K) {
    neighbours<true>(A, C);
}

// A word whose halves have different histories: thread 2 writes it whole, then thread 0 its
// upper half and thread 1 reads it whole, with (FIXED) or without a barrier between them. The
// race lies in the read's last two bytes only.
template <bool FIXED>
__device__ void halves(float *C) {
    __shared__ unsigned word;
    unsigned t = threadIdx.x;
    if (t == 2) word = 0x00010001u;
    __syncthreads();
    if (t == 0) ((volatile unsigned short *)&word)[1] = 7;
    if (FIXED) __syncthreads();
    if (t == 1) C[0] = (float)*(volatile unsigned *)&word;
}
extern "C" __global__ void halves_fixed(const float *A, const float *B, float *C, int M, int N, int K) {
    halves<true>(C);
}
extern "C" __global__ void halves_race(const float *A, const float *B, float *C, int M, int N, int K) {
    halves<false>(C);
}

// Not races: atomics on one shared counter, and the 32 lanes of a warp storing one WMMA tile.
extern "C" __global__ void shared_atomics(const float *A, const float *B, float *C, int M, int N, int K) {
    __shared__ float sum;
    if (threadIdx.x == 0) sum = 0.f;
    __syncthreads();
    atomicAdd(&sum, A[threadIdx.x]);
    __syncthreads();
    if (threadIdx.x == 0) C[0] = sum;
}
extern "C" __global__ void wmma_store(const float *A, const float *B, float *C, int M, int N, int K) {
    using namespace nvcuda;
    __shared__ float tile[16 * 16];
    wmma::fragment<wmma::accumulator, 16, 16, 8, float> acc;
    wmma::fill_fragment(acc, 2.0f);
    wmma::store_matrix_sync(tile, acc, 16, wmma::mem_row_major);
    __syncthreads();
    C[threadIdx.x] = tile[threadIdx.x * 8];
}

// Warp 1 loads the tile warp 0 stores, with no barrier between: a race whichever comes first.
extern "C" __global__ void wmma_unsynced(const float *A, const float *B, float *C, int M, int N, int K) {
    using namespace nvcuda;
    __shared__ float tile[16 * 16];
    wmma::fragment<wmma::accumulator, 16, 16, 8, float> acc;
    wmma::fill_fragment(acc, 2.0f);
    if (threadIdx.x < 32) wmma::store_matrix_sync(tile, acc, 16, wmma::mem_row_major);  // the store
    else wmma::load_matrix_sync(acc, tile, 16, wmma::mem_row_major);  // the load
    C[threadIdx.x] = acc.x[0];
}

// Every lane of a warp stores the warp's sum in its slot, as public reductions do without a
// `lane == 0` guard: the same bytes, no hazard. SAME false: each lane stores its own lane
// number there, and which one stays depends on the order.
template <bool SAME>
__device__ void warp_sums(const float *A, float *C) {
    __shared__ float sums[2];
    float v = A[threadIdx.x];
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    sums[threadIdx.x / 32] = SAME ? v : (float)(threadIdx.x % 32);
    __syncthreads();
    if (threadIdx.x == 0) C[0] = sums[0] + sums[1];
}
extern "C" __global__ void same_value_writes(const float *A, const float *B, float *C, int M, int N, int K) {
    warp_sums<true>(A, C);
}
extern "C" __global__ void different_value_writes(const float *A, const float *B, float *C, int M, int N, int K) {
    warp_sums<false>(A, C);
}

// Each thread adds its right neighbour into its own element, with no barrier between the
// reads and the writes: the racing accesses are in a helper of a header of the kernel's own.
__device__ void add_neighbour(float *s, int t, int n);
extern "C" __global__ void helper_race(const float *A, const float *B, float *C, int M, int N, int K) {
    __shared__ float s[64];
    int t = threadIdx.x;
    s[t] = A[t];
    __syncthreads();
    add_neighbour(s, t, 64);  // the call
    __syncthreads();
    C[t] = s[t];
}
#line 1 "tests/helpers.cuh"
__device__ void add_neighbour(float *s, int t, int n) {
    s[t] += s[(t + 1) % n];  // the access
}
"#;

// Out of bounds, in files of their own, so that what lies after each array is known: the
// simulator's guard or a redzone (`smem_into_next` has three arrays, a redzone between each
// two). Each kernel's last thread writes one element past its array, or reads a 16-byte
// vector straddling its end; `smem_dynamic` is launched with fewer bytes than it uses.
// `smem_straddling_seen` reads its vector where the compiler sees the array, whose size its
// check compares the read with; `smem_straddling_static` in a function that is not inlined,
// where only the simulator's guard sees it.
const STRADDLING: &str = r#"
__device__ __noinline__ float4 vector_at(const float *p, int i) { return reinterpret_cast<const float4 *>(p)[i]; }
extern "C" __global__ void smem_straddling_static(const float *A, const float *B, float *C, int M, int N, int K) {
    __shared__ __align__(16) float tile[6];
    tile[threadIdx.x] = A[threadIdx.x];
    __syncthreads();
    if (threadIdx.x == 0) {
        const float4 v = vector_at(tile, 1);
        C[0] = v.x + v.y + v.z + v.w;
    }
}
extern "C" __global__ void smem_straddling_seen(const float *A, const float *B, float *C, int M, int N, int K) {
    __shared__ __align__(16) float tile[6];
    tile[threadIdx.x] = A[threadIdx.x];
    __syncthreads();
    if (threadIdx.x == 0) {
        const float4 v = reinterpret_cast<const float4 *>(tile)[1];
        C[0] = v.x + v.y + v.z + v.w;
    }
}
"#;
const OUT_OF_BOUNDS: &str = r#"
extern "C" __global__ void smem_past_static(const float *A, const float *B, float *C, int M, int N, int K) {
    __shared__ float red[2];
    if (threadIdx.x <= 2) red[threadIdx.x] = A[threadIdx.x];
    __syncthreads();
    if (threadIdx.x == 0) C[0] = red[0] + red[1];
}
// An index past the end of the middle one of three arrays, which on a GPU (and in the
// simulator's memory, without its redzones) reads the next array; through a pointer in a
// function that is not inlined, where the compiler's checks cannot see which array it is.
__device__ __noinline__ float element(const float *p, unsigned i) { return p[i]; }
extern "C" __global__ void smem_into_next(const float *A, const float *B, float *C, int M, int N, int K) {
    __shared__ float a[32];
    __shared__ float b[32];
    __shared__ float c[32];
    a[threadIdx.x] = A[threadIdx.x];
    b[threadIdx.x] = A[threadIdx.x];
    c[threadIdx.x] = A[threadIdx.x];
    __syncthreads();
    C[threadIdx.x] = a[threadIdx.x] + element(b, threadIdx.x + 4) + c[threadIdx.x];  // BUG: b[32..35]
}
// Lane 7's ldmatrix row is the ninth of an 8-row tile (the lanes .x1 ignores point further).
extern "C" __global__ void ldmatrix_row_past_end(const float *A, const float *B, float *C, int M, int N, int K) {
    __shared__ __align__(16) unsigned short tile[8][8];
    const unsigned l = threadIdx.x;
    if (l < 8)
        for (int c = 0; c < 8; ++c) tile[l][c] = (unsigned short)c;
    __syncwarp();
    const unsigned row = (unsigned)__cvta_generic_to_shared(&tile[0][0] + 8 * (l + 1));
    unsigned r;
    asm volatile("ldmatrix.sync.aligned.m8n8.x1.shared.b16 {%0}, [%1];" : "=r"(r) : "r"(row));
    C[l] = (float)(r & 0xFFFF);
}
extern "C" __global__ void smem_dynamic(const float *A, const float *B, float *C, int M, int N, int K) {
    extern __shared__ float buf[];
    buf[threadIdx.x] = A[threadIdx.x];
    __syncthreads();
    C[threadIdx.x] = buf[blockDim.x - 1 - threadIdx.x];
}

"#;
// Vector casts at addresses off their size, which a GPU faults on, beside the same accesses
// aligned and a 16-byte struct aligned to 8, which nvcc accesses in 8-byte halves. The float4
// is staged in shared memory whole, as a GPU's ld.v4 and st.v4 move it.
const MISALIGNED: &str = r#"
struct Halves { float2 lo, hi; };
extern "C" __global__ void misaligned(const float *A, const float *B, float *C, int M, int N, int K) {
    __shared__ float tile[32];
    __shared__ float4 staged;
    tile[threadIdx.x] = A[threadIdx.x];
    __syncthreads();
    if (threadIdx.x != 0) return;
    const int at = M - 16;  // a float offset, from the launch's sizes
    staged = *reinterpret_cast<const float4 *>(A + at);  // copied whole, as a GPU's ld.v4
    const float4 v = staged;
    const float2 s = *reinterpret_cast<const float2 *>(tile + (N - 16));
    const Halves h = *reinterpret_cast<const Halves *>(B + 2);
    C[0] = v.x * v.y + v.z * v.w + s.x * s.y + h.lo.x * h.hi.y;
    if (K != 16) atomicAdd(reinterpret_cast<float *>(reinterpret_cast<char *>(C) + (K - 16)), 1.0f);
}
// A tail thread's float4 one element past the end of A: off its alignment and out of bounds.
extern "C" __global__ void misaligned_past(const float *A, const float *B, float *C, int M, int N, int K) {
    if (threadIdx.x != 0) return;
    const float4 v = *reinterpret_cast<const float4 *>(A + M * K + 1);
    C[0] = v.x + v.w;
}
"#;

fn launch(entry: &str, grid: [u32; 3], block: [u32; 3], dims: (usize, usize, usize)) -> CudaPlan {
    gemm_launch("tests/races.cu", KERNELS, entry, grid, block, dims)
}

/// Runs `plan` on random M x N x K GEMM inputs in the instrumented simulator.
fn run(
    plan: CudaPlan,
    dims: (usize, usize, usize),
) -> Result<(Vec<f32>, Vec<Vec<f32>>), DeviceError> {
    run_on(&SimDevice::new()?.instrumented(), plan, dims)
}

fn run_on(
    dev: &SimDevice,
    plan: CudaPlan,
    dims: (usize, usize, usize),
) -> Result<(Vec<f32>, Vec<Vec<f32>>), DeviceError> {
    let shape = Shape::gemm(dims.0, dims.1, dims.2);
    let x = inputs(&shape, 7);
    let kernel = PlanKernel::fp32(plan);
    let out = {
        let mut p = dev.prepare(&kernel, &shape, &x)?;
        p.run()?;
        p.output()?
    };
    Ok((out, x))
}

fn race(r: Result<(Vec<f32>, Vec<Vec<f32>>), DeviceError>) -> String {
    let e = r.map(|_| ()).expect_err("the race is reported").to_string();
    assert!(
        e.contains("race on shared memory") && e.contains("thread ("),
        "{e}"
    );
    e
}

#[test]
fn a_missing_trailing_barrier_is_a_race_and_its_fix_is_not() {
    let dims = (32, 32, 64);
    let (out, x) = run(launch("tiled_fixed", [2, 2, 1], [16, 16, 1], dims), dims).unwrap();
    let want = gemm_f64(dims, &x[0], &x[1], |v| v);
    assert!(relative_error(&out, &want) < 1e-6);
    let e = race(run(
        launch("tiled_no_trailing_barrier", [2, 2, 1], [16, 16, 1], dims),
        dims,
    ));
    assert!(
        e.contains("'As' (in tiled<false>)") || e.contains("'Bs' (in tiled<false>)"),
        "{e}"
    );
    // The read that races, by its line (17: `acc += As[ty][k] * Bs[k][tx]`), and the other
    // thread's write of the next tile, by its (14 or 15: `As[ty][tx] = `, `Bs[ty][tx] = `).
    assert!(
        e.contains("; this thread's access is at ") && e.contains("races.cu:17 (thread ("),
        "{e}"
    );
    assert!(
        e.contains("races.cu:14) in the same barrier interval")
            || e.contains("races.cu:15) in the same barrier interval"),
        "{e}"
    );
}

/// Set in the processes [`a_line_reads_the_same_whichever_folder_built_the_module`] starts.
const ROLE: &str = "KERNEL_LAB_TEST_LINE_NAMING";

/// Built modules are cached across processes, which run in different folders (each test
/// binary in its crate's): the line of a relative `#line` name must not carry the folder of
/// the process that built the module. Two processes in two folders share one cache; the second
/// finds the first's module, and both name the line as the source does.
#[test]
fn a_line_reads_the_same_whichever_folder_built_the_module() {
    let dims = (32, 32, 64);
    if std::env::var_os(ROLE).is_some() {
        let e = race(run(
            launch("tiled_no_trailing_barrier", [2, 2, 1], [16, 16, 1], dims),
            dims,
        ));
        println!("{ROLE}: {e}");
        return;
    }
    let scratch =
        std::env::temp_dir().join(format!("kernel-lab-line-naming-{}", std::process::id()));
    let cache = scratch.join("cache");
    let message = |folder: &str| {
        let cwd = scratch.join(folder);
        std::fs::create_dir_all(&cwd).unwrap();
        let out = std::process::Command::new(std::env::current_exe().unwrap())
            .args([
                "--exact",
                "a_line_reads_the_same_whichever_folder_built_the_module",
                "--nocapture",
                "--test-threads=1",
            ])
            .current_dir(&cwd)
            .env(ROLE, "1")
            .env("PWD", &cwd)
            .env(kernel::sim::compile::CACHE_VARIABLE, &cache)
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        assert!(out.status.success(), "{text}");
        // The test's own name may start the printed line.
        let line = text
            .lines()
            .find_map(|l| Some(l[l.find(ROLE)?..].to_owned()));
        line.unwrap_or_else(|| panic!("the race is printed: {text}"))
    };
    let (first, second) = (message("first"), message("second"));
    let _ = std::fs::remove_dir_all(&scratch);
    for e in [first, second] {
        assert!(
            e.contains("; this thread's access is at tests/races.cu:17 (thread ("),
            "{e}"
        );
    }
}

/// A race in a function of a header of the kernel's own names the header's line and the
/// kernel's line that calls it.
#[test]
fn a_race_in_a_helper_names_its_line_and_the_kernels_line_that_calls_it() {
    let dims = (64, 1, 1);
    let e = race(run(
        launch("helper_race", [1, 1, 1], [64, 1, 1], dims),
        dims,
    ));
    let (call, access) = (
        source_line(KERNELS, "// the call"),
        source_line(KERNELS, "// the access"),
    );
    assert!(
        e.contains(&format!(
            "; this thread's access is at tests/helpers.cuh:{access}, called at tests/races.cu:{call} (thread ("
        )),
        "{e}"
    );
}

#[test]
fn a_stage_refilled_before_the_barrier_is_a_race_even_when_the_result_is_right() {
    // K is the number of steps; A (M x K) holds K stages of 256 floats.
    let dims = (256, 64, 4);
    let (out, x) = run(launch("staged_fixed", [1, 1, 1], [256, 1, 1], dims), dims).unwrap();
    let total: f64 = x[0][..4 * 256].iter().map(|&v| f64::from(v)).sum();
    assert!(
        (f64::from(out[0]) - total).abs() < 1e-3,
        "{} against {total}",
        out[0]
    );
    // Caught as a race with the copy's write when the refill is issued after a read of the
    // stage, or as a read of bytes a copy has not landed in when it is issued before.
    let e = run(
        launch("staged_early_refill", [1, 1, 1], [256, 1, 1], dims),
        dims,
    )
    .map(|_| ())
    .expect_err("the early refill is reported")
    .to_string();
    assert!(
        e.contains("race on shared memory") || e.contains("cp.async not landed"),
        "{e}"
    );
}

#[test]
fn a_warp_reduction_without_syncwarp_is_a_race() {
    let dims = (32, 32, 32);
    let (out, x) = run(launch("reduce_fixed", [1, 1, 1], [32, 1, 1], dims), dims).unwrap();
    let total: f64 = x[0][..32].iter().map(|&v| f64::from(v)).sum();
    assert!((f64::from(out[0]) - total).abs() < 1e-4);
    race(run(
        launch("reduce_no_syncwarp", [1, 1, 1], [32, 1, 1], dims),
        dims,
    ));
}

/// A WMMA load or store (an emulation, with no instruction of its own to read a line from)
/// that meets a race names its line in the kernel's source.
#[test]
fn a_wmma_access_that_races_names_its_line() {
    let dims = (64, 1, 16);
    let e = race(run(
        launch("wmma_unsynced", [1, 1, 1], [64, 1, 1], dims),
        dims,
    ));
    let line = |marker: &str| {
        KERNELS
            .lines()
            .position(|l| l.contains(marker))
            .map(|i| format!("races.cu:{} (thread (", i + 1))
            .unwrap()
    };
    assert!(
        e.contains(&line("// the store")) || e.contains(&line("// the load")),
        "{e}"
    );
}

/// The checker marks every byte: a read whose first bytes are ordered and whose last are not
/// is a race, however its bytes are checked together.
#[test]
fn a_race_in_the_upper_half_of_a_word_is_found() {
    let dims = (16, 16, 16);
    let (out, _) = run(launch("halves_fixed", [1, 1, 1], [32, 1, 1], dims), dims).unwrap();
    assert_eq!(out[0], (7 * 65536 + 1) as f32);
    // Whichever of the two threads runs first, under several schedules: where the writer runs
    // first, only the read's last bytes tell.
    for seed in 0..9 {
        let dev = SimDevice::new().unwrap().instrumented().with_seed(seed);
        let plan = launch("halves_race", [1, 1, 1], [32, 1, 1], dims);
        let e = race(run_on(&dev, plan, dims));
        assert!(e.contains("'word' (in halves<false>), byte 2"), "{e}");
    }
}

#[test]
fn shared_atomics_and_a_warps_wmma_store_are_not_races() {
    let dims = (16, 16, 16);
    let (out, x) = run(launch("shared_atomics", [1, 1, 1], [64, 1, 1], dims), dims).unwrap();
    let total: f64 = x[0][..64].iter().map(|&v| f64::from(v)).sum();
    assert!((f64::from(out[0]) - total).abs() < 1e-4);
    let (out, _) = run(launch("wmma_store", [1, 1, 1], [32, 1, 1], dims), dims).unwrap();
    assert!(out[..32].iter().all(|&v| v == 2.0), "{:?}", &out[..32]);
}

#[test]
fn writes_of_the_same_bytes_are_no_race_and_of_other_bytes_are() {
    let dims = (64, 64, 64);
    let (out, x) = run(
        launch("same_value_writes", [1, 1, 1], [64, 1, 1], dims),
        dims,
    )
    .unwrap();
    let total: f64 = x[0][..64].iter().map(|&v| f64::from(v)).sum();
    assert!(
        (f64::from(out[0]) - total).abs() < 1e-4,
        "{} against {total}",
        out[0]
    );
    let e = race(run(
        launch("different_value_writes", [1, 1, 1], [64, 1, 1], dims),
        dims,
    ));
    assert!(
        e.contains("this thread writes __shared__ 'sums'")
            && e.contains(" wrote (at tests/races.cu:")
            && e.contains(") in the same barrier"),
        "{e}"
    );
    // Both writes by their line, this thread's too, although the report waits for the store
    // to land (a later access of the thread's, at another line).
    let line = 1 + KERNELS
        .lines()
        .position(|l| l.contains("sums[threadIdx.x / 32] = SAME"))
        .unwrap();
    assert!(
        e.contains(&format!(" wrote (at tests/races.cu:{line}) "))
            && e.contains(&format!(
                "; this thread's access is at tests/races.cu:{line} ("
            )),
        "{e}"
    );
}

/// A read of shared memory no thread wrote does not stop the run: a correct kernel makes one
/// where the value goes unused (a guarded GEMM's rows past M). The value is the fill, NaN,
/// and the read is noted, with its variable, byte and line, for a failing output to explain.
#[test]
fn a_read_of_shared_memory_no_thread_wrote_is_noted() {
    let dims = (64, 64, 64);
    let shape = Shape::gemm(dims.0, dims.1, dims.2);
    let x = inputs(&shape, 7);
    let dev = SimDevice::new().unwrap().instrumented();
    let run = |entry: &str| {
        let kernel = PlanKernel::fp32(launch(entry, [1, 1, 1], [64, 1, 1], dims));
        let mut p = dev.prepare(&kernel, &shape, &x).unwrap();
        p.run().unwrap();
        (p.output().unwrap(), p.notes())
    };
    let (out, notes) = run("neighbours_fixed");
    assert_eq!(out[63], x[0][0]);
    assert!(notes.is_empty(), "{notes:?}");
    let (out, notes) = run("neighbours_uninit");
    assert_eq!(out[62], x[0][63]);
    assert!(kernel::is_poison(out[63]), "{}", out[63]);
    assert!(
        matches!(notes.as_slice(), [n] if n.contains("uninitialized shared memory: thread (63,0,0) of block (0,0,0)")
            && n.contains("'s' (in neighbours<true>), byte 256")
            && n.contains("tests/races.cu:")),
        "{notes:?}"
    );
}

#[test]
fn an_access_past_the_end_of_shared_memory_is_named() {
    let dims = (16, 16, 16);
    let oob = |plan: CudaPlan| {
        run(plan, dims)
            .map(|_| ())
            .expect_err("the access out of bounds is reported")
            .to_string()
    };
    let launch = |entry: &str, block: [u32; 3]| {
        let (file, code) = match entry {
            "smem_straddling_static" | "smem_straddling_seen" => {
                ("tests/straddling.cu", STRADDLING)
            }
            _ => ("tests/out_of_bounds.cu", OUT_OF_BOUNDS),
        };
        gemm_launch(file, code, entry, [1, 1, 1], block, dims)
    };
    // An index into the array itself is caught at its line, before the access.
    let e = oob(launch("smem_past_static", [32, 1, 1]));
    assert!(
        e.contains(
            "smem_past_static: tests/out_of_bounds.cu:4: index 2 is outside the array `red` (of \
             type 'float [2]'), in `if (threadIdx.x <= 2) red[threadIdx.x] = A[threadIdx.x];`"
        ) && e.contains("thread (2,0,0)"),
        "{e}"
    );
    let e = oob(launch("smem_into_next", [32, 1, 1]));
    assert!(
        e.contains("reads 4 bytes at byte ")
            && e.contains(" of __shared__ 'b' (in smem_into_next), which has 128 bytes, or ")
            && e.contains(": out of bounds"),
        "{e}"
    );
    // 6 floats: the second float4 holds bytes 16 to 31, of which 24 onwards are past the end
    // (read whole, or by its parts, as the host compiler chooses).
    let e = oob(launch("smem_straddling_static", [6, 1, 1]));
    assert!(
        e.starts_with("simulator: smem_straddling_static: reads ")
            && e.contains(" of __shared__ 'tile' (in smem_straddling_static), which has 24 bytes: out of bounds"),
        "{e}"
    );
    let e = oob(launch("smem_straddling_seen", [6, 1, 1]));
    assert!(
        e.contains(
            "smem_straddling_seen: tests/straddling.cu:17: a read of 'const struct float4' goes \
             past the end of the array or variable its pointer points into, in `const float4 v \
             = reinterpret_cast<const float4 *>(tile)[1];`"
        ),
        "{e}"
    );
    // An ldmatrix row past its array is the lane's that gave it, not the lane that completes
    // the warp's collective.
    let e = oob(launch("ldmatrix_row_past_end", [32, 1, 1]));
    assert!(
        e.contains("reads 16 bytes at byte 128 of __shared__ 'tile' (in ldmatrix_row_past_end), which has 128 bytes")
            && e.contains("(thread (7,0,0) of block (0,0,0))"),
        "{e}"
    );
    // 64 threads store a float each: 256 bytes, right only when the launch gives them.
    let dynamic = |bytes: u32| {
        let mut plan = launch("smem_dynamic", [64, 1, 1]);
        if let Some(kernel::Step::Kernel(l)) = plan.steps.first_mut() {
            l.dynamic_smem = bytes;
        }
        plan
    };
    let (out, x) = run(dynamic(256), dims).unwrap();
    assert_eq!(out[0], x[0][63]);
    for (bytes, hint) in [
        (252, "is smem= what the kernel needs?"),
        (0, "no smem= was given"),
    ] {
        let e = oob(dynamic(bytes));
        assert!(
            e.contains(&format!(
                "of the dynamic shared memory (extern __shared__), which the launch gives {bytes} bytes: out of bounds ({hint})"
            )),
            "{e}"
        );
    }
}

#[test]
fn a_vector_access_off_its_alignment_faults_as_on_a_gpu() {
    // M, N and K choose the float4's, the float2's and the atomic's offsets (16 is aligned).
    let run_of = |entry: &str, dims: (usize, usize, usize)| {
        run(
            gemm_launch(
                "tests/misaligned.cu",
                MISALIGNED,
                entry,
                [1, 1, 1],
                [32, 1, 1],
                dims,
            ),
            dims,
        )
        .map(|_| ())
    };
    let row = |dims| run_of("misaligned", dims);
    row((16, 16, 16)).expect("aligned accesses, and an 8-byte-aligned struct at byte 8, pass");
    row((20, 16, 16)).expect("a float4 at byte 16 passes");
    let e = row((17, 16, 16)).unwrap_err().to_string();
    assert!(
        e.contains("misaligned address: this thread reads 16 bytes at byte 4 (element 1) of buffer 'A', which is not a multiple of 16")
            && e.contains("thread (0,0,0)"),
        "{e}"
    );
    let e = row((19, 16, 16)).unwrap_err().to_string();
    assert!(
        e.contains("reads 16 bytes at byte 12 (element 3) of buffer 'A'"),
        "{e}"
    );
    // 8 bytes off: the host's aligned vector move faults, and the fault is named as the access
    // the hooks saw just before it.
    let e = row((18, 16, 16)).unwrap_err().to_string();
    assert!(
        e.contains("misaligned address: this thread reads 16 bytes at byte 8 (element 2) of buffer 'A', which is not a multiple of 16"),
        "{e}"
    );
    let e = row((16, 17, 16)).unwrap_err().to_string();
    assert!(
        e.contains("misaligned address: this thread reads 8 bytes at __shared__ 'tile' (in misaligned), byte 4, whose address is not a multiple of 8"),
        "{e}"
    );
    let e = row((16, 16, 18)).unwrap_err().to_string();
    assert!(
        e.contains("misaligned address: this thread")
            && e.contains("4 bytes at byte 2 (element 0) of buffer 'C'"),
        "{e}"
    );
    // Past the end as well: the host's aligned move faults on the alignment, with no address,
    // before the guard page could name the buffer; the hooks say both.
    let e = run_of("misaligned_past", (16, 16, 16))
        .unwrap_err()
        .to_string();
    assert!(
        e.contains(
            "misaligned address: this thread reads 16 bytes at byte 1028 (element 257) of buffer \
             'A', past its end (it holds 1024 bytes), which is not a multiple of 16"
        ),
        "{e}"
    );
}
