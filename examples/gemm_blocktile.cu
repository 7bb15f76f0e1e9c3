// A GEMM written the way public CUDA worklogs write them, to show that such a file runs in the
// lab unmodified: a template over the tile sizes, `__launch_bounds__`, the BLAS parameter list
// (C = alpha*A*B + beta*C), dynamic shared memory, `uint`, and host code with its includes
// (the launcher below is never compiled by the lab: host functions are blanked).
//
//   harness run --workload gemm --kernel 'examples/gemm_blocktile.cu:sgemm_blocktile<64,64,8,8>,signature=gemm-blas,block=512,grid=tile:64x64,smem=4096'
//
// Each block computes a BM x BN tile of C; each thread a column of TM results of it, so one
// value of B read from shared memory feeds TM multiply-adds.
#include <algorithm>
#include <cassert>
#include <cstdio>
#include <cublas_v2.h>
#include <cuda_runtime.h>

template <int BM, int BN, int BK, int TM>
__global__ void __launch_bounds__(BM * BN / TM)
    sgemm_blocktile(int M, int N, int K, float alpha, const float *A, const float *B,
                    float beta, float *C) {
  // One load per thread fills each tile: the block has exactly BM*BK = BK*BN threads.
  static_assert(BM * BK == BM * BN / TM && BK * BN == BM * BN / TM, "tile shape");
  extern __shared__ float smem[];
  float *As = smem;           // BM x BK
  float *Bs = smem + BM * BK; // BK x BN
  const uint row0 = blockIdx.y * BM, col0 = blockIdx.x * BN;
  const uint threadCol = threadIdx.x % BN, threadRow = threadIdx.x / BN;
  const uint aRow = threadIdx.x / BK, aCol = threadIdx.x % BK;
  const uint bRow = threadIdx.x / BN, bCol = threadIdx.x % BN;

  float acc[TM] = {0.0f};
  for (int k0 = 0; k0 < K; k0 += BK) {
    // Out-of-range elements load as zeros, so partial tiles at the edges need no other care.
    int r = row0 + aRow, c = k0 + aCol;
    As[aRow * BK + aCol] = (r < M && c < K) ? A[r * K + c] : 0.0f;
    r = k0 + bRow;
    c = col0 + bCol;
    Bs[bRow * BN + bCol] = (r < K && c < N) ? B[r * N + c] : 0.0f;
    __syncthreads();
    for (int k = 0; k < BK; ++k) {
      const float b = Bs[k * BN + threadCol];
#pragma unroll
      for (int i = 0; i < TM; ++i)
        acc[i] += As[(threadRow * TM + i) * BK + k] * b;
    }
    __syncthreads();
  }
#pragma unroll
  for (int i = 0; i < TM; ++i) {
    const int r = row0 + threadRow * TM + i, c = col0 + threadCol;
    if (r < M && c < N)
      C[r * N + c] = alpha * acc[i] + beta * C[r * N + c];
  }
}

// Host code as the original file has it: the lab never compiles this.
void run_sgemm_blocktile(int M, int N, int K, float alpha, float *A, float *B, float beta,
                         float *C) {
  dim3 grid((N + 63) / 64, (M + 63) / 64);
  const size_t smem = (64 * 8 + 8 * 64) * sizeof(float);
  sgemm_blocktile<64, 64, 8, 8><<<grid, 512, smem>>>(M, N, K, alpha, A, B, beta, C);
  assert(cudaGetLastError() == cudaSuccess);
  printf("launched %d blocks\n", std::max(1, (int)(grid.x * grid.y)));
}
