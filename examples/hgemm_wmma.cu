// A half-precision GEMM on tensor cores written the way public WMMA kernels are, to show that
// such a file runs in the lab unmodified: `half *` operands with B column-major (each column
// of B contiguous, the K-major layout tensor-core kernels and cuBLAS prefer), FP32
// accumulation and output, the BLAS parameter list with its epilogue C = alpha*A*B + beta*C,
// `__launch_bounds__`, `uint32_t`, a local header with host helpers, and a host launcher.
//
//   harness run --workload gemm --kernel 'examples/hgemm_wmma.cu:hgemm_wmma<64,64>,signature=gemm-blas,dtype=f16,C:f32,b=col,alpha=1.5,beta=-0.5,block=128,grid=tile:64x64'
//
// Each block computes a BM x BN tile of C with four warps in a 2 x 2 arrangement, each warp a
// (BM/2) x (BN/2) tile of 16 x 16 WMMA fragments. The block stages a BM x BK slice of A and a
// BK x BN slice of B in shared memory per step, zero-filling what lies past the matrix edges,
// so any M, N and K work; the accumulators go through shared memory once at the end so the
// epilogue can check its bounds element by element.
#include <cstdint>
#include <cuda_fp16.h>
#include <mma.h>

#include "cuda_check.cuh"

using namespace nvcuda;

constexpr int BK = 32;      // K step
constexpr int PAD = 8;      // halves of padding per shared row: fewer bank conflicts
constexpr int WARPS = 4;    // 2 x 2

template <int BM, int BN>
__global__ void __launch_bounds__(WARPS * 32)
    hgemm_wmma(int M, int N, int K, float alpha, const half *__restrict__ A,
               const half *__restrict__ B, float beta, float *__restrict__ C) {
  constexpr int WM = BM / 2, WN = BN / 2;       // a warp's tile
  constexpr int FM = WM / 16, FN = WN / 16;     // its fragments
  __shared__ half As[BM][BK + PAD];             // row-major slice of A
  __shared__ half Bs[BN][BK + PAD];             // slice of B, one row per column of B
  __shared__ float Cs[BM][BN + 4];              // the block's results, for the epilogue

  const uint32_t tid = threadIdx.x, warp = tid / 32;
  const int row0 = blockIdx.y * BM, col0 = blockIdx.x * BN;
  const int wr = (warp / 2) * WM, wc = (warp % 2) * WN;

  wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc[FM][FN];
#pragma unroll
  for (int i = 0; i < FM; ++i)
#pragma unroll
    for (int j = 0; j < FN; ++j)
      wmma::fill_fragment(acc[i][j], 0.0f);

  for (int k0 = 0; k0 < K; k0 += BK) {
    // A[r][k] row-major and B[k][c] column-major (at c * K + k): both run along K.
    for (uint32_t e = tid; e < BM * BK; e += blockDim.x) {
      const int r = e / BK, k = e % BK;
      As[r][k] = inside(row0 + r, k0 + k, M, K) ? A[(size_t)(row0 + r) * K + k0 + k]
                                                : __float2half(0.0f);
    }
    for (uint32_t e = tid; e < BN * BK; e += blockDim.x) {
      const int c = e / BK, k = e % BK;
      Bs[c][k] = inside(col0 + c, k0 + k, N, K) ? B[(size_t)(col0 + c) * K + k0 + k]
                                                : __float2half(0.0f);
    }
    __syncthreads();
#pragma unroll
    for (int kk = 0; kk < BK; kk += 16) {
      wmma::fragment<wmma::matrix_a, 16, 16, 16, half, wmma::row_major> a[FM];
      wmma::fragment<wmma::matrix_b, 16, 16, 16, half, wmma::col_major> b[FN];
#pragma unroll
      for (int i = 0; i < FM; ++i)
        wmma::load_matrix_sync(a[i], &As[wr + i * 16][kk], BK + PAD);
#pragma unroll
      for (int j = 0; j < FN; ++j)
        wmma::load_matrix_sync(b[j], &Bs[wc + j * 16][kk], BK + PAD);
#pragma unroll
      for (int i = 0; i < FM; ++i)
#pragma unroll
        for (int j = 0; j < FN; ++j)
          wmma::mma_sync(acc[i][j], a[i], b[j], acc[i][j]);
    }
    __syncthreads();
  }

#pragma unroll
  for (int i = 0; i < FM; ++i)
#pragma unroll
    for (int j = 0; j < FN; ++j)
      wmma::store_matrix_sync(&Cs[wr + i * 16][wc + j * 16], acc[i][j], BN + 4,
                              wmma::mem_row_major);
  __syncthreads();
  for (uint32_t e = tid; e < BM * BN; e += blockDim.x) {
    const int r = e / BN, c = e % BN;
    if (inside(row0 + r, col0 + c, M, N)) {
      float *out = &C[(size_t)(row0 + r) * N + col0 + c];
      *out = alpha * Cs[r][c] + beta * *out;
    }
  }
}

// Host code as the original file has it: the lab never compiles this.
void hgemm(int M, int N, int K, float alpha, const half *A, const half *B, float beta,
           float *C) {
  dim3 grid(CEIL_DIV(N, 64), CEIL_DIV(M, 64));
  hgemm_wmma<64, 64><<<grid, WARPS * 32>>>(M, N, K, alpha, A, B, beta, C);
  cuda_check(cudaGetLastError(), "hgemm_wmma");
}
