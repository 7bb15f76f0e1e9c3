// 23_wgmma_l2_order.cu: rung 22 with its tiles walked in grouped order. BF16 in, FP32
// accumulation (sm_90a only).
//
// What changed since 22 and why:
// - Tile t of the walk is no longer row t / tiles_n, column t % tiles_n. The block-rows form
//   groups of GROUP; the walk takes one group at a time and, inside it, goes down a column of
//   tiles before the next column (the last group holds what is left of the block-rows). This
//   is the grouped ordering of Triton's matmul tutorial (GROUP_SIZE_M). Blocks b,
//   b + gridDim.x, ... are unchanged: only what a tile number means changes, in tile_origin,
//   which producer and consumers both call.
// - Why: the 132 tiles in flight at one time (a wave) read a band of A (their block-rows) and
//   of B (their block-columns), 2 (128 r + 256 c) bytes per element of K for r block-rows and
//   c block-columns. In 22's row-major walk a wave spans all of N: at N = 8192 that is 5
//   block-rows and 32 block-columns, 17664 B per element of K, so an H100's 50 MiB L2 holds a
//   wave's whole band only for K up to 2968 (an H200's 60 MiB, up to 3561), and every wave
//   reads all of B. 128 r + 256 c with r c = 132 is smallest near r = sqrt(2 x 132), about
//   16: in groups of 16 a wave is 16 block-rows by 9 block-columns, 8704 B per element of K
//   (half), whole bands held up to K = 6023 (7228 on an H200); a wave that straddles two groups spans up to 32 block-rows, 12800 B. 16 also
//   divides the block-row count of every M that is a multiple of 2048.
// - Up to 16 block-rows (M <= 2048) the walk is column-major over the whole matrix.
// - Still not done here: 2-CTA clusters sharing each B tile by TMA multicast, and an epilogue
//   that overlaps the next tile's wgmma (two consumer sets).
// Constraints as 18: K and N multiples of 8 (TMA row strides of 16 bytes); stores of C guarded.

#include <cuda_bf16.h>
#include "lab/hopper.h"

#define BM 128
#define BN 256
#define BK 64  // 64 BF16 = 128 bytes: one swizzle row
#define STAGES 4
#define GROUP 16  // block-rows per group of the tile walk
#define CONSUMERS 2
#define NTHREADS (128 * (CONSUMERS + 1))
#define A_TILE (BM * BK)    // elements of one stage of A: BM rows of 128 B
#define B_CHUNK (BK * 64)   // one TMA box of B: BK rows of 64 columns (128 B)
#define B_TILE (BK * BN)    // BN / 64 boxes
#define STAGE_BYTES ((A_TILE + B_TILE) * 2)

// The block-tile origin of tile `tile` of the grouped walk.
__device__ __forceinline__ void tile_origin(int tile, int tiles_m, int tiles_n, int &m0,
                                            int &n0) {
    const int per_group = GROUP * tiles_n;
    const int first = tile / per_group * GROUP;    // the group's first block-row
    const int rows = min(GROUP, tiles_m - first);  // fewer in the last group
    const int local = tile % per_group;
    m0 = (first + local % rows) * BM;
    n0 = local / rows * BN;
}

extern "C" __global__ void __launch_bounds__(NTHREADS, 1)
    gemm_wgmma_l2_order(const __grid_constant__ CUtensorMap tma_a,
                   const __grid_constant__ CUtensorMap tma_b, float *__restrict__ C, int M,
                   int N, int K) {
    // The 128B swizzle repeats every 1024 B and the descriptors assume tiles start on that
    // boundary: align the ring (the plan adds 1024 B of slack).
    extern __shared__ unsigned char smem_raw[];
    const unsigned pad = (1024 - (hopper::smem(smem_raw) & 1023)) & 1023;
    __nv_bfloat16 *as = reinterpret_cast<__nv_bfloat16 *>(smem_raw + pad);
    __nv_bfloat16 *bs = as + STAGES * A_TILE;
    unsigned long long *full = reinterpret_cast<unsigned long long *>(bs + STAGES * B_TILE);
    unsigned long long *empty = full + STAGES;

    const int wg = threadIdx.x / 128;
    const int tiles_m = (M + BM - 1) / BM, tiles_n = (N + BN - 1) / BN;
    const int tiles = tiles_m * tiles_n;
    const int ktiles = (K + BK - 1) / BK;

    if (threadIdx.x == 0) {
        for (int s = 0; s < STAGES; ++s) {
            hopper::mbar_init(&full[s], 1);  // the producer's arrive.expect_tx
            hopper::mbar_init(&empty[s], CONSUMERS * 4);  // one arrival per consumer warp
        }
        hopper::fence_barrier_init();
    }
    __syncthreads();

    if (wg == 0) {
        // Producer: one thread keeps up to STAGES k-tiles in flight.
        if (threadIdx.x == 0) {
            int it = 0;  // k-tiles issued by this block, over all its tiles
            for (long long tile = blockIdx.x; tile < tiles; tile += gridDim.x) {
                int m0, n0;
                tile_origin((int)tile, tiles_m, tiles_n, m0, n0);
                for (int kt = 0; kt < ktiles; ++kt, ++it) {
                    const int s = it % STAGES;
                    if (it >= STAGES) hopper::mbar_wait(&empty[s], ((it / STAGES) - 1) & 1);
                    hopper::mbar_expect_tx(&full[s], STAGE_BYTES);
                    hopper::tma_load_2d(as + s * A_TILE, &tma_a, &full[s], kt * BK, m0);
                    for (int j = 0; j < BN / 64; ++j)
                        hopper::tma_load_2d(bs + s * B_TILE + j * B_CHUNK, &tma_b, &full[s],
                                            n0 + 64 * j, kt * BK);
                }
            }
        }
        return;
    }

    // Consumer c multiplies rows 64c..64c+63 of the block tile by all BN columns, in 128
    // accumulators a thread.
    const int c = wg - 1;
    const int lane = threadIdx.x % 32, warp = (threadIdx.x % 128) / 32;
    int it = 0;  // k-tiles consumed by this block, counted as the producer counts them
    for (long long tile = blockIdx.x; tile < tiles; tile += gridDim.x) {
        int m0, n0;
        tile_origin((int)tile, tiles_m, tiles_n, m0, n0);
        float d[128];
#pragma unroll
        for (int i = 0; i < 128; ++i) d[i] = 0.0f;
        for (int kt = 0; kt < ktiles; ++kt, ++it) {
            const int s = it % STAGES;
            hopper::mbar_wait(&full[s], (it / STAGES) & 1);
            const __nv_bfloat16 *a = as + s * A_TILE + c * 64 * BK;
            const __nv_bfloat16 *b = bs + s * B_TILE;
            hopper::wgmma_fence();
#pragma unroll
            for (int kk = 0; kk < BK / 16; ++kk) {
                // A, K-major: 8-row groups 1024 B apart (SBO); a k16 step is 32 B along the
                // swizzled row (the hardware applies the swizzle to the address bits).
                const unsigned long long da = hopper::smem_desc_128b(a + kk * 16, 16, 1024);
                // B, MN-major: 64-column boxes B_CHUNK * 2 B apart (LBO), 8-row groups of K
                // 1024 B apart (SBO); a k16 step is 16 rows of 128 B.
                const unsigned long long db =
                    hopper::smem_desc_128b(b + kk * 16 * 64, B_CHUNK * 2, 1024);
                hopper::wgmma_m64n256k16_bf16(d, da, db, 1);
            }
            hopper::wgmma_commit();
            hopper::wgmma_wait<0>();
            // Each warp frees the stage after its own wait (as 21 does).
            if (threadIdx.x % 32 == 0) hopper::mbar_arrive(&empty[s]);
        }

        // Epilogue as 21's (the m64nNk16 D layout, a float2 per register pair); meanwhile the
        // producer is filling the ring with the next tile's first k-tiles.
        const int row = m0 + c * 64 + warp * 16 + lane / 4;
#pragma unroll
        for (int j = 0; j < BN / 8; ++j) {
            const int col = n0 + 8 * j + 2 * (lane % 4);
            if (col >= N) continue;
            if (row < M)
                *reinterpret_cast<float2 *>(&C[(size_t)row * N + col]) =
                    make_float2(d[4 * j], d[4 * j + 1]);
            if (row + 8 < M)
                *reinterpret_cast<float2 *>(&C[(size_t)(row + 8) * N + col]) =
                    make_float2(d[4 * j + 2], d[4 * j + 3]);
        }
    }
}
