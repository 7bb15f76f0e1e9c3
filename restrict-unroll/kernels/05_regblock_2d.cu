// 05_regblock_2d.cu: 2D register blocking. What changed since 04 and why it should be faster:
//
// Each thread now owns an 8x8 (TM x TN) square of outputs instead of an 8x1 column. Per k it
// loads 8 values of A and 8 of B into registers (regM, regN) and does their 64-FMA outer
// product: 16 shared values feed 64 FMAs (04: 9 feed 8), so the arithmetic finally dominates.
// In instructions: 4 LDS.128 per 64 FFMA here, 3 shared loads per 8 FFMA in 04 (see below).
// A block of 256 threads covers a 128x128 tile of C (BK = 8), which also halves global loads
// per output compared with 04's 64x64 tile. Each thread loads 4 elements of each tile.
// Registers: 64 accumulators + 16 operands. Left to itself ptxas takes 128 a thread on sm_80
// but 129 on sm_90, where the 129th halves occupancy (one block of 256 per SM, 8 of 64 warps).
// __launch_bounds__(256, 2) asks for two blocks per SM, so at most 128 registers everywhere;
// ptxas then spills 12 bytes (three values stored once before the K loop, reloaded by 3 LDL
// per K step, next to 512 FFMA and 32 LDS.128): 2 blocks per SM on every GPU for a few L1
// hits. It also keeps 05 -> 06 a comparison of memory access alone, as 06 gets 127 registers.
// What the compiler already does here (the sm_90 SASS, `harness inspect --sass`): the k loop
// is unrolled and every shared load is already 128-bit. A thread's A values of one row are 8
// consecutive floats along k and its B values of one k are 8 consecutive floats, so ptxas
// merges them into 32 LDS.128 per K step (4 per k). Global memory stays scalar: 8 read-only
// LDG.E.CONSTANT per K step and 64 STG for C; rung 06 changes those.
// Tails: zero-filled loads and guarded stores, as before; every thread reaches every barrier.

#define BM 128
#define BN 128
#define BK 8
#define TM 8
#define TN 8
#define NTHREADS 256  // (BM / TM) * (BN / TN)

extern "C" __global__ void __launch_bounds__(NTHREADS, 2)
    gemm_regblock_2d(const float *__restrict__ A, const float *__restrict__ B,
                     float *__restrict__ C, int M, int N, int K) {
    __shared__ float As[BM * BK];  // [BM][BK]
    __shared__ float Bs[BK * BN];  // [BK][BN]

    const int tid = threadIdx.x;
    const int row0 = blockIdx.y * BM, col0 = blockIdx.x * BN;
    const int trow = tid / (BN / TN), tcol = tid % (BN / TN);  // 16 x 16 threads

    float acc[TM][TN];
#pragma unroll
    for (int i = 0; i < TM; ++i)
#pragma unroll
        for (int j = 0; j < TN; ++j) acc[i][j] = 0.0f;
    float regM[TM], regN[TN];

    for (int k0 = 0; k0 < K; k0 += BK) {
#pragma unroll
        for (int l = 0; l < (BM * BK) / NTHREADS; ++l) {
            const int idx = tid + l * NTHREADS;
            const int r = idx / BK, c = idx % BK;
            const int gr = row0 + r, gk = k0 + c;
            As[idx] = (gr < M && gk < K) ? A[gr * K + gk] : 0.0f;
        }
#pragma unroll
        for (int l = 0; l < (BK * BN) / NTHREADS; ++l) {
            const int idx = tid + l * NTHREADS;
            const int r = idx / BN, c = idx % BN;
            const int gk = k0 + r, gc = col0 + c;
            Bs[idx] = (gk < K && gc < N) ? B[gk * N + gc] : 0.0f;
        }
        __syncthreads();  // tiles complete

#pragma unroll
        for (int k = 0; k < BK; ++k) {
#pragma unroll
            for (int i = 0; i < TM; ++i) regM[i] = As[(trow * TM + i) * BK + k];
#pragma unroll
            for (int j = 0; j < TN; ++j) regN[j] = Bs[k * BN + tcol * TN + j];
#pragma unroll
            for (int i = 0; i < TM; ++i)
#pragma unroll
                for (int j = 0; j < TN; ++j) acc[i][j] += regM[i] * regN[j];
        }
        __syncthreads();  // reads done before the next tiles overwrite them
    }

#pragma unroll
    for (int i = 0; i < TM; ++i) {
        const int r = row0 + trow * TM + i;
#pragma unroll
        for (int j = 0; j < TN; ++j) {
            const int c = col0 + tcol * TN + j;
            if (r < M && c < N) C[r * N + c] = acc[i][j];
        }
    }
}
