// 09_tuned.cu: rung 08 with its tile shape as compile-time parameters. What changed since 08
// and why it should be faster:
//
// Rung 08's tile shape (128x128x8 blocks of 2x4 warps of 64x32, 256 threads) was picked for
// one GPU. The best shape depends on the GPU: its SM count against the number of blocks a
// size makes (wave quantization), its registers and shared memory per SM (occupancy), its
// ratio of FMA rate to shared-memory bandwidth (how large a per-thread tile must be). Here
// every tile parameter is an NVRTC define (`-D BM=64 ...`) with the 08 shape as default, the
// constraints between them are static asserts, and `harness tune` compiles, validates and
// times a grid of shapes on the GPU at hand and records the fastest per size. The code is
// 08's, generalized: each thread loads A_LOADS and B_LOADS float4s per tile instead of one,
// and the number of sub-tiles down a warp tile (WMITER) follows from the rest. Each thread
// computes WMITER x WNITER sub-tiles of TM x TN = 4x4 outputs (float4 reads of the tiles).

#ifndef BM
#define BM 128
#endif
#ifndef BN
#define BN 128
#endif
#ifndef BK
#define BK 8
#endif
#ifndef WM
#define WM 64  // warp tile rows
#endif
#ifndef WN
#define WN 32  // warp tile columns
#endif
#ifndef WNITER
#define WNITER 2  // sub-tiles per warp tile, across
#endif
#ifndef MINBLOCKS
#define MINBLOCKS 2  // __launch_bounds__ blocks per SM: caps registers at 64K / (threads x this)
#endif
#define TM 4
#define TN 4
#define NTHREADS ((BM / WM) * (BN / WN) * 32)
#define WMITER ((WM * WN) / (32 * TM * TN * WNITER))  // sub-tiles down: 32 lanes cover a sub-tile
#define WSUBM (WM / WMITER)
#define WSUBN (WN / WNITER)
#define A_LOADS ((BM * BK) / (4 * NTHREADS))  // float4 loads per thread per tile
#define B_LOADS ((BN * BK) / (4 * NTHREADS))

// The same constraints `TileConfig::check` applies before compiling (restrict-unroll/src/tuned.rs).
static_assert(BM % WM == 0 && BN % WN == 0, "warp tiles must divide the block tile");
static_assert(NTHREADS >= 64 && NTHREADS <= 512, "2 to 16 warps per block");
static_assert(WMITER >= 1 && (WM * WN) % (32 * TM * TN * WNITER) == 0,
              "a warp tile is a whole number of 32-lane sub-tiles");
static_assert(WM % WMITER == 0 && WN % WNITER == 0, "sub-tiles divide the warp tile");
static_assert(WSUBM % TM == 0 && WSUBN % TN == 0 && (WSUBM / TM) * (WSUBN / TN) == 32,
              "a sub-tile is 32 lanes of TM x TN outputs");
static_assert(BK % 4 == 0, "A tile rows are read as float4");
static_assert(A_LOADS >= 1 && (BM * BK) % (4 * NTHREADS) == 0, "A tile: whole float4s per thread");
static_assert(B_LOADS >= 1 && (BN * BK) % (4 * NTHREADS) == 0, "B tile: whole float4s per thread");
static_assert(NTHREADS % (BN / 4) == 0, "B tile rows: whole rows per pass");
static_assert(2 * BK * (BM + BN) * 4 <= 48 * 1024, "two buffers fit 48 KB of static shared memory");

extern "C" __global__ void __launch_bounds__(NTHREADS, MINBLOCKS)
    gemm_tuned(const float *__restrict__ A, const float *__restrict__ B, float *__restrict__ C,
               int M, int N, int K) {
    __shared__ __align__(16) float As[2][BK * BM];  // two [BK][BM] tiles: transposed
    __shared__ __align__(16) float Bs[2][BK * BN];  // two [BK][BN] tiles

    const int tid = threadIdx.x;
    const int row0 = blockIdx.y * BM, col0 = blockIdx.x * BN;
    const int warp = tid / 32, lane = tid % 32;
    const int wrow = warp / (BN / WN), wcol = warp % (BN / WN);
    const int trow = lane / (WSUBN / TN), tcol = lane % (WSUBN / TN);
    const int a_r = tid / (BK / 4), a_c = (tid % (BK / 4)) * 4;
    const int b_r = tid / (BN / 4), b_c = (tid % (BN / 4)) * 4;
    const int a_stride = NTHREADS / (BK / 4), b_stride = NTHREADS / (BN / 4);  // rows per pass

    float acc[WMITER * TM][WNITER * TN];
#pragma unroll
    for (int i = 0; i < WMITER * TM; ++i)
#pragma unroll
        for (int j = 0; j < WNITER * TN; ++j) acc[i][j] = 0.0f;
    float regM[WMITER * TM], regN[WNITER * TN];
    const float4 zero = make_float4(0.0f, 0.0f, 0.0f, 0.0f);

    // The tile at k0 from global memory into registers (zeros outside the matrix)...
    float4 a4[A_LOADS], b4[B_LOADS];
    auto load = [&](int k0) {
#pragma unroll
        for (int l = 0; l < A_LOADS; ++l) {
            const int ar = row0 + a_r + l * a_stride, ak = k0 + a_c;
            a4[l] = (ar < M && ak < K) ? *reinterpret_cast<const float4 *>(&A[ar * K + ak]) : zero;
        }
#pragma unroll
        for (int l = 0; l < B_LOADS; ++l) {
            const int bk = k0 + b_r + l * b_stride, bc = col0 + b_c;
            b4[l] = (bk < K && bc < N) ? *reinterpret_cast<const float4 *>(&B[bk * N + bc]) : zero;
        }
    };
    // ... and from registers into buffer `buf` (A transposed).
    auto store = [&](int buf) {
#pragma unroll
        for (int l = 0; l < A_LOADS; ++l) {
            const int r = a_r + l * a_stride;
            As[buf][(a_c + 0) * BM + r] = a4[l].x;
            As[buf][(a_c + 1) * BM + r] = a4[l].y;
            As[buf][(a_c + 2) * BM + r] = a4[l].z;
            As[buf][(a_c + 3) * BM + r] = a4[l].w;
        }
#pragma unroll
        for (int l = 0; l < B_LOADS; ++l)
            *reinterpret_cast<float4 *>(&Bs[buf][(b_r + l * b_stride) * BN + b_c]) = b4[l];
    };

    load(0);
    store(0);
    __syncthreads();  // tile 0 complete

    for (int k0 = 0, buf = 0; k0 < K; k0 += BK, buf ^= 1) {
        const bool more = k0 + BK < K;  // the same for every thread: no divergent barrier
        if (more) load(k0 + BK);  // in flight during the FMAs below

        const float *as = As[buf], *bs = Bs[buf];
#pragma unroll
        for (int k = 0; k < BK; ++k) {
#pragma unroll
            for (int wm = 0; wm < WMITER; ++wm) {
                const float4 v = *reinterpret_cast<const float4 *>(
                    &as[k * BM + wrow * WM + wm * WSUBM + trow * TM]);
                regM[wm * TM + 0] = v.x; regM[wm * TM + 1] = v.y;
                regM[wm * TM + 2] = v.z; regM[wm * TM + 3] = v.w;
            }
#pragma unroll
            for (int wn = 0; wn < WNITER; ++wn) {
                const float4 v = *reinterpret_cast<const float4 *>(
                    &bs[k * BN + wcol * WN + wn * WSUBN + tcol * TN]);
                regN[wn * TN + 0] = v.x; regN[wn * TN + 1] = v.y;
                regN[wn * TN + 2] = v.z; regN[wn * TN + 3] = v.w;
            }
#pragma unroll
            for (int i = 0; i < WMITER * TM; ++i)
#pragma unroll
                for (int j = 0; j < WNITER * TN; ++j) acc[i][j] += regM[i] * regN[j];
        }
        // The other buffer was last read during the previous tile, before the barrier that
        // ended it: safe to fill now. One barrier then publishes it and retires this one.
        if (more) store(buf ^ 1);
        __syncthreads();
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
