// A bfloat16 GEMM in the "NT" layout of language-model code, to show that such a file runs in
// the lab unmodified: C[M,N] = A[M,K] B[N,K]^T, where B holds one row of K weights per output
// column (a linear layer's weight, which is B column-major), all three in `__nv_bfloat16`,
// the sum kept in FP32 and rounded once when stored.
//
//   harness run --workload gemm --kernel 'examples/bf16_gemm_nt.cu:bf16_gemm_nt,dtype=bf16,b=col,block=16x16,grid=tile:16x16'
//
// One thread per element of C; both operands are read along K, two elements at a time while
// K allows (as __nv_bfloat162 when the row starts on an even element).
#include <cuda_bf16.h>

__global__ void bf16_gemm_nt(const __nv_bfloat16 *__restrict__ A,
                             const __nv_bfloat16 *__restrict__ B, __nv_bfloat16 *__restrict__ C,
                             int M, int N, int K) {
  const int row = blockIdx.y * blockDim.y + threadIdx.y;
  const int col = blockIdx.x * blockDim.x + threadIdx.x;
  if (row >= M || col >= N)
    return;
  const __nv_bfloat16 *a = A + (size_t)row * K;
  const __nv_bfloat16 *b = B + (size_t)col * K;
  float sum = 0.0f;
  int k = 0;
  if (K % 2 == 0) {
    // Every row starts on an even element: read pairs.
    const __nv_bfloat162 *a2 = reinterpret_cast<const __nv_bfloat162 *>(a);
    const __nv_bfloat162 *b2 = reinterpret_cast<const __nv_bfloat162 *>(b);
#pragma unroll 4
    for (; k < K / 2; ++k) {
      const float2 x = __bfloat1622float2(a2[k]), y = __bfloat1622float2(b2[k]);
      sum = fmaf(x.x, y.x, sum);
      sum = fmaf(x.y, y.y, sum);
    }
    k = K;
  }
  for (; k < K; ++k)
    sum = fmaf(__bfloat162float(a[k]), __bfloat162float(b[k]), sum);
  C[(size_t)row * N + col] = __float2bfloat16(sum);
}
