// 05_flash2_wmma.cu: rung 04 on tensor cores: FP16 (or BF16) Q, K, V, both products in WMMA,
// the softmax state in FP32.
//
// What changed since 04 and why it should be faster: the two products of a tile, S = Q K^T and
// O += P V, are small matrix products, which is what tensor cores do at many times the FP32
// FMA rate. Q, K and V arrive in 16-bit storage (the plan converts them before timing, as the
// GEMM ladder's rung 11 does), halving their traffic; Q's fragments are loaded once and stay
// in registers. Each warp owns 16 query rows and a tile holds BC = 64 keys:
//   1. S = Q K^T on tensor cores (K row-major in shared memory is K^T column-major), FP32
//      accumulators stored to a per-warp score buffer;
//   2. the softmax in FP32, two lanes per row: scale, mask, running max, P = exp(s - m)
//      rounded to 16 bits for the second product, the row sum kept in FP32, and the FP32
//      output rows rescaled by exp(m_old - m_new);
//   3. O += P V on tensor cores, the FP32 output accumulators loaded from and stored back to
//      the warp's rows of shared memory (portable WMMA does not say which lane holds which
//      element, so the per-row rescale in step 2 is done there).
// The division by l is deferred to the end, fully masked causal tiles are skipped (rung 04).
// Rung 06 is the second entry point: the same code on __nv_bfloat16 (FP32's range, 8
// mantissa bits instead of 11), which trades precision for never overflowing.
// Two softmax lanes a row cost bank conflicts: rows of scores and output 4 banks apart (LDS,
// LDO) and a row's two halves on the same bank put 4 of a warp's words on each bank it
// touches, 3 conflicts per shared-memory load (`harness explain` counts them); rung 07 has
// none.
// HEAD_DIM is a multiple of 16, at most 128. Leading dimensions are padded by 8 halves / 4
// floats and every fragment origin sits on a 32-byte boundary (WMMA's rule). Every thread
// reaches every barrier.

#include <mma.h>
#include <cuda_fp16.h>
#include <cuda_bf16.h>
#include "lab/index.h"
using namespace nvcuda;

// Rounding to the 16-bit type of the inputs, to nearest even.
__device__ __forceinline__ void to_elem(float x, __half &out) { out = __float2half_rn(x); }
__device__ __forceinline__ void to_elem(float x, __nv_bfloat16 &out) { out = __float2bfloat16_rn(x); }

#define WARPS 4
#define BR (WARPS * 16)        // query rows per block, 16 per warp
#define BC 64                  // keys per tile
#define LDH (HEAD_DIM + 8)     // Q, K, V rows (16-bit)
#define LDS (BC + 4)           // score rows (FP32)
#define LDP (BC + 8)           // P rows (16-bit)
#define LDO (HEAD_DIM + 4)     // output rows (FP32)
#define NEG_INF __int_as_float((int)0xff800000)

template <class elem>
__device__ __forceinline__ void flash2_wmma(const elem *Q, const elem *K, const elem *V, float *O,
                                            int S, float scale, int causal) {
    // Carved in this order; the plan's dynamic shared memory size is the sum.
    extern __shared__ __align__(128) float smem[];
    elem *Qs = reinterpret_cast<elem *>(smem);      // [BR][LDH]
    elem *Ks = Qs + BR * LDH;                        // [BC][LDH]
    elem *Vs = Ks + BC * LDH;                        // [BC][LDH]
    float *Ss = reinterpret_cast<float *>(Vs + BC * LDH);  // [BR][LDS]
    elem *Ps = reinterpret_cast<elem *>(Ss + BR * LDS);    // [BR][LDP]
    float *Os = reinterpret_cast<float *>(Ps + BR * LDP);  // [BR][LDO]

    const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
    const int h = blockIdx.y;
    const int q0 = blockIdx.x * BR;
    const int w0 = warp * 16;            // the warp's first row in the block
    const long long base = lab_at(h, 0, (long long)S * HEAD_DIM);
    elem zero;
    to_elem(0.0f, zero);

    for (int idx = tid; idx < BR * HEAD_DIM; idx += WARPS * 32) {
        const int r = idx / HEAD_DIM, c = idx % HEAD_DIM;
        Qs[r * LDH + c] = (q0 + r < S) ? Q[base + lab_at(q0 + r, c, HEAD_DIM)] : zero;
    }
    for (int idx = lane; idx < 16 * HEAD_DIM; idx += 32)
        Os[(w0 + idx / HEAD_DIM) * LDO + idx % HEAD_DIM] = 0.0f;
    __syncthreads();  // Qs complete

    wmma::fragment<wmma::matrix_a, 16, 16, 16, elem, wmma::row_major> qf[HEAD_DIM / 16];
#pragma unroll
    for (int k = 0; k < HEAD_DIM / 16; ++k)
        wmma::load_matrix_sync(qf[k], &Qs[w0 * LDH + k * 16], LDH);

    // Softmax lanes: two per row, each with half of the tile's columns and of O's columns.
    const int sr = lane / 2, half = lane % 2;
    const int row = q0 + w0 + sr;
    float m = NEG_INF, l = 0.0f;  // identical in both lanes of a row

    const int kv_end = causal ? min(S, q0 + BR) : S;
    for (int j0 = 0; j0 < kv_end; j0 += BC) {
        __syncthreads();  // the previous tile is fully read
        for (int idx = tid; idx < BC * HEAD_DIM; idx += WARPS * 32) {
            const int r = idx / HEAD_DIM, c = idx % HEAD_DIM;
            const bool in = j0 + r < S;
            Ks[r * LDH + c] = in ? K[base + lab_at(j0 + r, c, HEAD_DIM)] : zero;
            Vs[r * LDH + c] = in ? V[base + lab_at(j0 + r, c, HEAD_DIM)] : zero;
        }
        __syncthreads();  // the tile is complete
        if (causal && j0 > q0 + w0 + 15) continue;  // all of this warp's rows precede the tile

        // 1. S = Q K^T for the warp's 16 rows and the tile's BC keys.
#pragma unroll
        for (int n = 0; n < BC / 16; ++n) {
            wmma::fragment<wmma::accumulator, 16, 16, 16, float> sf;
            wmma::fill_fragment(sf, 0.0f);
#pragma unroll
            for (int k = 0; k < HEAD_DIM / 16; ++k) {
                wmma::fragment<wmma::matrix_b, 16, 16, 16, elem, wmma::col_major> kf;
                wmma::load_matrix_sync(kf, &Ks[n * 16 * LDH + k * 16], LDH);
                wmma::mma_sync(sf, qf[k], kf, sf);
            }
            wmma::store_matrix_sync(&Ss[w0 * LDS + n * 16], sf, LDS, wmma::mem_row_major);
        }
        __syncwarp();  // the warp's scores are in Ss

        // 2. Online softmax in FP32.
        float *srow = &Ss[(w0 + sr) * LDS];
        float tile_max = NEG_INF;
        for (int j = half * (BC / 2); j < (half + 1) * (BC / 2); ++j) {
            const int key = j0 + j;
            const float s = (key >= S || (causal && key > row)) ? NEG_INF : srow[j] * scale;
            srow[j] = s;
            tile_max = fmaxf(tile_max, s);
        }
        tile_max = fmaxf(tile_max, __shfl_xor_sync(0xffffffffu, tile_max, 1));
        const float m_new = fmaxf(m, tile_max);
        // -inf only for a row that sees no key (none here: key 0 is in every row's first tile).
        const float m_use = m_new == NEG_INF ? 0.0f : m_new;
        const float alpha = __expf(m - m_use);
        float p_sum = 0.0f;
        for (int j = half * (BC / 2); j < (half + 1) * (BC / 2); ++j) {
            const float p = __expf(srow[j] - m_use);
            p_sum += p;
            to_elem(p, Ps[(w0 + sr) * LDP + j]);
        }
        p_sum += __shfl_xor_sync(0xffffffffu, p_sum, 1);
        l = l * alpha + p_sum;
        m = m_new;
        for (int c = half * (HEAD_DIM / 2); c < (half + 1) * (HEAD_DIM / 2); ++c)
            Os[(w0 + sr) * LDO + c] *= alpha;
        __syncwarp();  // P and the rescaled O rows are in shared memory

        // 3. O += P V. Every lane loads its output fragments before any lane stores: the
        // stores overwrite the rows the loads read, and lanes are not guaranteed to run the
        // collective load in lockstep (the simulator runs them one after another).
        wmma::fragment<wmma::accumulator, 16, 16, 16, float> of[HEAD_DIM / 16];
#pragma unroll
        for (int n = 0; n < HEAD_DIM / 16; ++n)
            wmma::load_matrix_sync(of[n], &Os[w0 * LDO + n * 16], LDO, wmma::mem_row_major);
        __syncwarp();
#pragma unroll
        for (int k = 0; k < BC / 16; ++k) {
            wmma::fragment<wmma::matrix_a, 16, 16, 16, elem, wmma::row_major> pf;
            wmma::load_matrix_sync(pf, &Ps[w0 * LDP + k * 16], LDP);
#pragma unroll
            for (int n = 0; n < HEAD_DIM / 16; ++n) {
                wmma::fragment<wmma::matrix_b, 16, 16, 16, elem, wmma::row_major> vf;
                wmma::load_matrix_sync(vf, &Vs[k * 16 * LDH + n * 16], LDH);
                wmma::mma_sync(of[n], pf, vf, of[n]);
            }
        }
#pragma unroll
        for (int n = 0; n < HEAD_DIM / 16; ++n)
            wmma::store_matrix_sync(&Os[w0 * LDO + n * 16], of[n], LDO, wmma::mem_row_major);
        __syncwarp();  // O rows written before the next tile's rescale reads them
    }

    // The deferred normalization.
    if (row < S) {
        const float inv = 1.0f / l;
        for (int c = half * (HEAD_DIM / 2); c < (half + 1) * (HEAD_DIM / 2); ++c)
            O[base + lab_at(row, c, HEAD_DIM)] = Os[(w0 + sr) * LDO + c] * inv;
    }
}

extern "C" __global__ void attn_flash2_wmma_fp16(const __half *Q, const __half *K, const __half *V,
                                                 float *O, int heads, int S, int D, float scale,
                                                 int causal) {
    flash2_wmma(Q, K, V, O, S, scale, causal);
}

extern "C" __global__ void attn_flash2_wmma_bf16(const __nv_bfloat16 *Q, const __nv_bfloat16 *K,
                                                 const __nv_bfloat16 *V, float *O, int heads,
                                                 int S, int D, float scale, int causal) {
    flash2_wmma(Q, K, V, O, S, scale, causal);
}
