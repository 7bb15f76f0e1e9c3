// 03_flash2_fp32.cu: the FlashAttention-2 order, FP32: a block owns a tile of queries and its
// warps split it.
//
// What changed since 02 and why it should be faster: in 02 each thread walked a whole tile of keys
// alone, reading every key and value element from shared memory for its one row. Here a warp
// owns ROWS query rows and a tile holds 32 keys, one per lane: lane j scores key j against
// each of the warp's rows, so a K element read from shared memory serves ROWS rows, and P V
// is computed with lane c owning output columns c, c+32, ... (V rows are read conflict-free,
// P through a per-warp shared buffer that every lane reads by broadcast). The softmax
// bookkeeping is deferred as in FlashAttention-2: o is rescaled by exp(m_old - m_new) but
// never divided by l inside the loop, and each lane keeps its own partial row sums, reduced
// across the warp once, at the end. The running maximum needs one warp reduction per row and
// tile; the division and the sum reduction happen once per row instead of once per tile.
// HEAD_DIM is a compile-time define (at most 128): DPL = HEAD_DIM / 32 columns per lane,
// rounded up, with the columns past HEAD_DIM guarded.

#include "lab/index.h"

#define WARPS 4
#define ROWS 16                 // query rows per warp
#define BR (WARPS * ROWS)       // query rows per block
#define BC 32                   // keys per tile: one per lane
#define DPL ((HEAD_DIM + 31) / 32)
#define LDK (HEAD_DIM + 1)      // lanes read different K rows: pad to spread the banks
#define NEG_INF __int_as_float((int)0xff800000)

__device__ __forceinline__ float warp_max(float v) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
    return v;
}

__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

extern "C" __global__ void attn_flash2_fp32(const float *Q, const float *K, const float *V,
                                            float *O, int heads, int S, int D, float scale,
                                            int causal) {
    extern __shared__ __align__(16) float smem[];
    float *Qs = smem;                    // [BR][HEAD_DIM]
    float *Ks = Qs + BR * HEAD_DIM;      // [BC][LDK]
    float *Vs = Ks + BC * LDK;           // [BC][HEAD_DIM]
    float *Ps = Vs + BC * HEAD_DIM;      // [WARPS][ROWS][BC]

    const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
    const int h = blockIdx.y;
    const int q0 = blockIdx.x * BR;
    const int r0 = q0 + warp * ROWS;  // the warp's first row
    const long long base = lab_at(h, 0, (long long)S * HEAD_DIM);
    float *P = Ps + warp * ROWS * BC;

    for (int idx = tid; idx < BR * HEAD_DIM; idx += WARPS * 32) {
        const int r = idx / HEAD_DIM, c = idx % HEAD_DIM;
        Qs[idx] = (q0 + r < S) ? Q[base + lab_at(q0 + r, c, HEAD_DIM)] : 0.0f;
    }

    float o[ROWS][DPL], m[ROWS], l[ROWS];  // l: this lane's share of the row sums
#pragma unroll
    for (int r = 0; r < ROWS; ++r) {
        m[r] = NEG_INF;
        l[r] = 0.0f;
#pragma unroll
        for (int d = 0; d < DPL; ++d) o[r][d] = 0.0f;
    }

    for (int j0 = 0; j0 < S; j0 += BC) {
        __syncthreads();  // the previous tile is fully read (and, the first time, Qs written)
        for (int idx = tid; idx < BC * HEAD_DIM; idx += WARPS * 32) {
            const int r = idx / HEAD_DIM, c = idx % HEAD_DIM;
            const bool in = j0 + r < S;
            Ks[r * LDK + c] = in ? K[base + lab_at(j0 + r, c, HEAD_DIM)] : 0.0f;
            Vs[idx] = in ? V[base + lab_at(j0 + r, c, HEAD_DIM)] : 0.0f;
        }
        __syncthreads();  // the tile is complete

        const int key = j0 + lane;
#pragma unroll
        for (int r = 0; r < ROWS; ++r) {
            float acc = 0.0f;
#pragma unroll 16
            for (int c = 0; c < HEAD_DIM; ++c) acc += Qs[(warp * ROWS + r) * HEAD_DIM + c] * Ks[lane * LDK + c];
            const bool masked = key >= S || (causal && key > r0 + r);
            const float s = masked ? NEG_INF : acc * scale;
            const float m_new = fmaxf(m[r], warp_max(s));
            // -inf only for a row that sees no key, which no mask here makes (key 0 is in every
            // row's first tile): the test keeps exp's argument finite should one ever do so.
            const float m_use = m_new == NEG_INF ? 0.0f : m_new;
            const float alpha = __expf(m[r] - m_use);
            const float p = __expf(s - m_use);
            l[r] = l[r] * alpha + p;
            m[r] = m_new;
#pragma unroll
            for (int d = 0; d < DPL; ++d) o[r][d] *= alpha;
            P[r * BC + lane] = p;
        }
        __syncwarp();  // the warp's P rows are written
#pragma unroll
        for (int r = 0; r < ROWS; ++r) {
#pragma unroll
            for (int d = 0; d < DPL; ++d) {
                const int c = lane + 32 * d;
                if (c < HEAD_DIM) {
                    float acc = 0.0f;
#pragma unroll 8
                    for (int j = 0; j < BC; ++j) acc += P[r * BC + j] * Vs[j * HEAD_DIM + c];
                    o[r][d] += acc;
                }
            }
        }
        __syncwarp();  // P is read before the next tile overwrites it
    }

    // The deferred normalization: one sum reduction and one division per row.
#pragma unroll
    for (int r = 0; r < ROWS; ++r) {
        const float inv = 1.0f / warp_sum(l[r]);
        if (r0 + r < S) {
#pragma unroll
            for (int d = 0; d < DPL; ++d) {
                const int c = lane + 32 * d;
                if (c < HEAD_DIM) O[base + lab_at(r0 + r, c, HEAD_DIM)] = o[r][d] * inv;
            }
        }
    }
}
