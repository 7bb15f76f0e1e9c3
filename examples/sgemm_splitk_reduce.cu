// An FP32 GEMM split along K in two launches, as CUTLASS's parallel split-K runs it: the
// first kernel writes each K slice's partial product of a tile into a workspace, one M x N
// plane per slice; the second adds the planes into C, in slice order, so the sum is the same
// on every run. The host code allocates the workspace and launches the two kernels one after
// the other on one stream:
//
//   harness run --device sim --workload gemm --sizes 100x37x129,64x64x64 \
//     --kernel 'examples/sgemm_splitk_reduce.cu:sgemm_splitk_partial,block=16x16,grid=(cdiv(N,16),cdiv(M,16),3),args=(A,B,M,N,K,scratch(P,4*3*M*N)),then=splitk_reduce,block=256,grid=(cdiv(M*N,256)),args=(P,C,M*N,3)'
//
// `scratch(P, BYTES)` is the workspace: named P, so that the second launch's list can pass it
// again, and filled with NaN before each run, as cudaMalloc leaves memory holding whatever
// was there. A slice that stored no partial (more slices than k-tiles) would leave NaN in its
// plane for the reduction to read; this one stores zeros there instead.
#include <cuda_runtime.h>

#define TILE 16

__global__ void sgemm_splitk_partial(const float *A, const float *B, int M, int N, int K,
                                     float *partials) {
  __shared__ float As[TILE][TILE];
  __shared__ float Bs[TILE][TILE];
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int row = blockIdx.y * TILE + ty, col = blockIdx.x * TILE + tx;
  const int splits = gridDim.z, z = blockIdx.z;
  // Slice z multiplies the k-tiles [z * T / splits, (z + 1) * T / splits) of T.
  const int tiles = (K + TILE - 1) / TILE;
  const int t0 = z * tiles / splits, t1 = (z + 1) * tiles / splits;
  float acc = 0.f;
  for (int t = t0; t < t1; ++t) {
    const int ka = t * TILE + tx, kb = t * TILE + ty;
    As[ty][tx] = row < M && ka < K ? A[row * K + ka] : 0.f;
    Bs[ty][tx] = kb < K && col < N ? B[kb * N + col] : 0.f;
    __syncthreads();
    for (int k = 0; k < TILE; ++k) acc += As[ty][k] * Bs[k][tx];
    __syncthreads();
  }
  if (row < M && col < N) partials[(size_t)z * M * N + row * N + col] = acc;
}

// C[i] = the sum of the splits' planes at i, one thread per element of C.
__global__ void splitk_reduce(const float *partials, float *C, int elements, int splits) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= elements) return;
  float sum = 0.f;
  for (int z = 0; z < splits; ++z) sum += partials[(size_t)z * elements + i];
  C[i] = sum;
}
