// A race on global memory, for the simulator to find: two threads per element of C, each
// summing half of K; thread z = 0 stores its half, thread z = 1 adds its half to what the first
// stored. `halves` has no barrier between the store and the add; `halves_synced` has one.
//
//   harness run --workload gemm --kernel examples/gemm_halves_race.cu:halves,block=16x16x2,grid=tile:16x16
//
// Without a GPU the row runs in the simulator, which fails it naming both threads, whichever
// order its schedule ran them in (so whether or not the sums came out right).
template <bool SYNCED>
__device__ void sum_halves(const float *A, const float *B, float *C, int M, int N, int K) {
  int r = blockIdx.y * 16 + threadIdx.y, c = blockIdx.x * 16 + threadIdx.x;
  bool in = r < M && c < N;
  int k0 = threadIdx.z * (K / 2), k1 = threadIdx.z ? K : K / 2;
  float acc = 0;
  for (int k = k0; in && k < k1; ++k) acc += A[r * K + k] * B[k * N + c];
  if (in && threadIdx.z == 0) C[r * N + c] = acc;
  if (SYNCED) __syncthreads();  // the store above is seen by the add below
  if (in && threadIdx.z == 1) C[r * N + c] += acc;
}

__global__ void halves(const float *A, const float *B, float *C, int M, int N, int K) {
  sum_halves<false>(A, B, C, M, N, K);
}

__global__ void halves_synced(const float *A, const float *B, float *C, int M, int N, int K) {
  sum_halves<true>(A, B, C, M, N, K);
}
