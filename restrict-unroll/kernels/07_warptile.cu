// 07_warptile.cu: warp tiling. What changed since 06 and why it should be faster:
//
// Rung 06 gives each thread a contiguous 8x8 block of C, so the 32 threads of a warp cover a
// 16-row x 128-column strip (2 x 16 threads): per k the warp reads 16 values of A and 128 of
// B, 144 floats of shared memory. Here the 8 warps of the block tile the 128x128 block as
// 2 x 4 warp tiles of 64x32, and inside its warp tile each thread holds a 2 x 2 grid of 4x4
// sub-tiles spaced 32 rows and 16 columns apart. Per k a warp now reads 64 values of A and
// 32 of B, 96 floats (each float4 shared by 4 or 8 lanes as a broadcast): the unit of work
// the hardware schedules, the warp, gets its own level of the tile hierarchy (block > warp >
// thread), which is also the shape tensor-core rungs (10, 11) compute in.
// What the SASS shows (sm_90): the same instruction mix as 06 (512 FFMA, 32 LDS.128, 2
// LDG.E.128 per K step, 16 STG.E.128, 127 registers). The change is only in the addresses a
// warp's lanes read, which decides shared-memory bank conflicts and broadcasts. The SASS
// cannot show that; the simulator's bank model (`harness explain gemm-warptile`) and ncu's
// bank-conflict metric (tools/gpu-check.sh) can: in 06 a quarter-warp's float4 reads of B
// start 32 bytes apart, two to a bank group, so half of each B read is a conflict; here its
// eight lanes read four consecutive float4s of B (two lanes share each) and two of A (four
// share each), a bank group each, and the LDS conflicts are gone.
// Loads, the transposed A tile, the float4 constraint (K % 4 == 0, N % 4 == 0) and the tail
// handling are rung 06 unchanged. Every thread reaches every barrier.

#define BM 128
#define BN 128
#define BK 8
#define NTHREADS 256
#define WM 64       // warp tile rows
#define WN 32       // warp tile columns; (BM / WM) * (BN / WN) = 8 warps
#define WMITER 2    // sub-tiles per warp tile, down
#define WNITER 2    // and across
#define WSUBM (WM / WMITER)  // 32: a sub-tile is 8 x 4 threads of 4x4 outputs
#define WSUBN (WN / WNITER)  // 16
#define TM 4
#define TN 4

extern "C" __global__ void gemm_warptile(const float *__restrict__ A,
                                         const float *__restrict__ B,
                                         float *__restrict__ C, int M, int N, int K) {
    __shared__ __align__(16) float As[BK * BM];  // [BK][BM]: transposed
    __shared__ __align__(16) float Bs[BK * BN];  // [BK][BN]

    const int tid = threadIdx.x;
    const int row0 = blockIdx.y * BM, col0 = blockIdx.x * BN;
    const int warp = tid / 32, lane = tid % 32;
    const int wrow = warp / (BN / WN), wcol = warp % (BN / WN);  // 2 x 4 warps
    const int trow = lane / (WSUBN / TN), tcol = lane % (WSUBN / TN);  // 8 x 4 lanes
    const int a_r = tid / (BK / 4), a_c = (tid % (BK / 4)) * 4;
    const int b_r = tid / (BN / 4), b_c = (tid % (BN / 4)) * 4;

    float acc[WMITER * TM][WNITER * TN];
#pragma unroll
    for (int i = 0; i < WMITER * TM; ++i)
#pragma unroll
        for (int j = 0; j < WNITER * TN; ++j) acc[i][j] = 0.0f;
    float regM[WMITER * TM], regN[WNITER * TN];
    const float4 zero = make_float4(0.0f, 0.0f, 0.0f, 0.0f);

    for (int k0 = 0; k0 < K; k0 += BK) {
        const int ar = row0 + a_r, ak = k0 + a_c;
        const float4 a4 = (ar < M && ak < K)
                              ? *reinterpret_cast<const float4 *>(&A[ar * K + ak])
                              : zero;
        As[(a_c + 0) * BM + a_r] = a4.x;
        As[(a_c + 1) * BM + a_r] = a4.y;
        As[(a_c + 2) * BM + a_r] = a4.z;
        As[(a_c + 3) * BM + a_r] = a4.w;
        const int bk = k0 + b_r, bc = col0 + b_c;
        *reinterpret_cast<float4 *>(&Bs[b_r * BN + b_c]) =
            (bk < K && bc < N) ? *reinterpret_cast<const float4 *>(&B[bk * N + bc]) : zero;
        __syncthreads();  // tiles complete

#pragma unroll
        for (int k = 0; k < BK; ++k) {
#pragma unroll
            for (int wm = 0; wm < WMITER; ++wm) {
                const float4 v = *reinterpret_cast<const float4 *>(
                    &As[k * BM + wrow * WM + wm * WSUBM + trow * TM]);
                regM[wm * TM + 0] = v.x; regM[wm * TM + 1] = v.y;
                regM[wm * TM + 2] = v.z; regM[wm * TM + 3] = v.w;
            }
#pragma unroll
            for (int wn = 0; wn < WNITER; ++wn) {
                const float4 v = *reinterpret_cast<const float4 *>(
                    &Bs[k * BN + wcol * WN + wn * WSUBN + tcol * TN]);
                regN[wn * TN + 0] = v.x; regN[wn * TN + 1] = v.y;
                regN[wn * TN + 2] = v.z; regN[wn * TN + 3] = v.w;
            }
#pragma unroll
            for (int i = 0; i < WMITER * TM; ++i)
#pragma unroll
                for (int j = 0; j < WNITER * TN; ++j) acc[i][j] += regM[i] * regN[j];
        }
        __syncthreads();  // reads done before the next tiles overwrite them
    }

#pragma unroll
    for (int wm = 0; wm < WMITER; ++wm)
#pragma unroll
        for (int i = 0; i < TM; ++i) {
            const int r = row0 + wrow * WM + wm * WSUBM + trow * TM + i;
#pragma unroll
            for (int wn = 0; wn < WNITER; ++wn) {
                const int c = col0 + wcol * WN + wn * WSUBN + tcol * TN;
                const float *a = acc[wm * TM + i] + wn * TN;
                if (r < M && c < N)
                    *reinterpret_cast<float4 *>(&C[r * N + c]) =
                        make_float4(a[0], a[1], a[2], a[3]);
            }
        }
}
