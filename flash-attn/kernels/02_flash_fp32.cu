// 02_flash_fp32.cu: flash attention in its simplest form, FP32, one thread per query row.
//
// What changed since 01 and why it should be faster: the three kernels become one, and the S x S
// score matrix is never stored. A block of BR threads owns BR query rows; K and V stream
// through shared memory in tiles of BC keys, loaded once per block and read by every thread.
// Each thread keeps its row's running maximum m, running sum l and output row o (registers),
// and after each tile rescales o by exp(m_old - m_new) (the online softmax), keeping o
// normalized by l at every step as the first FlashAttention paper does. Global traffic drops
// from O(S^2) per head to O(S * D) per block, and memory from S^2 to nothing.
// HEAD_DIM (the D of the shape, at most 128) is a compile-time define so that o[] lives in
// registers; Q rows sit in shared memory, padded by one float so that threads reading
// their own rows hit different banks, and each thread's scores of a tile sit in its column
// of Ps (registers are taken by o[]; kept in registers too, the scores spill at
// D = 128). Every thread reaches every barrier (no early
// return).

#include "lab/index.h"

#define BR 64  // query rows (threads) per block
#define BC 32  // keys per K/V tile
#define LDQ (HEAD_DIM + 1)
#define NEG_INF __int_as_float((int)0xff800000)

extern "C" __global__ void attn_flash_fp32(const float *Q, const float *K, const float *V,
                                           float *O, int heads, int S, int D, float scale,
                                           int causal) {
    extern __shared__ __align__(16) float smem[];
    float *Qs = smem;                   // [BR][LDQ]
    float *Ks = Qs + BR * LDQ;          // [BC][HEAD_DIM]
    float *Vs = Ks + BC * HEAD_DIM;     // [BC][HEAD_DIM]
    float *Ps = Vs + BC * HEAD_DIM;     // [BC][BR]: column t is thread t's scores

    const int t = threadIdx.x;
    const int h = blockIdx.y;
    const int q0 = blockIdx.x * BR;
    const int i = q0 + t;
    const long long base = lab_at(h, 0, (long long)S * HEAD_DIM);

    for (int idx = t; idx < BR * HEAD_DIM; idx += BR) {
        const int r = idx / HEAD_DIM, c = idx % HEAD_DIM;
        Qs[r * LDQ + c] = (q0 + r < S) ? Q[base + lab_at(q0 + r, c, HEAD_DIM)] : 0.0f;
    }

    float o[HEAD_DIM];
#pragma unroll
    for (int c = 0; c < HEAD_DIM; ++c) o[c] = 0.0f;
    float m = NEG_INF, l = 0.0f;

    for (int j0 = 0; j0 < S; j0 += BC) {
        __syncthreads();  // the previous tile is fully read (and, the first time, Qs written)
        for (int idx = t; idx < BC * HEAD_DIM; idx += BR) {
            const int r = idx / HEAD_DIM, c = idx % HEAD_DIM;
            const bool in = j0 + r < S;
            Ks[idx] = in ? K[base + lab_at(j0 + r, c, HEAD_DIM)] : 0.0f;
            Vs[idx] = in ? V[base + lab_at(j0 + r, c, HEAD_DIM)] : 0.0f;
        }
        __syncthreads();  // the tile is complete
        if (i >= S) continue;  // rows past the end still take part in the loads and barriers

        // Scores of this tile; a masked or missing key scores -inf, which exp turns into 0.
        // They go to the thread's column of Ps rather than registers, which o[] fills.
        float tile_max = NEG_INF;
        for (int j = 0; j < BC; ++j) {
            float acc = 0.0f;
#pragma unroll 16
            for (int c = 0; c < HEAD_DIM; ++c) acc += Qs[t * LDQ + c] * Ks[j * HEAD_DIM + c];
            const int key = j0 + j;
            const float s = (key >= S || (causal && key > i)) ? NEG_INF : acc * scale;
            Ps[j * BR + t] = s;
            tile_max = fmaxf(tile_max, s);
        }
        // Key 0 is in every row's first tile, so m is finite from then on.
        const float m_new = fmaxf(m, tile_max);
        const float alpha = __expf(m - m_new);  // 0 on the first tile (m = -inf)
        float p_sum = 0.0f;
        for (int j = 0; j < BC; ++j) {
            const float p = __expf(Ps[j * BR + t] - m_new);
            Ps[j * BR + t] = p;
            p_sum += p;
        }
        const float l_new = l * alpha + p_sum;
        // o stays normalized: o = (l * alpha * o + P V) / l_new.
        const float keep = l * alpha / l_new, inv = 1.0f / l_new;
#pragma unroll
        for (int c = 0; c < HEAD_DIM; ++c) o[c] *= keep;
        for (int j = 0; j < BC; ++j) {
            const float w = Ps[j * BR + t] * inv;
#pragma unroll
            for (int c = 0; c < HEAD_DIM; ++c) o[c] += w * Vs[j * HEAD_DIM + c];
        }
        m = m_new;
        l = l_new;
    }
    if (i < S) {
#pragma unroll
        for (int c = 0; c < HEAD_DIM; ++c) O[base + lab_at(i, c, HEAD_DIM)] = o[c];
    }
}
