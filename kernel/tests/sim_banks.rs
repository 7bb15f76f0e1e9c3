//! The simulator's shared-memory bank model: each warp instruction rebuilt from its lanes'
//! accesses, and its wavefronts counted as 32 banks of 4-byte words serve them. Every
//! expected figure follows from the access pattern (the bank of word w is w mod 32), so a
//! miscount of any kind (lanes grouped wrongly, a broadcast charged per lane, a split float4
//! counted as four instructions) fails.

use kernel::sim::SimDevice;
use kernel::testing::{PlanKernel, gemm_launch};
use kernel::{Executor, Shape, SharedBanks, Wavefronts};

const KERNELS: &str = r#"
#include "lab/ptx.h"
// Fills s[0, 1056) with contiguous stores (33 conflict-free requests of a warp), then each
// lane reads word (lane * K) mod 1056: K = 1 contiguous, K = 2 two words a bank, K = 32 every
// lane in bank 0, K = 33 one lane a bank, K = 0 one word for all (a broadcast).
extern "C" __global__ void stride(const float *A, const float *B, float *C, int M, int N, int K) {
    __shared__ float s[1056];
    int t = threadIdx.x;
    for (int i = t; i < 1056; i += 32) s[i] = A[i % (M * 4)];
    __syncthreads();
    C[t] = s[(t * K) % 1056];
}

// The same with float4 loads: lane reads float4 (lane * K) mod 264.
extern "C" __global__ void vec4(const float *A, const float *B, float *C, int M, int N, int K) {
    __shared__ __align__(16) float s[1056];
    int t = threadIdx.x;
    for (int i = t; i < 1056; i += 32) s[i] = A[i % (M * 4)];
    __syncthreads();
    float4 v = reinterpret_cast<const float4 *>(s)[(t * K) % 264];
    C[t] = v.x + v.y * 2.f + v.z * 3.f + v.w * 4.f;
}

// The two above as inline PTX: ld.shared.f32 and ld.shared.v4.f32 from a shared-window address.
extern "C" __global__ void stride_ptx(const float *A, const float *B, float *C, int M, int N, int K) {
    __shared__ float s[1056];
    int t = threadIdx.x;
    for (int i = t; i < 1056; i += 32) s[i] = A[i % (M * 4)];
    __syncthreads();
    float v;
    asm volatile("ld.shared.f32 %0, [%1];" : "=f"(v) : "r"((unsigned)__cvta_generic_to_shared(s + (t * K) % 1056)));
    C[t] = v;
}
extern "C" __global__ void vec4_ptx(const float *A, const float *B, float *C, int M, int N, int K) {
    __shared__ __align__(16) float s[1056];
    int t = threadIdx.x;
    for (int i = t; i < 1056; i += 32) s[i] = A[i % (M * 4)];
    __syncthreads();
    float4 v;
    asm volatile("ld.shared.v4.f32 {%0, %1, %2, %3}, [%4];" : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w)
                 : "r"((unsigned)__cvta_generic_to_shared(s + 4 * ((t * K) % 264))));
    C[t] = v.x + v.y * 2.f + v.z * 3.f + v.w * 4.f;
}

// Four scalar loads of one aligned float4 per lane: the vector access nvcc makes of them.
extern "C" __global__ void scalars(const float *A, const float *B, float *C, int M, int N, int K) {
    __shared__ __align__(16) float s[1056];
    int t = threadIdx.x;
    for (int i = t; i < 1056; i += 32) s[i] = A[i % (M * 4)];
    __syncthreads();
    const float *p = s + 4 * t;
    C[t] = p[0] + p[1] * 2.f + p[2] * 3.f + p[3] * 4.f;
}

// Half the warp reads, 16 lanes in bank 0; the other half skips the load.
extern "C" __global__ void divergent(const float *A, const float *B, float *C, int M, int N, int K) {
    __shared__ float s[1056];
    int t = threadIdx.x;
    for (int i = t; i < 1056; i += 32) s[i] = A[i % (M * 4)];
    __syncthreads();
    float v = 0.f;
    if (t < 16) v = s[t * 32];
    C[t] = v;
}

// ldmatrix.x4 of four 8x8 matrices whose rows lie K bytes apart (16: contiguous; 128: every
// row of a matrix in the same four banks; 144: padded by 16 bytes).
extern "C" __global__ void rows(const float *A, const float *B, float *C, int M, int N, int K) {
    __shared__ __align__(16) unsigned char s[32 * 144];
    int t = threadIdx.x;
    for (int i = t; i < 32 * 144 / 4; i += 32) reinterpret_cast<float *>(s)[i] = A[i % (M * 4)];
    __syncthreads();
    unsigned r[4];
    ptx::ldmatrix_x4(r, ptx::smem_addr(s + t * K));
    C[t] = __uint_as_float(r[0] ^ r[1] ^ r[2] ^ r[3]);
}

// stmatrix.x4 to the rows `rows` reads: a store of a matrix a phase.
extern "C" __global__ void store_rows(const float *A, const float *B, float *C, int M, int N, int K) {
    __shared__ __align__(16) unsigned char s[32 * 144];
    int t = threadIdx.x;
    asm volatile("stmatrix.sync.aligned.m8n8.x4.shared.b16 [%0], {%1, %2, %3, %4};"
                 :: "r"((unsigned)__cvta_generic_to_shared(s + t * K)), "r"(t), "r"(t + 1), "r"(t + 2), "r"(t + 3)
                 : "memory");
    __syncthreads();
    C[t] = reinterpret_cast<const float *>(s + t * K)[0];
}

// Every lane reports a row of a one-matrix ldmatrix, as the emulation does only for the 8
// lanes that give its rows: the first 8 to run complete the instruction, and the others find
// it complete. Rows repeat every 8 lanes, so any 8 of them cover 128 contiguous bytes.
extern "C" __global__ void extra_rows(const float *A, const float *B, float *C, int M, int N, int K) {
    __shared__ __align__(16) unsigned char s[128];
    int t = threadIdx.x;
    reinterpret_cast<float *>(s)[t] = A[t % (M * 4)];
    __syncthreads();
    sim_bank_report(SIM_BANK_LDSM, s + 16 * (t % 8), 16, 1);
    C[t] = reinterpret_cast<const float *>(s)[t];
}

// Each lane reports K contiguous bytes of its own, wider than any instruction's lane part:
// with K = 128 a phase of 8 lanes covers 256 words.
extern "C" __global__ void wide_reports(const float *A, const float *B, float *C, int M, int N, int K) {
    __shared__ __align__(16) unsigned char s[32 * 128];
    int t = threadIdx.x;
    for (int i = 0; i < K / 4; ++i) reinterpret_cast<float *>(s + t * K)[i] = A[t % (M * 4)];
    __syncthreads();
    sim_bank_report(SIM_BANK_LDGSTS, s + t * K, K, 0);
    C[t] = reinterpret_cast<const float *>(s + t * K)[0];
}

// One 16-byte cp.async a lane, destinations K bytes apart.
extern "C" __global__ void copies(const float *A, const float *B, float *C, int M, int N, int K) {
    __shared__ __align__(16) unsigned char s[32 * 128];
    int t = threadIdx.x;
    ptx::cp_async_cg(ptx::smem_addr(s + t * K), A + 4 * t);
    ptx::cp_async_wait_all();
    C[t] = reinterpret_cast<const float *>(s + t * K)[0];
}
"#;

/// Runs `entry` as one warp with K = `k` and returns the bank model's counts.
fn banks(entry: &str, k: usize) -> SharedBanks {
    let dev = SimDevice::new().unwrap().instrumented();
    let (m, n) = (32, 1);
    let plan = gemm_launch(
        "tests/banks.cu",
        KERNELS,
        entry,
        [1, 1, 1],
        [32, 1, 1],
        (m, n, k),
    );
    // Inputs of M x K and K x N floats: at least 128 of A whatever K is.
    let shape = Shape::gemm(m, n, k.max(4));
    let inputs = vec![vec![1.5f32; m * k.max(4)], vec![0.5f32; k.max(4) * n]];
    let kernel = PlanKernel::fp32(plan);
    let mut p = dev.prepare(&kernel, &shape, &inputs).expect("prepares");
    p.run().expect("runs");
    p.traffic()
        .expect("the simulator counts when instrumented")
        .shared
}

fn w(requests: u64, wavefronts: u64, ideal: u64) -> Wavefronts {
    Wavefronts {
        requests,
        wavefronts,
        ideal,
    }
}

#[test]
fn a_warps_loads_take_one_wavefront_per_word_of_the_busiest_bank() {
    for (k, waves) in [(1, 1), (2, 2), (32, 32), (33, 1), (0, 1)] {
        let b = banks("stride", k);
        assert_eq!(b.lds, w(1, waves, 1), "stride {k}");
        assert_eq!(b.sts, w(33, 33, 33), "the fill, stride {k}");
        assert_eq!(b.lds.conflicts(), waves - 1);
    }
}

#[test]
fn float4_loads_take_a_wavefront_per_quarter_warp() {
    assert_eq!(banks("vec4", 1).lds, w(1, 4, 4));
    // A broadcast still takes a wavefront per quarter-warp.
    assert_eq!(banks("vec4", 0).lds, w(1, 4, 4));
    // Lanes 64 bytes apart: a quarter-warp's eight float4s fall in two of the eight 16-byte
    // bank groups, four words a bank, in each of the four phases.
    assert_eq!(banks("vec4", 4).lds, w(1, 16, 4));
}

#[test]
fn inline_ptx_loads_are_counted_as_the_same_loads_in_cuda_cpp() {
    for k in [1, 2, 32, 33, 0] {
        assert_eq!(
            banks("stride_ptx", k),
            banks("stride", k),
            "ld.shared.f32, stride {k}"
        );
    }
    for k in [1, 0, 4] {
        assert_eq!(
            banks("vec4_ptx", k),
            banks("vec4", k),
            "ld.shared.v4.f32, stride {k}"
        );
    }
}

#[test]
fn scalar_loads_of_one_aligned_float4_are_one_vector_access() {
    assert_eq!(banks("scalars", 0).lds, banks("vec4", 1).lds);
}

#[test]
fn lanes_that_skip_an_access_leave_it_to_the_others() {
    assert_eq!(banks("divergent", 0).lds, w(1, 16, 1));
}

#[test]
fn ldmatrix_takes_a_wavefront_per_matrix_unless_its_rows_share_banks() {
    assert_eq!(banks("rows", 16).ldsm, w(1, 4, 4));
    assert_eq!(banks("rows", 128).ldsm, w(1, 32, 4));
    assert_eq!(banks("rows", 144).ldsm, w(1, 4, 4));
    assert_eq!(banks("rows", 16).lds, Wavefronts::default());
}

#[test]
fn stmatrix_is_a_store_of_a_matrix_a_phase() {
    assert_eq!(banks("store_rows", 16).sts, w(1, 4, 4));
    assert_eq!(banks("store_rows", 128).sts, w(1, 32, 4));
    assert_eq!(banks("store_rows", 144).sts, w(1, 4, 4));
    assert_eq!(banks("store_rows", 16).ldsm, Wavefronts::default());
}

#[test]
fn lanes_beyond_an_instructions_count_are_left_out() {
    assert_eq!(banks("extra_rows", 0).ldsm, w(1, 1, 1));
}

/// However wide a lane's part, every word it covers counts: 8 lanes of 128 bytes are 256
/// words, 8 to a bank, in each of the 4 phases.
#[test]
fn a_phase_wider_than_any_instruction_counts_every_word() {
    assert_eq!(banks("wide_reports", 128).ldgsts, w(1, 32, 4));
}

#[test]
fn cp_async_destinations_are_counted_like_stores() {
    let b = banks("copies", 16);
    assert_eq!(b.ldgsts, w(1, 4, 4));
    assert_eq!(banks("copies", 128).ldgsts, w(1, 32, 4));
    assert_eq!(b.sts, Wavefronts::default());
}
