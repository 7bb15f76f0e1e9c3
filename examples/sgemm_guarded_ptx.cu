// An FP32 GEMM whose memory accesses are inline PTX, written the way CUTLASS's
// arch/memory.h writes its guarded accesses: a predicate set from the bounds check, the
// default moved into the output, then a predicated ld.global, so a row or column past the
// matrix edge reads nothing and gives zero; stores guarded the same way. Nothing in it is
// written for the lab; without a GPU the lab runs it in its CUDA simulator, whose front end
// maps each `asm` statement (setp, @p guards, ld, st, fma) onto its emulation.
//
//   harness run --device sim --workload gemm \
//     --kernel 'examples/sgemm_guarded_ptx.cu:sgemm_guarded_ptx,block=256,grid=tile:64x64'
//
// Each block computes a 64x64 tile of C with 256 threads, 4x4 outputs each. Per 8-deep K
// step the threads stage the tiles of A (transposed, so a thread's four rows are one
// ld.shared.v4) and B in shared memory; each thread then reads four values of A and four of
// B per k with two vector loads and issues 16 fma.rn.f32.
#include <cstdint>
#include <cuda_runtime.h>

#define BM 64
#define BN 64
#define BK 8
// A's tile is stored k-major with 4 floats of padding a row: the 32 threads of a warp store
// 4 rows (m) x 8 columns (k), and row k starts 4 banks after row k-1, so they hit 32 banks.
#define A_PITCH (BM + 4)

__device__ __forceinline__ uint32_t smem_addr(const void *p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

// 4 bytes from global memory where `guard` holds, else 0.
__device__ __forceinline__ float ldg_or_zero(const float *ptr, bool guard) {
  uint32_t v;
  asm volatile(
      "{\n"
      "  .reg .pred p;\n"
      "  setp.ne.b32 p, %1, 0;\n"
      "  mov.b32 %0, %2;\n"
      "  @p ld.global.f32 %0, [%3];\n"
      "}\n"
      : "=r"(v)
      : "r"((int)guard), "r"(0u), "l"(ptr));
  return __uint_as_float(v);
}

__device__ __forceinline__ void stg_guarded(float *ptr, float v, bool guard) {
  asm volatile(
      "{\n"
      "  .reg .pred p;\n"
      "  setp.ne.b32 p, %2, 0;\n"
      "  @p st.global.f32 [%0], %1;\n"
      "}\n" ::"l"(ptr),
      "f"(v), "r"((int)guard));
}

__device__ __forceinline__ void sts(uint32_t addr, float v) {
  asm volatile("st.shared.f32 [%0], %1;\n" ::"r"(addr), "f"(v));
}

__device__ __forceinline__ void lds128(float (&r)[4], uint32_t addr) {
  asm volatile("ld.shared.v4.f32 {%0, %1, %2, %3}, [%4];\n"
               : "=f"(r[0]), "=f"(r[1]), "=f"(r[2]), "=f"(r[3])
               : "r"(addr));
}

__global__ void sgemm_guarded_ptx(const float *A, const float *B, float *C, int M, int N, int K) {
  __shared__ __align__(16) float As[BK][A_PITCH];
  __shared__ __align__(16) float Bs[BK][BN];
  const int tx = threadIdx.x % 16, ty = threadIdx.x / 16;
  const int row0 = blockIdx.y * BM, col0 = blockIdx.x * BN;
  float acc[4][4] = {};
  for (int k0 = 0; k0 < K; k0 += BK) {
    for (int i = threadIdx.x; i < BM * BK; i += blockDim.x) {
      const int m = i / BK, k = i % BK;  // A row-major: k fastest, for coalesced loads
      const int ra = row0 + m, ca = k0 + k;
      sts(smem_addr(&As[k][m]), ldg_or_zero(A + (size_t)ra * K + ca, ra < M && ca < K));
      const int kb = i / BN, n = i % BN;
      const int rb = k0 + kb, cb = col0 + n;
      sts(smem_addr(&Bs[kb][n]), ldg_or_zero(B + (size_t)rb * N + cb, rb < K && cb < N));
    }
    __syncthreads();
#pragma unroll
    for (int k = 0; k < BK; ++k) {
      float a[4], b[4];
      lds128(a, smem_addr(&As[k][ty * 4]));
      lds128(b, smem_addr(&Bs[k][tx * 4]));
#pragma unroll
      for (int i = 0; i < 4; ++i)
#pragma unroll
        for (int j = 0; j < 4; ++j)
          asm("fma.rn.f32 %0, %1, %2, %0;\n" : "+f"(acc[i][j]) : "f"(a[i]), "f"(b[j]));
    }
    __syncthreads();
  }
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 4; ++j) {
      const int r = row0 + ty * 4 + i, c = col0 + tx * 4 + j;
      stg_guarded(C + (size_t)r * N + c, acc[i][j], r < M && c < N);
    }
}

// The host side, as such files have it (the lab compiles only the kernel).
void launch_sgemm_guarded_ptx(const float *A, const float *B, float *C, int M, int N, int K,
                              cudaStream_t stream) {
  dim3 grid((N + BN - 1) / BN, (M + BM - 1) / BM);
  sgemm_guarded_ptx<<<grid, 256, 0, stream>>>(A, B, C, M, N, K);
}
