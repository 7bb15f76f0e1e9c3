// 19_mma_128x256.cu: rung 16 with 128x256 block tiles of 8 warps, a 4-stage ring of BK = 32,
// and the fragment double buffering carried across the k-tile boundary.
//
// What changed since 16 and why it should be faster:
// - 128x256 block tiles, 8 warps of 64x64 (2 down, 4 across). A warp's work per k16 step is
//   16's (4 A and 4 B ldmatrix.x4 for 32 mma.sync), but a block now loads (128 + 256) x BK
//   elements for 2 x 128 x 256 x BK FLOPs: 85 FLOPs per byte of A and B moved from L2 into
//   shared memory, against 64 at 128x128. On an H100 (one block of 8 warps per SM, as 16's
//   two blocks of 4) the SMs together ask the L2 for a quarter fewer bytes per FLOP.
// - A 4-stage ring of BK = 32 (16: 3 of 64): 4 x 24 KB = 96 KB of dynamic shared memory, so
//   three k-tiles are in flight while one is multiplied, and the ring fits an A100 (163 KB per
//   block) as well as an H100. BK = 32 gives A rows of 64 B: rung 15's swizzle,
//   chunk ^ ((row >> 1) & 3); B rows are 512 B: chunk ^ (row & 7).
// - One barrier per k-tile, placed after the first k16 step's mma.sync are issued (16 waits
//   at the top of the tile with the tensor cores idle): the warps meet while their HMMA run,
//   then the last k16 step's mma.sync overlap the ldmatrix of the next tile's first step.
//   In the SASS (sm_90) a warp's k-tile is 64 HMMA.16816.F32 with one BAR.SYNC after the
//   first 33 of them, 8 LDSM and 8 LDSM.MT (x4), and 6 LDGSTS.
// Tails as in 14..16: zero-filled 16-byte copies for row, column and K tails, guarded 2-byte
// loads when K or N is not a multiple of 8 (or a base is not 16-byte aligned), guarded stores
// of C. Every thread reaches every barrier; ldmatrix and mma.sync run on all 32 lanes.
// The main loop takes a range of k-tiles, so rung 20 (split-K) reuses this file as it stands.

#include <cuda_fp16.h>
#include "lab/ptx.h"

#define BM 128
#define BN 256
#define BK 32
#define STAGES 4
#define WARPS_N 4  // warps across the block tile (2 down)
#define NTHREADS 256
#define KSTEPS (BK / 16)
#define A_STAGE (BM * BK)  // 16-bit elements
#define B_STAGE (BK * BN)
static_assert(KSTEPS >= 2, "the barrier sits after the second-to-last k16 step of a tile");

// Offsets, in elements, of the 16-byte chunk holding (r, c) (c a multiple of 8). A rows are
// 64 B: two share a 128-byte line, so the XOR takes the line index (r >> 1); B rows are 512 B.
// Eight consecutive rows of one logical chunk land in eight distinct 16-byte bank groups.
__device__ __forceinline__ int swz_a(int r, int c) { return r * BK + (((c >> 3) ^ ((r >> 1) & 3)) << 3); }
__device__ __forceinline__ int swz_b(int r, int c) { return r * BN + (((c >> 3) ^ (r & 7)) << 3); }

// Issues the copies of the k-tile at k0 into one stage: 2 chunks of A and 4 of B per thread.
__device__ __forceinline__ void load_tile(unsigned short *as, unsigned short *bs,
                                          const unsigned short *__restrict__ A,
                                          const unsigned short *__restrict__ B, int M, int N, int K,
                                          int row0, int col0, int k0, bool a_vec, bool b_vec) {
    const int tid = threadIdx.x;
#pragma unroll
    for (int i = 0; i < BM * BK / 8 / NTHREADS; ++i) {
        const int idx = tid + i * NTHREADS;
        const int r = idx / (BK / 8), c = (idx % (BK / 8)) * 8;
        const int gr = row0 + r, gk = k0 + c;
        unsigned short *dst = as + swz_a(r, c);
        if (a_vec) {
            const int bytes = gr < M ? 2 * max(0, min(8, K - gk)) : 0;
            ptx::cp_async_cg_zfill(ptx::smem_addr(dst), bytes > 0 ? A + (size_t)gr * K + gk : A, bytes);
        } else {
#pragma unroll
            for (int e = 0; e < 8; ++e) dst[e] = (gr < M && gk + e < K) ? A[(size_t)gr * K + gk + e] : 0;
        }
    }
#pragma unroll
    for (int i = 0; i < BK * BN / 8 / NTHREADS; ++i) {
        const int idx = tid + i * NTHREADS;
        const int r = idx / (BN / 8), c = (idx % (BN / 8)) * 8;
        const int gk = k0 + r, gc = col0 + c;
        unsigned short *dst = bs + swz_b(r, c);
        if (b_vec) {
            const int bytes = gk < K ? 2 * max(0, min(8, N - gc)) : 0;
            ptx::cp_async_cg_zfill(ptx::smem_addr(dst), bytes > 0 ? B + (size_t)gk * N + gc : B, bytes);
        } else {
#pragma unroll
            for (int e = 0; e < 8; ++e) dst[e] = (gk < K && gc + e < N) ? B[(size_t)gk * N + gc + e] : 0;
        }
    }
}

// The fragments of one k16 step of this warp's 64x64 tile: 4 A tiles (ldmatrix x4) and 8 B
// tiles (4 ldmatrix x4.trans, two n8 tiles each).
struct Frags {
    unsigned a[4][4], b[8][2];
};

__device__ __forceinline__ void load_frags(Frags &f, const unsigned short *as, const unsigned short *bs, int wm,
                                           int wn, int kk, int lane) {
    const int lrow = lane % 16, lchunk = (lane / 16) * 8;
#pragma unroll
    for (int i = 0; i < 4; ++i) ptx::ldmatrix_x4(f.a[i], ptx::smem_addr(as + swz_a(wm * 64 + i * 16 + lrow, kk + lchunk)));
#pragma unroll
    for (int p = 0; p < 4; ++p) {
        unsigned r[4];
        ptx::ldmatrix_x4_trans(r, ptx::smem_addr(bs + swz_b(kk + lrow, wn * 64 + p * 16 + lchunk)));
        f.b[2 * p][0] = r[0], f.b[2 * p][1] = r[1];
        f.b[2 * p + 1][0] = r[2], f.b[2 * p + 1][1] = r[3];
    }
}

__device__ __forceinline__ void mma_step(float (&acc)[4][8][4], const Frags &f) {
#pragma unroll
    for (int i = 0; i < 4; ++i)
#pragma unroll
        for (int j = 0; j < 8; ++j) ptx::mma_m16n8k16_f16(acc[i][j], f.a[i], f.b[j], acc[i][j]);
}

// acc = the product of this block's 128x256 tile of C over k-tiles [kt0, kt1) (kt1 > kt0),
// through the ring in `smem`.
__device__ __forceinline__ void mma_128x256(float (&acc)[4][8][4], const unsigned short *__restrict__ A,
                                            const unsigned short *__restrict__ B, int M, int N, int K, int kt0,
                                            int kt1, unsigned short *smem) {
    unsigned short *As = smem;
    unsigned short *Bs = smem + STAGES * A_STAGE;
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    const int wm = warp / WARPS_N, wn = warp % WARPS_N;
    const int row0 = blockIdx.y * BM, col0 = blockIdx.x * BN;
    const bool a_vec = K % 8 == 0 && (size_t)A % 16 == 0;
    const bool b_vec = N % 8 == 0 && (size_t)B % 16 == 0;
    const int n = kt1 - kt0;

#pragma unroll
    for (int i = 0; i < 4; ++i)
#pragma unroll
        for (int j = 0; j < 8; ++j)
#pragma unroll
            for (int e = 0; e < 4; ++e) acc[i][j][e] = 0.0f;

#pragma unroll
    for (int s = 0; s < STAGES - 1; ++s) {
        if (s < n)
            load_tile(As + s * A_STAGE, Bs + s * B_STAGE, A, B, M, N, K, row0, col0, (kt0 + s) * BK, a_vec, b_vec);
        ptx::cp_async_commit();
    }
    ptx::cp_async_wait_group<STAGES - 2>();
    __syncthreads();  // tile 0 visible to all

    Frags f[2];
    load_frags(f[0], As, Bs, wm, wn, 0, lane);
    for (int t = 0; t < n; ++t) {
        // Refill the stage tile t - 1 used: every warp issued its last ldmatrix from it before
        // the barrier of iteration t - 1. One commit per iteration, empty or not, so the wait
        // below always leaves STAGES - 2 groups pending.
        const int next = t + STAGES - 1;
        if (next < n)
            load_tile(As + (next % STAGES) * A_STAGE, Bs + (next % STAGES) * B_STAGE, A, B, M, N, K, row0, col0,
                      (kt0 + next) * BK, a_vec, b_vec);
        ptx::cp_async_commit();

        const unsigned short *as = As + (t % STAGES) * A_STAGE;
        const unsigned short *bs = Bs + (t % STAGES) * B_STAGE;
#pragma unroll
        for (int s = 0; s < KSTEPS; ++s) {
            // Fragments of the next k16 step (the next tile's first one after the barrier)
            // into the other buffer, then this step's mma.sync.
            if (s + 1 < KSTEPS)
                load_frags(f[(s + 1) % 2], as, bs, wm, wn, (s + 1) * 16, lane);
            else if (t + 1 < n)
                load_frags(f[(s + 1) % 2], As + ((t + 1) % STAGES) * A_STAGE, Bs + ((t + 1) % STAGES) * B_STAGE,
                           wm, wn, 0, lane);
            mma_step(acc, f[s % 2]);
            if (s == KSTEPS - 2) {
                // Tile t + 1 has landed for this thread, then for all; and every warp has
                // issued all of tile t's ldmatrix (its last step's are in f already).
                ptx::cp_async_wait_group<STAGES - 2>();
                __syncthreads();
            }
        }
    }
    ptx::cp_async_wait_all();  // only empty groups remain; nothing may land after exit
}

// C straight from the accumulators: lane (g, t) holds rows g and g + 8, columns 2t, 2t + 1 of
// each m16n8 tile; pairs go out as float2 when N is even and C 8-byte aligned.
__device__ __forceinline__ void store_128x256(const float (&acc)[4][8][4], float *__restrict__ C, int M, int N) {
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    const int wm = warp / WARPS_N, wn = warp % WARPS_N;
    const int row0 = blockIdx.y * BM, col0 = blockIdx.x * BN;
    const int g = lane / 4, t = lane % 4;
    const bool pairs = N % 2 == 0 && (size_t)C % 8 == 0;
#pragma unroll
    for (int i = 0; i < 4; ++i)
#pragma unroll
        for (int j = 0; j < 8; ++j)
#pragma unroll
            for (int h = 0; h < 2; ++h) {
                const int r = row0 + wm * 64 + i * 16 + g + 8 * h;
                const int c = col0 + wn * 64 + j * 8 + 2 * t;
                if (r >= M || c >= N) continue;
                float *dst = C + (size_t)r * N + c;
                if (pairs) {
                    *reinterpret_cast<float2 *>(dst) = make_float2(acc[i][j][2 * h], acc[i][j][2 * h + 1]);
                } else {
                    dst[0] = acc[i][j][2 * h];
                    if (c + 1 < N) dst[1] = acc[i][j][2 * h + 1];
                }
            }
}

extern __shared__ __align__(128) unsigned short gemm_smem[];

extern "C" __global__ void __launch_bounds__(NTHREADS)
    gemm_mma_128x256(const __half *__restrict__ A, const __half *__restrict__ B, float *__restrict__ C, int M,
                     int N, int K) {
    float acc[4][8][4];
    mma_128x256(acc, reinterpret_cast<const unsigned short *>(A), reinterpret_cast<const unsigned short *>(B), M,
                N, K, 0, (K + BK - 1) / BK, gemm_smem);
    store_128x256(acc, C, M, N);
}
