// 21_wgmma_n256.cu: rung 18 with 128x256 block tiles. BF16 in, FP32 accumulation (sm_90a
// only).
//
// What changed since 18 and why:
// - BN 128 -> 256: each consumer warpgroup issues one wgmma m64n256k16 a k16 step instead of
//   m64n128k16, so every byte of A that lands in shared memory feeds twice the FLOP. Per
//   128x256 tile and 64-deep k-tile the ring moves (128 + 256) x 64 BF16 for 2 x 128 x 256 x 64
//   FLOP: 85 FLOP per byte of shared-memory fill against 64 for 128x128. The widest wgmma is
//   also the one whose issue and synchronization cost is spread over the most math.
// - 256 columns are 128 FP32 accumulators per consumer thread. With the addresses and loop
//   state they fit in the 168 registers each of the block's 384 threads may have (65536 /
//   384, rounded down to 8): `harness inspect` shows a count below that and no spill. So no
//   setmaxnreg here; it is the tool when a consumer needs more (two m64n256 accumulators
//   would be 256 registers): the producer warpgroup, which only issues TMA copies, gives
//   registers back with setmaxnreg.dec and the consumers take them with setmaxnreg.inc.
// - 4 stages instead of 5: a stage is now 48 KB (A 16 KB, B 32 KB); 4 fill 192 KB of the
//   227 KB a block may have.
// Constraints as 18: K and N multiples of 8 (TMA row strides of 16 bytes); stores of C guarded.

#include <cuda_bf16.h>
#include "lab/hopper.h"

#define BM 128
#define BN 256
#define BK 64  // 64 BF16 = 128 bytes: one swizzle row
#define STAGES 4
#define CONSUMERS 2
#define NTHREADS (128 * (CONSUMERS + 1))
#define A_TILE (BM * BK)    // elements of one stage of A: BM rows of 128 B
#define B_CHUNK (BK * 64)   // one TMA box of B: BK rows of 64 columns (128 B)
#define B_TILE (BK * BN)    // BN / 64 boxes
#define STAGE_BYTES ((A_TILE + B_TILE) * 2)

extern "C" __global__ void __launch_bounds__(NTHREADS, 1)
    gemm_wgmma_n256(const __grid_constant__ CUtensorMap tma_a,
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
    const int m0 = blockIdx.y * BM, n0 = blockIdx.x * BN;
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
            for (int kt = 0; kt < ktiles; ++kt) {
                const int s = kt % STAGES;
                if (kt >= STAGES) hopper::mbar_wait(&empty[s], ((kt / STAGES) - 1) & 1);
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
    // accumulators a thread.
    const int c = wg - 1;
    float d[128];
#pragma unroll
    for (int i = 0; i < 128; ++i) d[i] = 0.0f;
    for (int kt = 0; kt < ktiles; ++kt) {
        const int s = kt % STAGES;
        hopper::mbar_wait(&full[s], (kt / STAGES) & 1);
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
        // The stage is read: wgmma.wait_group covers the wgmma committed by the executing
        // threads (PTX ISA 9.7.15.7.3), so each warp frees the stage after its own wait, which
        // holds whatever order the four warps' shares of a wgmma complete in.
        if (threadIdx.x % 32 == 0) hopper::mbar_arrive(&empty[s]);
    }

    // Epilogue from the accumulators (the m64nNk16 D layout): two adjacent columns per
    // register pair, as a float2. N is a multiple of 8, so a pair is inside C or outside it.
    const int lane = threadIdx.x % 32, warp = (threadIdx.x % 128) / 32;
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
