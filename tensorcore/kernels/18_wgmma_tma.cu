// 18_wgmma_tma.cu: the Hopper rung (sm_90a only). BF16 in, FP32 accumulation, as rung 17.
//
// What changed since 17 and why:
// - wgmma instead of mma.sync: one warpgroup (4 warps) multiplies a 64x128x16 step straight
//   from shared memory, described by two 64-bit descriptors. No ldmatrix, no fragments in
//   registers for A and B: the registers hold only the accumulators, and the instruction is
//   asynchronous. In the SASS a consumer warp's k-tile loop is about 25 instructions per k16
//   step of its warpgroup's 64x128 tile, the stage's mbarrier wait and release included,
//   where 17's k-tile loop holds about 390 per k16 step of a warp's 64x64 tile (ldmatrix, 32
//   mma.sync, the copies with their guarded 2-byte fallbacks, which aligned shapes skip, and
//   their address arithmetic). Hopper's tensor cores reach their full rate only through
//   wgmma; mma.sync runs at a fraction of it.
// - TMA instead of cp.async: one thread hands the Tensor Memory Accelerator a tensor map
//   (built on the host by cuTensorMapEncodeTiled) and box coordinates; the hardware generates
//   every address, writes the box into shared memory already in the 128B-swizzled layout
//   wgmma reads, fills out-of-bounds elements with zeros (the M, N and K tails) and counts the
//   bytes on an mbarrier. 17 spent 16 cp.async and their address arithmetic per thread per
//   stage; here no thread computes an address.
// - Warp specialization over an mbarrier pipeline of STAGES stages: warpgroup 0 is the
//   producer (one thread issues the TMA copies), warpgroups 1 and 2 are consumers (64 rows of
//   the 128x128 tile each). full[s] completes when stage s has landed (arrival + bytes),
//   empty[s] when every consumer warp is done with it; each side waits on the phase parity. No
//   __syncthreads in the main loop: loading and multiplying run independently.
// Constraints: K and N multiples of 8 (TMA row strides must be multiples of 16 bytes); the
// kernel declines other shapes. Stores of C are guarded (M, N tails).

#include <cuda_bf16.h>
#include "lab/hopper.h"

#define BM 128
#define BN 128
#define BK 64  // 64 BF16 = 128 bytes: one swizzle row
#define STAGES 5
#define CONSUMERS 2
#define NTHREADS (128 * (CONSUMERS + 1))
#define A_TILE (BM * BK)    // elements of one stage of A: BM rows of 128 B
#define B_CHUNK (BK * 64)   // one TMA box of B: BK rows of 64 columns (128 B)
#define B_TILE (BK * BN)    // BN / 64 boxes
#define STAGE_BYTES ((A_TILE + B_TILE) * 2)

extern "C" __global__ void __launch_bounds__(NTHREADS, 1)
    gemm_wgmma_tma(const __grid_constant__ CUtensorMap tma_a,
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

    // Consumer c multiplies rows 64c..64c+63 of the block tile by all BN columns.
    const int c = wg - 1;
    float d[64];
#pragma unroll
    for (int i = 0; i < 64; ++i) d[i] = 0.0f;
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
            hopper::wgmma_m64n128k16_bf16(d, da, db, 1);
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
