// A sum whose blocks add their partial sums straight into the result with atomicAdd, as much
// host code does after a cudaMemset(y, 0, 4): one launch, no scratch, the order of the blocks'
// additions left to the hardware (so the last bits of y can differ from run to run). The lab
// starts the output at zero for it with output=zero; without it, y starts as NaN, the lab's
// poison, and every atomicAdd keeps it NaN:
//
//   harness run --workload reduce --sizes 7,70001,300001 --kernel 'examples/reduce_atomic.cu:reduce_atomic<256>,block=256,grid=(min(cdiv(N,4*256),512)),output=zero'
//
// Each thread sums float4s at a grid stride (the tail of N % 4 elements one each), the block
// sums its threads by warp shuffles and shared memory, and thread 0 adds the block's sum to y.
#include <cuda_runtime.h>

template <int THREADS>
__global__ void __launch_bounds__(THREADS) reduce_atomic(const float *__restrict__ x, float *y, int n) {
  static_assert(THREADS % 32 == 0 && THREADS <= 1024, "whole warps, at most 32 of them");
  __shared__ float warps[THREADS / 32];
  const unsigned first = blockIdx.x * THREADS + threadIdx.x, stride = gridDim.x * THREADS;
  const unsigned quads = (unsigned)n / 4;
  float v = 0.0f;
  for (unsigned i = first; i < quads; i += stride) {
    const float4 q = reinterpret_cast<const float4 *>(x)[i];
    v += (q.x + q.y) + (q.z + q.w);
  }
  if (4 * quads + first < (unsigned)n) v += x[4 * quads + first];
  for (int o = 16; o > 0; o /= 2) v += __shfl_xor_sync(0xffffffffu, v, o);
  if (threadIdx.x % 32 == 0) warps[threadIdx.x / 32] = v;
  __syncthreads();
  if (threadIdx.x < 32) {
    v = threadIdx.x < THREADS / 32 ? warps[threadIdx.x] : 0.0f;
    for (int o = 16; o > 0; o /= 2) v += __shfl_xor_sync(0xffffffffu, v, o);
    if (threadIdx.x == 0) atomicAdd(y, v);
  }
}
