// A row softmax whose host code sizes the block from the row: as many whole warps as a row of
// N elements needs, up to 1024 threads, so that a short row does not leave most of a block
// idle. The lab computes the same block for each shape from an expression:
//
//   harness run --workload softmax --sizes 3x5,37x130,2x1500 --kernel 'examples/softmax_rows.cu:softmax_rows,block=(min(cdiv(N,32)*32,1024)),grid=(M)'
//
// One block per row. Each thread strides over the row; the maximum and then the sum of the
// exponentials are reduced across the block, by shuffles within each warp and through shared
// memory across warps. The shuffles take all 32 lanes, so the block must be whole warps, which
// the host code's rounding guarantees.
#include <cuda_runtime.h>
#include <math.h>

// The maximum (or sum) of v over the block, in every thread. `part` holds one value per warp,
// and the result in part[32].
__device__ float block_reduce(float v, bool is_max, float *part) {
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, warps = blockDim.x / 32;
  for (int o = 16; o > 0; o /= 2) {
    const float w = __shfl_xor_sync(0xffffffff, v, o);
    v = is_max ? fmaxf(v, w) : v + w;
  }
  if (lane == 0) part[warp] = v;
  __syncthreads();
  if (warp == 0) {
    v = lane < warps ? part[lane] : (is_max ? -INFINITY : 0.0f);
    for (int o = 16; o > 0; o /= 2) {
      const float w = __shfl_xor_sync(0xffffffff, v, o);
      v = is_max ? fmaxf(v, w) : v + w;
    }
    if (lane == 0) part[32] = v;
  }
  __syncthreads();
  return part[32];
}

__global__ void softmax_rows(const float *X, float *Y, int M, int N) {
  __shared__ float part[33];
  const float *x = X + (size_t)blockIdx.x * N;
  float *y = Y + (size_t)blockIdx.x * N;
  float m = -INFINITY;
  for (int i = threadIdx.x; i < N; i += blockDim.x) m = fmaxf(m, x[i]);
  m = block_reduce(m, true, part);
  float s = 0.0f;
  for (int i = threadIdx.x; i < N; i += blockDim.x) s += expf(x[i] - m);
  s = block_reduce(s, false, part);
  for (int i = threadIdx.x; i < N; i += blockDim.x) y[i] = expf(x[i] - m) / s;
}

// Host code as a project has it: the lab never compiles this.
void softmax(const float *X, float *Y, int M, int N, cudaStream_t stream) {
  const int threads = min((N + 31) / 32 * 32, 1024);
  softmax_rows<<<M, threads, 0, stream>>>(X, Y, M, N);
}
