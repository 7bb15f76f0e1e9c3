// 08_double_buffer.cu: double buffering (siboehm's kernel 11). What changed since 07 and why
// it should be faster:
//
// Rung 07 loads a tile, waits at a barrier until the whole block has stored it, multiplies,
// and waits at a second barrier before the next tile may overwrite it: while a block loads,
// its FMA pipes idle, and while it multiplies, nothing is in flight from global memory. Here
// shared memory holds two A and two B tiles. Each thread issues the global loads of tile
// t + 1 into registers first, multiplies tile t from one buffer while those loads are in
// flight, then stores the registers into the other buffer: the load latency hides behind
// BK x 64 FMAs per thread, and one barrier per tile replaces two (the buffer written during
// tile t was last read during tile t - 1, before the previous barrier). Costs: twice the
// shared memory (16 KB) and registers for the tile in flight (two float4s). Without any
// __launch_bounds__, `harness inspect` of this file shows 151 registers on sm_90, 24 more than
// 07's 127 and over the 128 that two 256-thread blocks per SM allow (129 on sm_80);
// __launch_bounds__(256, 2) holds it to 123 (sm_90) and 127 (sm_80) without spilling, keeping
// 07's occupancy.
// The warp tiling, the transposed A tile, the float4 constraint (K % 4 == 0, N % 4 == 0) and
// the tail handling are rung 07 unchanged. Every thread reaches every barrier.

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

extern "C" __global__ void __launch_bounds__(NTHREADS, 2)
    gemm_double_buffer(const float *__restrict__ A, const float *__restrict__ B,
                       float *__restrict__ C, int M, int N, int K) {
    __shared__ __align__(16) float As[2][BK * BM];  // two [BK][BM] tiles: transposed
    __shared__ __align__(16) float Bs[2][BK * BN];  // two [BK][BN] tiles

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

    // The tile at k0 from global memory into registers (zeros outside the matrix)...
    auto load = [&](int k0, float4 &a4, float4 &b4) {
        const int ar = row0 + a_r, ak = k0 + a_c;
        a4 = (ar < M && ak < K) ? *reinterpret_cast<const float4 *>(&A[ar * K + ak]) : zero;
        const int bk = k0 + b_r, bc = col0 + b_c;
        b4 = (bk < K && bc < N) ? *reinterpret_cast<const float4 *>(&B[bk * N + bc]) : zero;
    };
    // ... and from registers into buffer `buf` (A transposed).
    auto store = [&](int buf, const float4 &a4, const float4 &b4) {
        As[buf][(a_c + 0) * BM + a_r] = a4.x;
        As[buf][(a_c + 1) * BM + a_r] = a4.y;
        As[buf][(a_c + 2) * BM + a_r] = a4.z;
        As[buf][(a_c + 3) * BM + a_r] = a4.w;
        *reinterpret_cast<float4 *>(&Bs[buf][b_r * BN + b_c]) = b4;
    };

    float4 a4, b4;
    load(0, a4, b4);
    store(0, a4, b4);
    __syncthreads();  // tile 0 complete

    for (int k0 = 0, buf = 0; k0 < K; k0 += BK, buf ^= 1) {
        const bool more = k0 + BK < K;  // the same for every thread: no divergent barrier
        if (more) load(k0 + BK, a4, b4);  // in flight during the FMAs below

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
        if (more) store(buf ^ 1, a4, b4);
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
