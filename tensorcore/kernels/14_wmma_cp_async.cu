// 14_wmma_cp_async.cu: WMMA FP16, 128x128 block tiles, 64x64 warp tiles, tiles streamed by
// 16-byte cp.async copies into a 4-stage shared-memory ring.
//
// What changed since 11 (WMMA FP16, 64x64 blocks, scalar staging) and why it should be faster:
// - Bigger tiles: a block of 4 warps computes 128x128 of C, each warp a 64x64 quarter as 4x4
//   m16n16k16 accumulators. Per k16 step a warp loads 4 A and 4 B fragments for 16 mma_sync
//   (11: 2 + 2 for 4), so shared-memory traffic per tensor-core instruction halves, and each
//   element loaded from global memory serves 128 instead of 64 outputs.
// - 16-byte copies: one cp.async moves 8 halves straight from global to shared memory, with no
//   register round trip and no per-element index arithmetic (11: one 2-byte load and store per
//   element, with its bounds test).
// - A 4-stage ring: tiles k+1..k+3 are in flight while tile k is multiplied, so the tensor cores
//   wait on global memory only when the whole ring drains, not once per tile (11 waited on
//   every tile behind a barrier).
// Tails: a 16-byte copy needs a 16-byte aligned source, i.e. K % 8 == 0 for A and N % 8 == 0
// for B. Aligned operands copy with cp.async zero-fill (src-size < 16 at the end of a row, 0
// past the last row or column); an unaligned operand falls back to guarded 2-byte loads into
// the same ring. The choice is uniform over the grid, so no warp diverges. Accumulators go
// through shared memory (reusing the ring) so only the in-range part of the tile is stored.
// Shared memory: 4 stages x (128x40 + 32x136) halves = 75776 B, dynamic (over the 48 KB static
// limit, opted in by the launcher); the 128x132 float epilogue tile (67584 B) reuses it.
// Padding (+8 halves per row) staggers WMMA's row reads across banks and keeps every fragment
// origin on the 32-byte boundary WMMA requires. Every thread reaches every barrier.

#include <mma.h>
#include <cuda_fp16.h>
#include "lab/ptx.h"
using namespace nvcuda;

#define BM 128
#define BN 128
#define BK 32
#define STAGES 4
#define NTHREADS 128
#define LDA (BK + 8)
#define LDB (BN + 8)
#define LDC (BN + 4)
#define A_STAGE (BM * LDA)
#define B_STAGE (BK * LDB)

// Issues the copies of the k-tile starting at k0 into stage buffers `as` (BM x BK) and `bs`
// (BK x BN). Each thread copies 4 chunks of 8 halves of A and 4 of B.
__device__ __forceinline__ void load_tile(__half *as, __half *bs, const __half *__restrict__ A,
                                          const __half *__restrict__ B, int M, int N, int K,
                                          int row0, int col0, int k0, bool a_vec, bool b_vec) {
    const int tid = threadIdx.x;
#pragma unroll
    for (int i = 0; i < BM * BK / 8 / NTHREADS; ++i) {
        const int idx = tid + i * NTHREADS;
        const int r = idx / (BK / 8), c = (idx % (BK / 8)) * 8;
        const int gr = row0 + r, gk = k0 + c;
        __half *dst = as + r * LDA + c;
        if (a_vec) {
            // Bytes still inside row gr (0 past the last row): the rest is zero-filled.
            const int bytes = gr < M ? 2 * max(0, min(8, K - gk)) : 0;
            const __half *src = bytes > 0 ? A + (size_t)gr * K + gk : A;
            ptx::cp_async_cg_zfill(ptx::smem_addr(dst), src, bytes);
        } else {
#pragma unroll
            for (int e = 0; e < 8; ++e)
                dst[e] = (gr < M && gk + e < K) ? A[(size_t)gr * K + gk + e] : __float2half(0.0f);
        }
    }
#pragma unroll
    for (int i = 0; i < BK * BN / 8 / NTHREADS; ++i) {
        const int idx = tid + i * NTHREADS;
        const int r = idx / (BN / 8), c = (idx % (BN / 8)) * 8;
        const int gk = k0 + r, gc = col0 + c;
        __half *dst = bs + r * LDB + c;
        if (b_vec) {
            const int bytes = gk < K ? 2 * max(0, min(8, N - gc)) : 0;
            const __half *src = bytes > 0 ? B + (size_t)gk * N + gc : B;
            ptx::cp_async_cg_zfill(ptx::smem_addr(dst), src, bytes);
        } else {
#pragma unroll
            for (int e = 0; e < 8; ++e)
                dst[e] = (gk < K && gc + e < N) ? B[(size_t)gk * N + gc + e] : __float2half(0.0f);
        }
    }
}

extern "C" __global__ void __launch_bounds__(NTHREADS)
    gemm_wmma_cp_async(const __half *__restrict__ A, const __half *__restrict__ B,
                       float *__restrict__ C, int M, int N, int K) {
    extern __shared__ __align__(128) unsigned char smem[];
    __half *As = reinterpret_cast<__half *>(smem);
    __half *Bs = As + STAGES * A_STAGE;
    float *Cs = reinterpret_cast<float *>(smem);  // the epilogue reuses the ring

    const int warp = threadIdx.x / 32;
    const int wm = warp / 2, wn = warp % 2;  // this warp's 64x64 quarter of the block tile
    const int row0 = blockIdx.y * BM, col0 = blockIdx.x * BN;
    // 16-byte copies need 16-byte aligned rows: the same answer for every thread of the grid.
    const bool a_vec = K % 8 == 0 && (size_t)A % 16 == 0;
    const bool b_vec = N % 8 == 0 && (size_t)B % 16 == 0;
    const int tiles = (K + BK - 1) / BK;

    wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc[4][4];
#pragma unroll
    for (int i = 0; i < 4; ++i)
#pragma unroll
        for (int j = 0; j < 4; ++j) wmma::fill_fragment(acc[i][j], 0.0f);

    // Prologue: the first STAGES - 1 tiles in flight, one commit group each (empty past the
    // end, so the group count, and with it the wait below, stays the same for every tile).
#pragma unroll
    for (int s = 0; s < STAGES - 1; ++s) {
        if (s < tiles)
            load_tile(As + s * A_STAGE, Bs + s * B_STAGE, A, B, M, N, K, row0, col0, s * BK, a_vec, b_vec);
        ptx::cp_async_commit();
    }

    for (int kt = 0; kt < tiles; ++kt) {
        ptx::cp_async_wait_group<STAGES - 2>();  // this thread's copies of tile kt have landed
        __syncthreads();  // everyone's have; and every warp is done with tile kt - 1's stage
        const int next = kt + STAGES - 1;  // refill the stage tile kt - 1 used
        if (next < tiles)
            load_tile(As + (next % STAGES) * A_STAGE, Bs + (next % STAGES) * B_STAGE, A, B, M, N, K, row0,
                      col0, next * BK, a_vec, b_vec);
        ptx::cp_async_commit();

        const __half *as = As + (kt % STAGES) * A_STAGE + wm * 64 * LDA;
        const __half *bs = Bs + (kt % STAGES) * B_STAGE + wn * 64;
#pragma unroll
        for (int kk = 0; kk < BK; kk += 16) {
            wmma::fragment<wmma::matrix_a, 16, 16, 16, __half, wmma::row_major> a[4];
#pragma unroll
            for (int i = 0; i < 4; ++i) wmma::load_matrix_sync(a[i], as + i * 16 * LDA + kk, LDA);
#pragma unroll
            for (int j = 0; j < 4; ++j) {
                // One B fragment at a time, as written; ptxas schedules the loads itself, and
                // loading all four B fragments first compiles to the same registers.
                wmma::fragment<wmma::matrix_b, 16, 16, 16, __half, wmma::row_major> b;
                wmma::load_matrix_sync(b, bs + kk * LDB + j * 16, LDB);
#pragma unroll
                for (int i = 0; i < 4; ++i) wmma::mma_sync(acc[i][j], a[i], b, acc[i][j]);
            }
        }
    }
    ptx::cp_async_wait_all();  // only empty groups are left; the ring is quiet
    __syncthreads();           // every warp is done reading the ring before Cs overwrites it

#pragma unroll
    for (int i = 0; i < 4; ++i)
#pragma unroll
        for (int j = 0; j < 4; ++j)
            wmma::store_matrix_sync(&Cs[(wm * 64 + i * 16) * LDC + wn * 64 + j * 16], acc[i][j], LDC,
                                    wmma::mem_row_major);
    __syncthreads();  // the whole 128x128 tile is in Cs
    if (N % 4 == 0 && (size_t)C % 16 == 0) {  // float4 rows: a group is all in range or all out
        for (int idx = threadIdx.x; idx < BM * BN / 4; idx += NTHREADS) {
            const int r = idx / (BN / 4), c = (idx % (BN / 4)) * 4;
            const int gr = row0 + r, gc = col0 + c;
            if (gr < M && gc < N)
                *reinterpret_cast<float4 *>(&C[(size_t)gr * N + gc]) =
                    *reinterpret_cast<const float4 *>(&Cs[r * LDC + c]);
        }
    } else {
        for (int idx = threadIdx.x; idx < BM * BN; idx += NTHREADS) {
            const int r = idx / BN, c = idx % BN;
            const int gr = row0 + r, gc = col0 + c;
            if (gr < M && gc < N) C[(size_t)gr * N + gc] = Cs[r * LDC + c];
        }
    }
}
