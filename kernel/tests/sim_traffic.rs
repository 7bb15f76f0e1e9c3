//! The simulator's global-memory traffic counter: every load and store to a device buffer
//! counted once, with its size; shared memory, locals and atomics on other memory never. The
//! figures are derived from each kernel's loop structure, so a miscount of any kind (a hook
//! missing, an access counted twice, shared memory counted as global) fails.

use kernel::sim::SimDevice;
use kernel::testing::{PlanKernel, gemm_f64, gemm_launch};
use kernel::{CudaPlan, Executor, MemoryTraffic, Shape};

const KERNELS: &str = r#"
#include "lab/ptx.h"
// One output per thread, A and B read from global memory K times each.
extern "C" __global__ void naive(const float *A, const float *B, float *C, int M, int N, int K) {
    int i = blockIdx.y * blockDim.y + threadIdx.y, j = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= M || j >= N) return;
    float acc = 0.f;
    for (int k = 0; k < K; ++k) acc += A[i * K + k] * B[k * N + j];
    C[i * N + j] = acc;
}

// 16 x 16 tiles through shared memory: each element of A is read N / 16 times, B's M / 16.
extern "C" __global__ void tiled(const float *A, const float *B, float *C, int M, int N, int K) {
    __shared__ float As[16][16], Bs[16][16];
    int ty = threadIdx.y, tx = threadIdx.x;
    int i = blockIdx.y * 16 + ty, j = blockIdx.x * 16 + tx;
    float acc = 0.f;
    for (int t = 0; t < K; t += 16) {
        As[ty][tx] = A[i * K + t + tx];
        Bs[ty][tx] = B[(t + ty) * N + j];
        __syncthreads();
        for (int k = 0; k < 16; ++k) acc += As[ty][k] * Bs[k][tx];
        __syncthreads();
    }
    C[i * N + j] = acc;
}

// float4 loads and stores: 16 bytes each, counted once.
extern "C" __global__ void copy4(const float *A, const float *B, float *C, int M, int N, int K) {
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t < M * N / 4) reinterpret_cast<float4 *>(C)[t] = reinterpret_cast<const float4 *>(A)[t];
}

// cp.async copies (their reads counted by the emulation itself), the last one partly
// zero-filled: 16 + 16 + 8 bytes read per thread, 12 floats stored.
extern "C" __global__ void staged(const float *A, const float *B, float *C, int M, int N, int K) {
    __shared__ __align__(16) float s[64][12];
    int t = threadIdx.x;
    ptx::cp_async_cg(ptx::smem_addr(&s[t][0]), A + 12 * t);
    ptx::cp_async_cg(ptx::smem_addr(&s[t][4]), A + 12 * t + 4);
    ptx::cp_async_cg_zfill(ptx::smem_addr(&s[t][8]), A + 12 * t + 8, 8);
    ptx::cp_async_wait_all();
    for (int i = 0; i < 12; ++i) C[12 * t + i] = s[t][i];
}

// Writes one element past the end of C.
extern "C" __global__ void overrun(const float *A, const float *B, float *C, int M, int N, int K) {
    C[M * N] = A[0];
}

// One atomic add per thread into C: a read and a write of 4 bytes each.
extern "C" __global__ void atomics(const float *A, const float *B, float *C, int M, int N, int K) {
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t < M * N) atomicAdd(&C[t % 4], 1.0f);
}

// Every thread adds into one float and takes the maximum of one int, many times: the
// simulator's blocks run on several OS threads at once, so its compare-exchange loops retry.
extern "C" __global__ void contended(const float *A, const float *B, float *C, int M, int N, int K) {
    for (int i = 0; i < 64; ++i) {
        atomicAdd(&C[0], 1.0f);
        atomicMax(reinterpret_cast<int *>(&C[1]), i);
    }
}
"#;

fn plan(entry: &str, grid: [u32; 3], block: [u32; 3], m: usize, n: usize, k: usize) -> CudaPlan {
    gemm_launch("tests/traffic.cu", KERNELS, entry, grid, block, (m, n, k))
}

fn data(len: usize, seed: u64) -> Vec<f32> {
    let mut s = seed;
    (0..len)
        .map(|_| {
            s = s.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
            ((s >> 40) as f32 / (1u64 << 24) as f32) - 0.5
        })
        .collect()
}

/// Runs `plan` on M x N x K inputs and returns its output and traffic; `gemm`: the output
/// must be the product.
fn run(
    dev: &SimDevice,
    plan: CudaPlan,
    (m, n, k): (usize, usize, usize),
    gemm: bool,
) -> (Vec<f32>, Option<MemoryTraffic>) {
    let shape = Shape::gemm(m, n, k);
    let inputs = vec![data(m * k, 1), data(k * n, 2)];
    let kernel = PlanKernel::fp32(plan);
    let mut p = dev.prepare(&kernel, &shape, &inputs).expect("prepares");
    p.run().expect("runs");
    let out = p.output().expect("output");
    let want = gemm_f64((m, n, k), &inputs[0], &inputs[1], |x| x);
    if gemm {
        for (got, want) in out.iter().zip(&want) {
            assert!(
                (f64::from(*got) - want).abs() < 1e-3,
                "{got} against {want}"
            );
        }
    }
    (out, p.traffic())
}

const F32: u64 = 4;

#[test]
fn naive_gemm_loads_two_operands_per_multiply_add() {
    let dev = SimDevice::new().unwrap().instrumented();
    let (m, n, k) = (37, 29, 51);
    let p = plan(
        "naive",
        [(n as u32).div_ceil(8), (m as u32).div_ceil(8), 1],
        [8, 8, 1],
        m,
        n,
        k,
    );
    let t = run(&dev, p, (m, n, k), true)
        .1
        .expect("the simulator counts traffic when asked");
    let (m, n, k) = (m as u64, n as u64, k as u64);
    assert_eq!(t.load_bytes, 2 * m * n * k * F32);
    assert_eq!(t.store_bytes, m * n * F32);
}

#[test]
fn tiling_divides_the_loads_by_the_tile_and_shared_memory_is_not_counted() {
    let dev = SimDevice::new().unwrap().instrumented();
    let (m, n, k) = (48, 32, 64);
    let p = plan(
        "tiled",
        [n as u32 / 16, m as u32 / 16, 1],
        [16, 16, 1],
        m,
        n,
        k,
    );
    let t = run(&dev, p, (m, n, k), true).1.unwrap();
    let (m, n, k) = (m as u64, n as u64, k as u64);
    assert_eq!(t.load_bytes, (m * k * (n / 16) + k * n * (m / 16)) * F32);
    assert_eq!(t.store_bytes, m * n * F32);
}

#[test]
fn vector_accesses_copies_and_atomics_count_their_size() {
    let dev = SimDevice::new().unwrap().instrumented();
    let (m, n, k) = (16, 16, 16);
    let p = plan("copy4", [1, 1, 1], [64, 1, 1], m, n, k);
    let (out, t) = run(&dev, p, (m, n, k), false);
    assert!(out.iter().all(|v| v.is_finite()));
    let t = t.unwrap();
    assert_eq!((t.load_bytes, t.store_bytes), (256 * F32, 256 * F32));

    let (m, n, k) = (64, 12, 12);
    let p = plan("staged", [1, 1, 1], [64, 1, 1], m, n, k);
    let (out, t) = run(&dev, p, (m, n, k), false);
    assert_eq!(out[10], 0.0, "zero-filled by cp.async");
    let t = t.unwrap();
    assert_eq!((t.load_bytes, t.store_bytes), (64 * 40, 64 * 12 * F32));

    let (m, n, k) = (16, 16, 16);
    let p = plan("atomics", [2, 1, 1], [128, 1, 1], m, n, k);
    let (out, t) = run(&dev, p, (m, n, k), false);
    assert_eq!(&out[..4], &[64.0; 4]);
    let t = t.unwrap();
    assert_eq!((t.load_bytes, t.store_bytes), (256 * F32, 256 * F32));

    // A GPU's atomic is one read-modify-write however many threads contend for its word:
    // the emulation's compare-exchange retries are not traffic.
    let p = plan("contended", [32, 1, 1], [64, 1, 1], m, n, k);
    let (out, t) = run(&dev, p, (m, n, k), false);
    let adds = 32 * 64 * 64;
    assert_eq!(out[0], adds as f32);
    let t = t.unwrap();
    assert_eq!(
        (t.load_bytes, t.store_bytes),
        (2 * adds * F32, 2 * adds * F32)
    );
}

#[test]
fn a_plain_simulator_does_not_count() {
    let dev = SimDevice::new().unwrap();
    let (m, n, k) = (16, 16, 16);
    let p = plan("naive", [2, 2, 1], [8, 8, 1], m, n, k);
    assert_eq!(run(&dev, p, (m, n, k), true).1, None);
}

#[test]
fn a_counting_simulator_still_reports_faults_and_counts_the_next_launch() {
    let dev = SimDevice::new().unwrap().instrumented();
    let (m, n, k) = (16, 16, 16);
    let shape = Shape::gemm(m, n, k);
    let inputs = vec![data(m * k, 1), data(k * n, 2)];
    let bad = PlanKernel::fp32(plan("overrun", [1, 1, 1], [1, 1, 1], m, n, k));
    let mut p = dev.prepare(&bad, &shape, &inputs).unwrap();
    let err = p.run().unwrap_err().to_string();
    assert!(
        err.contains("out-of-bounds") || err.contains("past the end"),
        "{err}"
    );
    let p = plan("naive", [2, 2, 1], [8, 8, 1], m, n, k);
    let t = run(&dev, p, (m, n, k), true).1.unwrap();
    assert_eq!(t.load_bytes, 2 * 16 * 16 * 16 * F32);
}
