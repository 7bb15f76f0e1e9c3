// A tensor-core GEMM written the way public Ampere tensor-core tutorials write it: cp.async,
// ldmatrix and mma.sync as inline PTX in small wrappers, shared addresses from the cvta
// idiom, and a host launcher (never compiled by the lab: host functions are blanked). Nothing
// in it is written for the lab; without a GPU the lab runs it in its CUDA simulator, whose
// front end maps each `asm` statement onto the same emulation as the lab's own lab/ptx.h.
//
//   harness run --device sim --workload gemm \
//     --kernel 'examples/mma_ptx.cu:mma_ptx_gemm,block=128,grid=tile:64x64,precision=fp16'
//
// Each block computes a 64x64 tile of C with 4 warps (2x2, 32x32 each). Per 32-deep K step,
// cp.async brings the FP32 tiles of A and B into shared memory (4 bytes a copy, zero-filled
// past the matrix edges), the threads convert them to FP16 tiles, and each warp loads its
// fragments with ldmatrix (.trans for B, stored K x N) and issues 2 x 4 mma.sync m16n8k16
// for each of the step's two k16 halves.
#include <cstdint>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#define BM 64
#define BN 64
#define BK 32
#define PAD 8  // halves: keeps ldmatrix rows 16-byte aligned and off each other's banks

__device__ __forceinline__ uint32_t smem_u32(const void *ptr) {
  uint32_t addr;
  asm("{ .reg .u64 u64addr; cvta.to.shared.u64 u64addr, %1; cvt.u32.u64 %0, u64addr; }\n"
      : "=r"(addr)
      : "l"(ptr));
  return addr;
}

// 4 bytes global -> shared; src_bytes = 0 reads nothing and writes zeros.
__device__ __forceinline__ void cp_async_4(uint32_t dst, const void *src, int src_bytes) {
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(dst), "l"(src), "r"(src_bytes));
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }
__device__ __forceinline__ void cp_async_wait_all() { asm volatile("cp.async.wait_group 0;\n" ::); }

__device__ __forceinline__ void ldmatrix_x4(uint32_t (&r)[4], uint32_t addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(addr));
}
__device__ __forceinline__ void ldmatrix_x2_trans(uint32_t (&r)[2], uint32_t addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16 {%0, %1}, [%2];\n"
               : "=r"(r[0]), "=r"(r[1])
               : "r"(addr));
}
__device__ __forceinline__ void mma_16816(float (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[2]) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 "
      "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

__global__ void mma_ptx_gemm(const float *A, const float *B, float *C, int M, int N, int K) {
  __shared__ __align__(16) float As_f[BM][BK];
  __shared__ __align__(16) float Bs_f[BK][BN];
  __shared__ __align__(16) __half As[BM][BK + PAD];
  __shared__ __align__(16) __half Bs[BK][BN + PAD];
  const int tid = threadIdx.x, lane = tid % 32, warp = tid / 32;
  const int wm = warp / 2, wn = warp % 2;
  const int row0 = blockIdx.y * BM, col0 = blockIdx.x * BN;
  float acc[2][4][4] = {};

  for (int k0 = 0; k0 < K; k0 += BK) {
    for (int i = tid; i < BM * BK; i += blockDim.x) {
      const int r = i / BK, c = i % BK, gr = row0 + r, gc = k0 + c;
      const bool in = gr < M && gc < K;
      cp_async_4(smem_u32(&As_f[r][c]), in ? &A[(size_t)gr * K + gc] : A, in ? 4 : 0);
    }
    for (int i = tid; i < BK * BN; i += blockDim.x) {
      const int r = i / BN, c = i % BN, gr = k0 + r, gc = col0 + c;
      const bool in = gr < K && gc < N;
      cp_async_4(smem_u32(&Bs_f[r][c]), in ? &B[(size_t)gr * N + gc] : B, in ? 4 : 0);
    }
    cp_async_commit();
    cp_async_wait_all();
    __syncthreads();
    for (int i = tid; i < BM * BK; i += blockDim.x) As[i / BK][i % BK] = __float2half(As_f[i / BK][i % BK]);
    for (int i = tid; i < BK * BN; i += blockDim.x) Bs[i / BN][i % BN] = __float2half(Bs_f[i / BN][i % BN]);
    __syncthreads();

    for (int kk = 0; kk < BK; kk += 16) {
      uint32_t a[2][4], b[4][2];
      // A 16x16: lanes 0-15 give rows 0-15 of columns 0-7, lanes 16-31 the same rows of 8-15.
      for (int mi = 0; mi < 2; ++mi)
        ldmatrix_x4(a[mi], smem_u32(&As[wm * 32 + mi * 16 + lane % 16][kk + 8 * (lane / 16)]));
      // B 16x8 (K x N): lanes 0-15 give its 16 rows; .trans hands out columns.
      for (int ni = 0; ni < 4; ++ni)
        ldmatrix_x2_trans(b[ni], smem_u32(&Bs[kk + lane % 16][wn * 32 + ni * 8]));
      for (int mi = 0; mi < 2; ++mi)
        for (int ni = 0; ni < 4; ++ni) mma_16816(acc[mi][ni], a[mi], b[ni]);
    }
    __syncthreads();
  }

  // c0, c1: row g, columns 2t, 2t+1; c2, c3: row g + 8.
  const int g = lane / 4, t = lane % 4;
  for (int mi = 0; mi < 2; ++mi)
    for (int ni = 0; ni < 4; ++ni)
      for (int i = 0; i < 4; ++i) {
        const int r = row0 + wm * 32 + mi * 16 + g + 8 * (i / 2);
        const int c = col0 + wn * 32 + ni * 8 + 2 * t + i % 2;
        if (r < M && c < N) C[(size_t)r * N + c] = acc[mi][ni][i];
      }
}

void launch_mma_ptx_gemm(const float *A, const float *B, float *C, int M, int N, int K,
                         cudaStream_t stream) {
  dim3 grid((N + BN - 1) / BN, (M + BM - 1) / BM);
  mma_ptx_gemm<<<grid, 128, 0, stream>>>(A, B, C, M, N, K);
}
