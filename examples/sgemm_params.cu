// An FP32 GEMM that takes its arguments the way CUTLASS's kernels do: one `Params` struct by
// value, built by host code, holding the operands' pointers, 64-bit sizes and leading
// dimensions, and the epilogue's alpha and beta. An args= list gives a struct as its fields
// in braces, in the order the struct declares them:
//
//   harness run --device sim --workload gemm \
//     --kernel 'examples/sgemm_params.cu:sgemm_params,block=16x16,grid=tile:16x16,args=({A,B,C,M,N,K,K,N,N,alpha,beta})'
//
// The lab launches such a kernel through a wrapper that takes the fields and builds the struct,
// as the launcher below does (the host code stays in the file; the lab blanks it).
#include <cstddef>
#include <cuda_runtime.h>

struct GemmParams {
  const float *A, *B;
  float *C;
  size_t M, N, K;
  size_t lda, ldb, ldc; // row-major: the distance between rows, in elements
  float alpha, beta;
};

// Used by the kernel and by the launcher: a host function without __host__ __device__, as
// nvcc compiles with --expt-relaxed-constexpr.
constexpr unsigned ceil_div(size_t a, unsigned b) { return static_cast<unsigned>((a + b - 1) / b); }

#define TILE 16

__global__ void __launch_bounds__(TILE *TILE) sgemm_params(const __grid_constant__ GemmParams p) {
  __shared__ float As[TILE][TILE + 1];
  __shared__ float Bs[TILE][TILE + 1];
  const size_t row = blockIdx.y * TILE + threadIdx.y, col = blockIdx.x * TILE + threadIdx.x;
  float acc = 0.0f;
  for (unsigned t = 0; t < ceil_div(p.K, TILE); ++t) {
    const size_t ka = t * TILE + threadIdx.x, kb = t * TILE + threadIdx.y;
    As[threadIdx.y][threadIdx.x] = row < p.M && ka < p.K ? p.A[row * p.lda + ka] : 0.0f;
    Bs[threadIdx.y][threadIdx.x] = kb < p.K && col < p.N ? p.B[kb * p.ldb + col] : 0.0f;
    __syncthreads();
#pragma unroll
    for (int k = 0; k < TILE; ++k) acc += As[threadIdx.y][k] * Bs[k][threadIdx.x];
    __syncthreads();
  }
  if (row < p.M && col < p.N) {
    float *c = p.C + row * p.ldc + col;
    *c = p.alpha * acc + (p.beta == 0.0f ? 0.0f : p.beta * *c);
  }
}

void sgemm(const float *A, const float *B, float *C, size_t M, size_t N, size_t K, float alpha,
           float beta, cudaStream_t stream) {
  const GemmParams p{A, B, C, M, N, K, K, N, N, alpha, beta};
  const dim3 grid(ceil_div(N, TILE), ceil_div(M, TILE)), block(TILE, TILE);
  sgemm_params<<<grid, block, 0, stream>>>(p);
}
