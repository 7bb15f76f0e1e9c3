// An FP32 GEMM with K split across the grid's z dimension, the slices of each output tile
// adding into C one after the other in slice order: CUTLASS's serial split-K, whose blocks
// take turns through a semaphore per tile. Slice z waits until the tile's semaphore reads z
// (thread 0 polls it with ld.global.acquire.gpu, sleeping between tries, then a barrier
// hands the turn to the block), adds its partial sums into C (slice 0 stores them), then
// passes the turn on with st.global.release.gpu after a barrier; the last slice sets the
// semaphore back to 0 for the next launch. The sum is deterministic: always slice 0 first.
//
// The semaphores live in a workspace the kernel is given zero-filled, one int per tile; the
// lab passes one with `zeros(BYTES)` in an args= list:
//
//   harness run --device sim --workload gemm \
//     --kernel 'examples/sgemm_splitk_serial.cu:sgemm_splitk_serial,block=16x16,grid=(cdiv(N,16),cdiv(M,16),3),args=(A,B,C,M,N,K,zeros(4*cdiv(M,16)*cdiv(N,16)))'
//
// A slice waits only for the slices before it in the grid's linear order (x fastest, then y,
// then z), the order in which GPUs start blocks in practice (CUDA promises none), as CUTLASS's
// serial split-K relies on. The simulator runs blocks in shuffled order; a block whose thread
// only spins lets the simulator start others beside it until its turn comes.
#include <cuda_runtime.h>

#define TILE 16

__device__ __forceinline__ int load_acquire(const int *p) {
  int v;
  asm volatile("ld.global.acquire.gpu.b32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
  return v;
}

__device__ __forceinline__ void store_release(int *p, int v) {
  asm volatile("st.global.release.gpu.b32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
}

__global__ void sgemm_splitk_serial(const float *A, const float *B, float *C, int M, int N, int K,
                                    int *semaphores) {
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

  int *turn = semaphores + blockIdx.y * gridDim.x + blockIdx.x;
  const bool leader = tx == 0 && ty == 0;
  if (leader)
    while (load_acquire(turn) != z) __nanosleep(64);
  __syncthreads();
  if (row < M && col < N) C[row * N + col] = z == 0 ? acc : C[row * N + col] + acc;
  __syncthreads();
  if (leader) store_release(turn, z + 1 == splits ? 0 : z + 1);
}
