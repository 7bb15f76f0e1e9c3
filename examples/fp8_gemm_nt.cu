// An FP8 GEMM in the "NT" layout of language-model code: C[M,N] = A[M,K] B[N,K]^T with A and B
// in E4M3 (`__nv_fp8_e4m3`, one byte each), the sum kept in FP32 and C written in BF16, as FP8
// inference kernels write their outputs. The lab rounds the random inputs to E4M3 before the
// launch and checks C against a reference of those rounded values: against the unrounded ones
// the error would be about 5%, rounding alone.
//
//   harness run --workload gemm --kernel 'examples/fp8_gemm_nt.cu:fp8_gemm_nt,dtype=e4m3,C:bf16,b=col,block=16x16,grid=tile:16x16'
//
// One thread per element of C; both operands are read along K, four elements at a time as
// __nv_fp8x4_e4m3 (converted to a float4) when K is a multiple of 4, so that every row starts
// on a 4-byte boundary.
#include <cuda_bf16.h>
#include <cuda_fp8.h>

__global__ void fp8_gemm_nt(const __nv_fp8_e4m3 *__restrict__ A,
                            const __nv_fp8_e4m3 *__restrict__ B, __nv_bfloat16 *__restrict__ C,
                            int M, int N, int K) {
  const int row = blockIdx.y * blockDim.y + threadIdx.y;
  const int col = blockIdx.x * blockDim.x + threadIdx.x;
  if (row >= M || col >= N)
    return;
  const __nv_fp8_e4m3 *a = A + (size_t)row * K;
  const __nv_fp8_e4m3 *b = B + (size_t)col * K;
  float sum = 0.0f;
  int k = 0;
  if (K % 4 == 0) {
    const __nv_fp8x4_e4m3 *a4 = reinterpret_cast<const __nv_fp8x4_e4m3 *>(a);
    const __nv_fp8x4_e4m3 *b4 = reinterpret_cast<const __nv_fp8x4_e4m3 *>(b);
#pragma unroll 4
    for (; k < K / 4; ++k) {
      const float4 x = static_cast<float4>(a4[k]), y = static_cast<float4>(b4[k]);
      sum = fmaf(x.x, y.x, sum);
      sum = fmaf(x.y, y.y, sum);
      sum = fmaf(x.z, y.z, sum);
      sum = fmaf(x.w, y.w, sum);
    }
    k = K;
  }
  for (; k < K; ++k)
    sum = fmaf(static_cast<float>(a[k]), static_cast<float>(b[k]), sum);
  C[(size_t)row * N + col] = __float2bfloat16(sum);
}
