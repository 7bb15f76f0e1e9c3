// 28_wgmma_split_k.cu: rung 25 with K split across the blocks of a cluster when the output has
// fewer tiles than the GPU has SMs, the partial tiles added through distributed shared
// memory. BF16 in, FP32 accumulation (sm_90a only).
//
// What changed since 25 and why it should be faster on small shapes:
// - 25 gives each 128x256 tile of C to one block and the whole of K. At 1024^3 that is 8 x 4
//   = 32 tiles for the 132 SMs of an H100 or H200: three quarters of the GPU idles. In the
//   published H200 run 25 reached little more than half of cuBLAS BF16 there, and passed it
//   at 8192^3, where the tiles fill the GPU; rung 18's 128x128 tiles, twice as many, did
//   better than 25 at 1024^3.
// - Here SPLITS blocks share a tile: the kernel is declared __cluster_dims__(SPLITS, 1, 1), and
//   block z of a cluster multiplies the k-tiles [z T / SPLITS, (z + 1) T / SPLITS) of the
//   T = ceil(K / 64), with 25's ring, producer and consumers. The plan picks SPLITS from the
//   shape and the SM count (tensorcore/src/hopper.rs), only for shapes with fewer tiles than
//   SMs (1024^3 on 132 SMs: 4, so 128 blocks); otherwise it launches rung 25 itself.
// - The partial tiles meet in shared memory, not in global memory as rung 20's do. Once both
//   consumers of a block are done with the ring, they write their 128 x 256 FP32 partial over
//   it (rows padded to 264 floats, so that the float2 stores of each half-warp, four rows,
//   cover the 32 banks once); after a cluster barrier, block z reads rows
//   [z BM / SPLITS, (z + 1) BM / SPLITS) of every block's partial through distributed shared
//   memory (mapa), adds them in block order 0, 1, ..., SPLITS - 1 (the same order whichever
//   block finishes first: the sums are deterministic), and stores those rows of C as float4.
//   No workspace, no counters, no second pass over L2: each block reads 128 KB of partials,
//   all but its own SPLITS-th through the SM-to-SM network, and stores a SPLITS-th of the
//   tile.
// - Three barriers: the block's ring is free (a named barrier of its two consumers, both past
//   their last wgmma wait; the producer has returned), then two of the cluster: the partials
//   are written, and no block exits while another still reads its shared memory (a thread
//   that has exited counts as arrived).
// Constraints as 18: K and N multiples of 8 (TMA row strides of 16 bytes, and whole float4s of
// C); rows of C past M are neither read nor stored. SPLITS is at most 8 (the portable cluster
// size) and at most T.

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
#define PART_LD (BN + 8)  // floats per row of a partial tile in shared memory
#ifndef SPLITS
#define SPLITS 4  // blocks per tile (the plan defines it)
#endif

static_assert(BM * PART_LD * 4 <= STAGES * STAGE_BYTES, "a partial tile fits in the ring");

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

extern "C" __global__ void __launch_bounds__(NTHREADS, 1) __cluster_dims__(SPLITS, 1, 1)
    gemm_wgmma_split_k(const __grid_constant__ CUtensorMap tma_a,
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
    const int ktiles = (K + BK - 1) / BK;
    // This block's share: one tile, and a SPLITS-th of its k-tiles.
    const int tile = blockIdx.x / SPLITS, z = blockIdx.x % SPLITS;
    const int kt0 = (int)((long long)z * ktiles / SPLITS);
    const int kt1 = (int)((long long)(z + 1) * ktiles / SPLITS);
    int m0, n0;
    tile_origin(tile, tiles_m, tiles_n, m0, n0);

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
            int it = 0;  // k-tiles issued by this block
            for (int kt = kt0; kt < kt1; ++kt, ++it) {
                const int s = it % STAGES;
                if (it >= STAGES) hopper::mbar_wait(&empty[s], ((it / STAGES) - 1) & 1);
                hopper::mbar_expect_tx(&full[s], STAGE_BYTES);
                hopper::tma_load_2d(as + s * A_TILE, &tma_a, &full[s], kt * BK, m0);
                for (int j = 0; j < BN / 64; ++j)
                    hopper::tma_load_2d(bs + s * B_TILE + j * B_CHUNK, &tma_b, &full[s],
                                        n0 + 64 * j, kt * BK);
            }
        }
        return;
    }

    // Consumer c multiplies rows 64c..64c+63 of the block tile by all BN columns, in 128
    // accumulators a thread, over this block's k-tiles.
    const int c = wg - 1;
    const int lane = threadIdx.x % 32, warp = (threadIdx.x % 128) / 32;
    int it = 0;  // k-tiles consumed by this block, counted as the producer counts them
    float d[128];
#pragma unroll
    for (int i = 0; i < 128; ++i) d[i] = 0.0f;
    for (int kt = kt0; kt < kt1; ++kt, ++it) {
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
        if (it > 0 && threadIdx.x % 32 == 0) hopper::mbar_arrive(&empty[(it - 1) % STAGES]);
    }
    // The last stage needs no release: nothing more is loaded into this block's ring.
    hopper::wgmma_wait<0>();

    // Both consumers of this block are past their last wgmma wait: its ring is free. Only
    // this block's partial goes into its ring, so its 256 consumer threads are enough.
    hopper::named_sync(1, 128 * CONSUMERS);
    // The partial, in the m64nNk16 D layout: a float2 per register pair, rows PART_LD apart.
    float *part = reinterpret_cast<float *>(as);
    const int row = c * 64 + warp * 16 + lane / 4;
#pragma unroll
    for (int j = 0; j < BN / 8; ++j) {
        const int col = 8 * j + 2 * (lane % 4);
        *reinterpret_cast<float2 *>(&part[row * PART_LD + col]) = make_float2(d[4 * j], d[4 * j + 1]);
        *reinterpret_cast<float2 *>(&part[(row + 8) * PART_LD + col]) =
            make_float2(d[4 * j + 2], d[4 * j + 3]);
    }
    // Every block's partial is written (release), and readable by the others (acquire).
    hopper::cluster_sync();
    // Block z adds its rows of the SPLITS partials, in block order, and stores them as float4.
    const int r0 = z * BM / SPLITS, r1 = (z + 1) * BM / SPLITS;
    const float *parts[SPLITS];
#pragma unroll
    for (int q = 0; q < SPLITS; ++q) parts[q] = hopper::cluster_map(part, q);
    for (int i = threadIdx.x - 128; i < (r1 - r0) * (BN / 4); i += 128 * CONSUMERS) {
        const int r = r0 + i / (BN / 4), col = 4 * (i % (BN / 4));
        if (m0 + r >= M || n0 + col >= N) continue;
        float4 sum = *reinterpret_cast<const float4 *>(&parts[0][r * PART_LD + col]);
#pragma unroll
        for (int q = 1; q < SPLITS; ++q) {
            const float4 v = *reinterpret_cast<const float4 *>(&parts[q][r * PART_LD + col]);
            sum.x += v.x;
            sum.y += v.y;
            sum.z += v.z;
            sum.w += v.w;
        }
        *reinterpret_cast<float4 *>(&C[(size_t)(m0 + r) * N + n0 + col]) = sum;
    }
    // No block exits while another may still read its partial.
    hopper::cluster_sync();
}
