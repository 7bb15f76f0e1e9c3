// 04_regblock_1d.cu: 1D register blocking. What changed since 03 and why it should be faster:
//
// In rung 03 every FMA needs two shared-memory loads (As[ty][k], Bs[k][tx]): the kernel is
// bound by shared-memory bandwidth, not arithmetic. Here a block of 512 threads computes a
// 64x64 tile of C and each thread owns TM = 8 outputs of one column. Per k it loads ONE value
// of B into a register and reuses it for its 8 outputs, reading 8 values of A that are the
// same for every thread of the warp (broadcasts): 9 shared values feed 8 FMAs instead of 16.
// In the sm_90 SASS it is fewer instructions still: a thread's 8 values of A for one row lie
// along k, so ptxas merges them across the unrolled k loop into LDS.128, and a K step is 64
// FFMA, 16 LDS.128 (A) and 8 LDS (B): 3 shared loads per 8 FFMA (rung 03: 5 per 4).
// The K step shrinks to BK = 8 so each thread loads exactly one element of each tile.
// Tails: out-of-range elements load as 0 and only in-range outputs are stored, so any M, N, K
// works. No thread returns early: all 512 reach both barriers of every step.

#define BM 64
#define BN 64
#define BK 8
#define TM 8  // outputs per thread, down a column; BM * BN / TM = 512 threads

extern "C" __global__ void gemm_regblock_1d(const float *__restrict__ A,
                                            const float *__restrict__ B,
                                            float *__restrict__ C, int M, int N, int K) {
    __shared__ float As[BM * BK];  // [BM][BK]
    __shared__ float Bs[BK * BN];  // [BK][BN]

    const int tid = threadIdx.x;
    const int row0 = blockIdx.y * BM, col0 = blockIdx.x * BN;
    // This thread's outputs: rows trow*TM .. trow*TM+TM-1 of the tile, column tcol.
    const int tcol = tid % BN, trow = tid / BN;
    // Load assignment: one element of each tile per thread, consecutive tid along a row.
    const int a_r = tid / BK, a_c = tid % BK;
    const int b_r = tid / BN, b_c = tid % BN;

    float acc[TM];
#pragma unroll
    for (int i = 0; i < TM; ++i) acc[i] = 0.0f;

    for (int k0 = 0; k0 < K; k0 += BK) {
        const int ar = row0 + a_r, ak = k0 + a_c;
        As[a_r * BK + a_c] = (ar < M && ak < K) ? A[ar * K + ak] : 0.0f;
        const int bk = k0 + b_r, bc = col0 + b_c;
        Bs[b_r * BN + b_c] = (bk < K && bc < N) ? B[bk * N + bc] : 0.0f;
        __syncthreads();  // tiles complete

#pragma unroll
        for (int k = 0; k < BK; ++k) {
            const float b = Bs[k * BN + tcol];  // one load, reused TM times
#pragma unroll
            for (int i = 0; i < TM; ++i) acc[i] += As[(trow * TM + i) * BK + k] * b;
        }
        __syncthreads();  // reads done before the next tiles overwrite them
    }

    const int c = col0 + tcol;
#pragma unroll
    for (int i = 0; i < TM; ++i) {
        const int r = row0 + trow * TM + i;
        if (r < M && c < N) C[r * N + c] = acc[i];
    }
}
