// 02_tiled.cu: shared-memory tiling. What changed since 01_naive and why it should be faster (two
// ideas, so the row measures both together):
//
// 1. Coalescing. threadIdx.x now runs along a row of C, so a warp reads 32 consecutive floats
//    of B and writes 32 consecutive floats of C: one transaction instead of 32.
// 2. Reuse. A block of TILE x TILE threads computes a TILE x TILE tile of C. It walks K in
//    steps of TILE, each step staging one tile of A and one of B in shared memory (each
//    thread loads one element of each), then every thread reads TILE values of each from
//    shared memory. Global loads drop by a factor of TILE (32): 2K/TILE per output.
// Tails: elements outside A or B load as 0, which adds nothing to the sum, so any M, N, K
// works; only threads inside C store. Both barriers are reached by every thread.
// In the SASS (sm_90) ptxas has already unrolled the loop over the tile (TILE is a constant):
// 32 FFMA, the 32 As[ty][k] reads merged into 8 LDS.128, the Bs[k][tx] reads 32 scalar LDS.

#define TILE 32

extern "C" __global__ void gemm_tiled(const float *A, const float *B, float *C,
                                      int M, int N, int K) {
    __shared__ float As[TILE][TILE];
    __shared__ float Bs[TILE][TILE];

    const int tx = threadIdx.x, ty = threadIdx.y;
    const int row = blockIdx.y * TILE + ty;
    const int col = blockIdx.x * TILE + tx;

    float acc = 0.0f;
    for (int k0 = 0; k0 < K; k0 += TILE) {
        // Consecutive tx read consecutive addresses of both A and B: coalesced.
        As[ty][tx] = (row < M && k0 + tx < K) ? A[row * K + k0 + tx] : 0.0f;
        Bs[ty][tx] = (k0 + ty < K && col < N) ? B[(k0 + ty) * N + col] : 0.0f;
        __syncthreads();  // the tiles are complete before anyone reads them

        for (int k = 0; k < TILE; ++k) {
            // As[ty][k] is one address for the whole warp (a broadcast); Bs[k][tx] hits 32
            // different banks: no conflicts.
            acc += As[ty][k] * Bs[k][tx];
        }
        __syncthreads();  // everyone is done reading before the next tiles overwrite them
    }
    if (row < M && col < N) C[row * N + col] = acc;
}
