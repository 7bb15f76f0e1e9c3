// A layer normalization as the public kernel collections write it: one block per row, one
// thread per element, the mean and the variance each summed across the block (a warp's sum by
// shuffles, then the warps' sums through shared memory), and one scale `g` and one shift `b`
// for the whole tensor rather than a gamma and a beta per column. A block of NUM_THREADS
// threads covers a row of at most NUM_THREADS elements.
//
// The lab's layer normalization has gamma[N] and beta[N]; `input=gamma:1.5,input=beta:-0.25`
// fills them with the numbers the kernel is given, so that the reference applies the same:
//
//   harness run --device sim --workload layernorm --sizes 3x256,17x256 \
//     --kernel 'examples/layernorm_scalar_affine.cu:layer_norm_rows<256>,args=(X,Y,1.5f,-0.25f,M,N),input=gamma:1.5,input=beta:-0.25,block=256,grid=(M)'
#include <cuda_runtime.h>

#define WARP_SIZE 32

__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
  for (int lane_mask = WARP_SIZE / 2; lane_mask >= 1; lane_mask >>= 1)
    v += __shfl_xor_sync(0xffffffff, v, lane_mask);
  return v;
}

// The sum of `v` over the block's NUM_THREADS threads, returned to every thread.
template <int NUM_THREADS>
__device__ float block_sum(float v) {
  constexpr int WARPS = (NUM_THREADS + WARP_SIZE - 1) / WARP_SIZE;
  __shared__ float partial[WARPS];
  const int warp = threadIdx.x / WARP_SIZE, lane = threadIdx.x % WARP_SIZE;
  v = warp_sum(v);
  if (lane == 0) partial[warp] = v;
  __syncthreads();
  v = lane < WARPS ? partial[lane] : 0.f;
  v = warp_sum(v);
  // Every warp read `partial`; the next call may overwrite it only after that.
  __syncthreads();
  return v;
}

template <int NUM_THREADS = 256>
__global__ void layer_norm_rows(const float *x, float *y, float g, float b, int rows, int cols) {
  const int idx = blockIdx.x * cols + threadIdx.x;
  const bool inside = threadIdx.x < cols && blockIdx.x < rows;
  const float value = inside ? x[idx] : 0.f;
  const float mean = block_sum<NUM_THREADS>(value) / cols;
  const float centered = inside ? value - mean : 0.f;
  const float inv_std = rsqrtf(block_sum<NUM_THREADS>(centered * centered) / cols + 1e-5f);
  if (inside) y[idx] = centered * inv_std * g + b;
}
