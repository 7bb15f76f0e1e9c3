// 26_wgmma_cluster_cta.cu: rung 24 with its consumers freeing the partner's stage by an
// arrival released at CTA scope. BF16 in, FP32 accumulation (sm_90a only).
//
// What changed since 24 and why:
// - 24's consumer warp frees a stage in both blocks with mbarrier.arrive.release.cluster on
//   each block's `empty` barrier (lab/hopper.h's mbar_arrive_cluster). A release at cluster
//   scope compiles to a fence first, MEMBAR.ALL.CTA, MEMBAR.ALL.GPU, ERRBAR and CGAERRBAR,
//   before each of the two arrivals, every k-tile, and Nsight Compute put 24's consumers'
//   stalls on those fences (membar), between their wgmma wait and the next k-tile.
// - The arrival says only "this warp has finished reading the stage", and those reads (the
//   wgmma's) are complete once wgmma.wait_group has returned; the partner's producer refills
//   the stage only after it has seen the barrier's phase complete. So the arrival is made with
//   mbarrier.arrive's default semantics, release at CTA scope (mbar_arrive_remote), as
//   CUTLASS's ClusterBarrier::arrive(cta_id, pred) does: in the SASS the two arrivals follow
//   each other with no fence (the fences of the cluster barriers at the kernel's start and
//   end stay).
// - Everything else is 24's: clusters of two blocks along M, each producer multicasting half
//   of the pair's B tile into both rings, the grouped walk over 256-row pair tiles.
// Constraints as 18: K and N multiples of 8 (TMA row strides of 16 bytes); stores of C
// guarded, the pair's second block computing zeros past M. The grid is even.

#include <cuda_bf16.h>
#include "lab/hopper.h"

#define BM 128
#define BN 256
#define BK 64  // 64 BF16 = 128 bytes: one swizzle row
#define STAGES 4
#define CLUSTER 2  // blocks per cluster, stacked along M
#define GROUP 8    // pair tiles (CLUSTER x BM rows) per group of the tile walk
#define CONSUMERS 2
#define NTHREADS (128 * (CONSUMERS + 1))
#define A_TILE (BM * BK)    // elements of one stage of A: BM rows of 128 B
#define B_CHUNK (BK * 64)   // one TMA box of B: BK rows of 64 columns (128 B)
#define B_TILE (BK * BN)    // BN / 64 boxes
#define B_CHUNKS_EACH (BN / 64 / CLUSTER)  // the boxes of B each producer multicasts
#define STAGE_BYTES ((A_TILE + B_TILE) * 2)

// The first row and the column of pair tile `tile` of the grouped walk.
__device__ __forceinline__ void pair_origin(int tile, int pairs_m, int tiles_n, int &m0,
                                            int &n0) {
    const int per_group = GROUP * tiles_n;
    const int first = tile / per_group * GROUP;    // the group's first pair-row
    const int rows = min(GROUP, pairs_m - first);  // fewer in the last group
    const int local = tile % per_group;
    m0 = (first + local % rows) * (CLUSTER * BM);
    n0 = local / rows * BN;
}

extern "C" __global__ void __cluster_dims__(CLUSTER, 1, 1) __launch_bounds__(NTHREADS, 1)
    gemm_wgmma_cluster_cta(const __grid_constant__ CUtensorMap tma_a,
                           const __grid_constant__ CUtensorMap tma_b, float *__restrict__ C,
                           int M, int N, int K) {
    // The 128B swizzle repeats every 1024 B and the descriptors assume tiles start on that
    // boundary: align the ring (the plan adds 1024 B of slack). Both blocks of a cluster get
    // the same alignment, so a multicast lands at the same offset of each ring.
    extern __shared__ unsigned char smem_raw[];
    const unsigned pad = (1024 - (hopper::smem(smem_raw) & 1023)) & 1023;
    __nv_bfloat16 *as = reinterpret_cast<__nv_bfloat16 *>(smem_raw + pad);
    __nv_bfloat16 *bs = as + STAGES * A_TILE;
    unsigned long long *full = reinterpret_cast<unsigned long long *>(bs + STAGES * B_TILE);
    unsigned long long *empty = full + STAGES;

    const unsigned rank = hopper::cluster_ctarank();
    const int wg = threadIdx.x / 128;
    const int pairs_m = (M + CLUSTER * BM - 1) / (CLUSTER * BM), tiles_n = (N + BN - 1) / BN;
    const int tiles = pairs_m * tiles_n;
    const int ktiles = (K + BK - 1) / BK;
    const int cluster = blockIdx.x / CLUSTER, clusters = gridDim.x / CLUSTER;

    if (threadIdx.x == 0) {
        for (int s = 0; s < STAGES; ++s) {
            hopper::mbar_init(&full[s], 1);  // the producer's arrive.expect_tx
            // One arrival per consumer warp of every block of the cluster.
            hopper::mbar_init(&empty[s], CLUSTER * CONSUMERS * 4);
        }
        hopper::fence_barrier_init();
    }
    hopper::cluster_sync();

    if (wg == 0) {
        // Producer: one thread keeps up to STAGES k-tiles in flight, in both blocks' rings.
        if (threadIdx.x == 0) {
            int it = 0;  // k-tiles issued by this block, over all its tiles
            for (int tile = cluster; tile < tiles; tile += clusters) {
                int m0, n0;
                pair_origin(tile, pairs_m, tiles_n, m0, n0);
                for (int kt = 0; kt < ktiles; ++kt, ++it) {
                    const int s = it % STAGES;
                    if (it >= STAGES) hopper::mbar_wait(&empty[s], ((it / STAGES) - 1) & 1);
                    hopper::mbar_expect_tx(&full[s], STAGE_BYTES);
                    hopper::tma_load_2d(as + s * A_TILE, &tma_a, &full[s], kt * BK,
                                        m0 + (int)rank * BM);
                    for (int j = rank * B_CHUNKS_EACH; j < (int)(rank + 1) * B_CHUNKS_EACH; ++j)
                        hopper::tma_load_2d_multicast(bs + s * B_TILE + j * B_CHUNK, &tma_b,
                                                      &full[s], n0 + 64 * j, kt * BK,
                                                      (1 << CLUSTER) - 1);
                }
            }
        }
    } else {
        // Consumer c multiplies rows 64c..64c+63 of the block's 128 rows by all BN columns,
        // in 128 accumulators a thread.
        const int c = wg - 1;
        const int lane = threadIdx.x % 32, warp = (threadIdx.x % 128) / 32;
        int it = 0;  // k-tiles consumed by this block, counted as the producer counts them
        for (int tile = cluster; tile < tiles; tile += clusters) {
            int m0, n0;
            pair_origin(tile, pairs_m, tiles_n, m0, n0);
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
                    // Descriptors as 21's: A K-major, B MN-major in 64-column boxes.
                    const unsigned long long da =
                        hopper::smem_desc_128b(a + kk * 16, 16, 1024);
                    const unsigned long long db =
                        hopper::smem_desc_128b(b + kk * 16 * 64, B_CHUNK * 2, 1024);
                    hopper::wgmma_m64n256k16_bf16(d, da, db, 1);
                }
                hopper::wgmma_commit();
                hopper::wgmma_wait<0>();
                // Each warp frees the stage in every block of the cluster: the next fill of
                // either ring writes into both. Its reads of the stage are done (wait_group 0
                // above): the arrival needs no cluster-scope release, nor the fence it costs.
                if (lane == 0)
                    for (unsigned r = 0; r < CLUSTER; ++r) hopper::mbar_arrive_remote(&empty[s], r);
            }

            // Epilogue as 21's (the m64nNk16 D layout, a float2 per register pair).
            const int row = m0 + (int)rank * BM + c * 64 + warp * 16 + lane / 4;
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
    // No block exits while its partner may still arrive on its barriers.
    hopper::cluster_sync();
}
