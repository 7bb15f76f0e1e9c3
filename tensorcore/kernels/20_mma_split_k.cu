// 20_mma_split_k.cu: rung 19 with K split across blocks when the output has fewer tiles
// than the GPU has SMs. This file is compiled after rung 19's source (the plan appends it),
// whose main loop and store it calls.
//
// What changed since 19 and why it should be faster on small shapes: 19 gives each block one
// 128x256 tile of C and the whole of K. At 1024^3 that is 8 x 4 = 32 blocks for the 132 SMs
// of an H100: three quarters of the GPU idles whatever the kernel's speed per SM. Here the
// grid's z dimension splits K: block z of a tile multiplies the k-tiles
// [z * T / splits, (z + 1) * T / splits) of the T = ceil(K / 32), so tiles x splits blocks
// share the work (1024^3: 32 x 4 = 128 blocks, one wave, a quarter of K each). The plan picks
// `splits` from the shape and the SM count (tensorcore/src/wide_tile.rs), only for shapes
// with fewer tiles than SMs; splits = 1 is rung 19 exactly, C stored straight from the
// registers.
//
// The reduction is deterministic: the partial tiles are never added with atomics (whose order,
// and so whose FP32 rounding, would change from run to run). Each block stores its FP32
// partial to a workspace slot of its own, in register order (thread-major float4s: coalesced,
// and the reducer's threads read back exactly the elements they hold); then
//   __threadfence(); one atomicAdd on the tile's counter;
// and the block that arrives last reads back the partials of splits 0, 1, ..., splits - 1
// and adds them in that order, whichever block it is, then stores C with 19's guarded
// epilogue (its own slot is read back too: keeping its registers aside for the sum would
// double the accumulators). It also resets the counter, so the next launch finds it at
// zero (the plan zero-fills the counters before every run as well). Each __threadfence is
// MEMBAR.SC.GPU, ERRBAR and CGAERRBAR, then CCTL.IVALL in the SASS (sm_90): the reducer's L1
// is invalidated, so its plain loads of the other splits' slots cannot hit stale lines.
// Tails: 19's (zero-filled copies, guarded loads and stores); a split always holds at least one
// k-tile (splits <= T), the last k-tile may be partial.

extern "C" __global__ void __launch_bounds__(NTHREADS)
    gemm_mma_split_k(const __half *__restrict__ A, const __half *__restrict__ B, float *__restrict__ C, int M,
                     int N, int K, float *work, unsigned *counters) {
    const int tiles_k = (K + BK - 1) / BK;
    const int splits = gridDim.z, z = blockIdx.z;
    const int kt0 = (int)((long long)z * tiles_k / splits);
    const int kt1 = (int)((long long)(z + 1) * tiles_k / splits);
    float acc[4][8][4];
    mma_128x256(acc, reinterpret_cast<const unsigned short *>(A), reinterpret_cast<const unsigned short *>(B), M,
                N, K, kt0, kt1, gemm_smem);
    if (splits == 1) {  // the shape fills the GPU: rung 19
        store_128x256(acc, C, M, N);
        return;
    }

    // 1. This split's partial into its slot: float4 f of thread tid at (f * NTHREADS + tid).
    const int tile = blockIdx.y * gridDim.x + blockIdx.x;
    const size_t slot = (size_t)BM * BN / 4;  // float4s per partial tile
    float4 *mine = reinterpret_cast<float4 *>(work) + ((size_t)tile * splits + z) * slot;
#pragma unroll
    for (int i = 0; i < 4; ++i)
#pragma unroll
        for (int j = 0; j < 8; ++j)
            mine[(i * 8 + j) * NTHREADS + threadIdx.x] =
                make_float4(acc[i][j][0], acc[i][j][1], acc[i][j][2], acc[i][j][3]);
    __threadfence();  // the partial is visible to the whole GPU before the count says so

    // 2. Count the arrival; only the last block of the tile goes on.
    __shared__ unsigned arrived;
    __syncthreads();  // every thread's partial is stored and fenced
    if (threadIdx.x == 0) arrived = atomicAdd(&counters[tile], 1u);
    __syncthreads();
    if (arrived != (unsigned)splits - 1) return;
    __threadfence();  // the other splits' partials, fenced before their counts, are seen now
    if (threadIdx.x == 0) counters[tile] = 0;

    // 3. Sum the splits in the fixed order 0..splits-1 (this block's own slot included, read
    //    back as it was stored), then store C as rung 19 does.
    const float4 *all = reinterpret_cast<const float4 *>(work) + (size_t)tile * splits * slot;
    for (int s = 0; s < splits; ++s) {
#pragma unroll
        for (int i = 0; i < 4; ++i)
#pragma unroll
            for (int j = 0; j < 8; ++j) {
                const float4 p = all[s * slot + (i * 8 + j) * NTHREADS + threadIdx.x];
                if (s == 0) {
                    acc[i][j][0] = p.x, acc[i][j][1] = p.y, acc[i][j][2] = p.z, acc[i][j][3] = p.w;
                } else {
                    acc[i][j][0] += p.x, acc[i][j][1] += p.y, acc[i][j][2] += p.z, acc[i][j][3] += p.w;
                }
            }
    }
    store_128x256(acc, C, M, N);
}
