// 05_fused_warptile.cu: rung 04 with GEMM rung 07's warp tiling. What changed since 04 and why
// it should be faster:
//
// Rung 04's stores are conflict-free; its reads are not. Each thread owns a contiguous 8x8
// block of Y, so the 16 threads of a half-warp read float4s of Bs 8 floats (32 bytes) apart:
// a quarter-warp's eight 16-byte reads span 256 bytes, two of them in each group of 4 banks,
// and each such read takes twice its wavefronts. Here, as in GEMM rung 07
// (restrict-unroll/kernels/07_warptile.cu), the 8 warps tile the 128x128 block as 2 x 4 warp
// tiles of 64x32, and each thread holds a 2 x 2 grid of 4x4 sub-tiles 32 rows and 16 columns
// apart: a quarter-warp reads two consecutive float4s of As and four of Bs, shared by 4 and 2
// lanes, one bank group each, so the reads are conflict-free too.
// The loads, the padded transposed tiles and the fused epilogue (bias and activation on the
// accumulators, one store of Y) are rung 04's; the epilogue only follows the new layout.
// `harness explain linear-fused-warptile` shows the simulator's bank counts for both rungs.

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
#define PAD 4  // floats after each k row of a tile: moves the next row 4 banks on
#define LDA (BM + PAD)
#define LDB (BN + PAD)

__device__ __forceinline__ float activate(float x, int act) {
    if (act == 0) return fmaxf(x, 0.0f);
    if (act == 2) return x;
    const float c = 0.7978845608f;  // sqrt(2 / pi)
    return 0.5f * x * (1.0f + tanhf(c * (x + 0.044715f * x * x * x)));
}

extern "C" __global__ void linear_fused_warptile(const float *__restrict__ X, const float *__restrict__ W,
                                        const float *__restrict__ bias, float *__restrict__ Y,
                                        int M, int N, int K, int act) {
    __shared__ __align__(16) float As[BK * LDA];  // [BK][BM + PAD]: X tile, transposed
    __shared__ __align__(16) float Bs[BK * LDB];  // [BK][BN + PAD]: W tile, transposed

    const int tid = threadIdx.x;
    const int row0 = blockIdx.y * BM, col0 = blockIdx.x * BN;
    const int warp = tid / 32, lane = tid % 32;
    const int wrow = warp / (BN / WN), wcol = warp % (BN / WN);  // 2 x 4 warps
    const int trow = lane / (WSUBN / TN), tcol = lane % (WSUBN / TN);  // 8 x 4 lanes

    float acc[WMITER * TM][WNITER * TN];
#pragma unroll
    for (int i = 0; i < WMITER * TM; ++i)
#pragma unroll
        for (int j = 0; j < WNITER * TN; ++j) acc[i][j] = 0.0f;
    float regM[WMITER * TM], regN[WNITER * TN];

    for (int k0 = 0; k0 < K; k0 += BK) {
#pragma unroll
        for (int l = 0; l < (BM * BK) / NTHREADS; ++l) {
            const int idx = tid + l * NTHREADS;
            const int r = idx / BK, c = idx % BK;
            const int gr = row0 + r, gk = k0 + c;
            As[c * LDA + r] = (gr < M && gk < K) ? X[gr * K + gk] : 0.0f;
            const int gn = col0 + r;
            Bs[c * LDB + r] = (gn < N && gk < K) ? W[gn * K + gk] : 0.0f;
        }
        __syncthreads();  // tiles complete

#pragma unroll
        for (int k = 0; k < BK; ++k) {
#pragma unroll
            for (int wm = 0; wm < WMITER; ++wm) {
                const float4 v = *reinterpret_cast<const float4 *>(
                    &As[k * LDA + wrow * WM + wm * WSUBM + trow * TM]);
                regM[wm * TM + 0] = v.x; regM[wm * TM + 1] = v.y;
                regM[wm * TM + 2] = v.z; regM[wm * TM + 3] = v.w;
            }
#pragma unroll
            for (int wn = 0; wn < WNITER; ++wn) {
                const float4 v = *reinterpret_cast<const float4 *>(
                    &Bs[k * LDB + wcol * WN + wn * WSUBN + tcol * TN]);
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

    // The fused epilogue, in the warp-tile layout: bias and activation on the registers, one
    // store of Y.
    float b[WNITER * TN];
#pragma unroll
    for (int wn = 0; wn < WNITER; ++wn)
#pragma unroll
        for (int j = 0; j < TN; ++j) {
            const int c = col0 + wcol * WN + wn * WSUBN + tcol * TN + j;
            b[wn * TN + j] = c < N ? bias[c] : 0.0f;
        }
#pragma unroll
    for (int wm = 0; wm < WMITER; ++wm)
#pragma unroll
        for (int i = 0; i < TM; ++i) {
            const int r = row0 + wrow * WM + wm * WSUBM + trow * TM + i;
#pragma unroll
            for (int wn = 0; wn < WNITER; ++wn)
#pragma unroll
                for (int j = 0; j < TN; ++j) {
                    const int c = col0 + wcol * WN + wn * WSUBN + tcol * TN + j;
                    const int a = wn * TN + j;
                    if (r < M && c < N)
                        Y[r * N + c] = activate(acc[wm * TM + i][a] + b[a], act);
                }
        }
}
