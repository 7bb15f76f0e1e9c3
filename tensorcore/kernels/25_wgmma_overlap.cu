// 25_wgmma_overlap.cu: rung 23 with each consumer keeping one k-tile of wgmma in flight. BF16
// in, FP32 accumulation (sm_90a only).
//
// What changed since 23 and why:
// - 23's consumer commits a k-tile's four wgmma and waits for all of them (wait_group 0)
//   before it frees the stage and waits for the next one: between k-tiles its warpgroup has no
//   wgmma in flight, and the tensor cores run only the other consumer's, if that one is not
//   at the same point. Here the consumer waits with wait_group 1: for the previous k-tile's
//   group, while the one just committed runs. The previous k-tile's stage is freed then, one
//   k-tile later than in 23; the last one once the tile's final wait_group 0 has run, before
//   the epilogue reads the accumulators.
// - Issuing wgmma into accumulators that wgmma still in flight write needs no fence between
//   them: the PTX ISA orders accumulator accesses of successive wgmma of the same shape.
// - The cost: the producer has one stage fewer to fill ahead (3 of the 4), since each stage
//   is held one k-tile longer.
// - CUTLASS's warp-specialized Hopper mainloop does the same: one group of wgmma left in
//   flight (K_PIPE_MMAS = 1 in sm90_mma_tma_gmma_ss_warpspecialized.hpp).
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
    gemm_wgmma_overlap(const __grid_constant__ CUtensorMap tma_a,
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
            // The group just committed keeps running; the previous k-tile's is done, and its
            // stage free. Each warp frees it for itself (wait_group covers its own wgmma).
            hopper::wgmma_wait<1>();
            if (kt > 0 && threadIdx.x % 32 == 0) hopper::mbar_arrive(&empty[(it - 1) % STAGES]);
        }
        hopper::wgmma_wait<0>();
        if (ktiles > 0 && threadIdx.x % 32 == 0) hopper::mbar_arrive(&empty[(it - 1) % STAGES]);

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
