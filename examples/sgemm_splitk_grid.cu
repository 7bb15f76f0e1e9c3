// An FP32 GEMM with K split in SPLITS slices, in one cooperative launch: a fixed grid of
// blocks, all resident at once, first walks every (output tile, K slice) pair writing each
// tile's partial sums into its slice of a workspace, then meets at a grid-wide barrier
// (cooperative_groups' grid.sync()), then walks C adding the slices in slice order. One
// launch where split-K usually takes two (partials, then a reduction kernel), deterministic
// where atomics would not be.
//
// grid.sync() needs cudaLaunchCooperativeKernel, which refuses a grid that cannot be resident
// at once; the lab launches that way for `launch=cooperative`, and declines the row with the
// occupancy arithmetic when the grid does not fit:
//
//   harness run --device sim --workload gemm \
//     --kernel 'examples/sgemm_splitk_grid.cu:sgemm_splitk_grid,block=256,grid=2*SMS,launch=cooperative,args=(A,B,C,M,N,K,zeros(4*4*M*N))'
//
// SMS is the GPU's SM count: two blocks per SM, 264 on an H100's 132 SMs; the simulator
// counts 8 SMs, so 16 blocks there each walk several pairs.
#include <cooperative_groups.h>

namespace cg = cooperative_groups;

#define TILE 16
#define SPLITS 4

__global__ void sgemm_splitk_grid(const float *A, const float *B, float *C, int M, int N, int K,
                                  float *partials) {
  __shared__ float As[TILE][TILE];
  __shared__ float Bs[TILE][TILE];
  cg::grid_group grid = cg::this_grid();
  const int tx = threadIdx.x % TILE, ty = threadIdx.x / TILE;
  const int tiles_n = (N + TILE - 1) / TILE, tiles = tiles_n * ((M + TILE - 1) / TILE);
  const int slice = (K + SPLITS - 1) / SPLITS;
  const size_t mn = (size_t)M * N;
  // Phase 1: each block takes every gridDim.x-th (tile, slice) pair.
  for (int item = blockIdx.x; item < tiles * SPLITS; item += gridDim.x) {
    const int t = item / SPLITS, s = item % SPLITS;
    const int row = t / tiles_n * TILE + ty, col = t % tiles_n * TILE + tx;
    const int k_end = min(K, (s + 1) * slice);
    float acc = 0.0f;
    for (int k = s * slice; k < k_end; k += TILE) {
      As[ty][tx] = row < M && k + tx < k_end ? A[(size_t)row * K + k + tx] : 0.0f;
      Bs[ty][tx] = col < N && k + ty < k_end ? B[(size_t)(k + ty) * N + col] : 0.0f;
      __syncthreads();
      for (int i = 0; i < TILE; ++i) acc += As[ty][i] * Bs[i][tx];
      __syncthreads();
    }
    if (row < M && col < N) partials[s * mn + (size_t)row * N + col] = acc;
  }
  // Every partial is written, and visible to every block, before any is read.
  grid.sync();
  // Phase 2: the grid's threads walk C, each element's slices added in order.
  for (size_t i = grid.thread_rank(); i < mn; i += grid.size()) {
    float sum = 0.0f;
    for (int s = 0; s < SPLITS; ++s) sum += partials[s * mn + i];
    C[i] = sum;
  }
}
