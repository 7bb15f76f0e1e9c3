// 07_flash2_mma.cu: rung 05 on mma.sync m16n8k16 with P and O kept in registers, the
// FlashAttention-2 kernel structure.
//
// What changed since 05 and why: portable WMMA does not say which lane holds which element,
// so rung 05 had to store the scores, P and the output to shared memory to apply the softmax
// per row. mma.sync's fragment layouts are documented (lab/ptx.h), so here everything a warp
// computes stays in its registers:
//   - each warp owns 16 query rows; its Q fragments (ldmatrix) stay in registers for the whole
//     row block;
//   - S = Q K^T is BC / 8 m16n8 accumulator tiles. Lane (g = lane / 4, t = lane % 4) holds
//     rows g and g + 8, columns 2t and 2t + 1 of each tile, so every lane owns two rows: the
//     running max and sum are two floats per lane, and a row's reduction is over the 4 lanes
//     of a quad (__shfl_xor_sync 1 and 2). The sum stays a per-lane partial until the end
//     (the rescale factor is the same across a quad, so partials rescale independently);
//   - P goes to 16 bits in registers and is the A operand of O += P V directly: the C layout
//     of two adjacent n8 tiles 2k and 2k + 1 (rows g / g + 8, columns 2t, 2t + 1 of each) is
//     exactly the A layout of one k16 step (a0 = A[g][2t..], a1 = A[g + 8][2t..],
//     a2 = A[g][8 + 2t..], a3 = A[g + 8][8 + 2t..]): a0 = tile 2k's c0,c1, a1 = its c2,c3,
//     a2 = tile 2k + 1's c0,c1, a3 = its c2,c3. No shuffle, no shared memory;
//   - V is row-major [key][d]; the B operand wants two consecutive keys of one d per register,
//     which ldmatrix.trans delivers;
//   - the output accumulators are rescaled in registers and normalized once at the end.
// K and V tiles arrive by cp.async (zero-filled past S) into two stages, the next tile
// loading while this one is computed. The softmax works in base 2 (exp2 of s * scale * log2 e
// minus the running max in the same units): per score an FADD (s - m) and exp2f, which the
// SASS shows as one MUFU.EX2 inside exp2f's handling of subnormal results, a range test
// (FSETP) and two FMUL around it. Rung 09 drops that path with ptx::ex2_approx and folds the
// scale into one FFMA per score (its header compares the two loops' SASS).
// HEAD_DIM is 64 or 128 (the plan declines others): Q fragments (HEAD_DIM / 4 registers)
// and O accumulators (HEAD_DIM / 2) must fit in registers next to S (BC / 2) without
// spilling. Every thread reaches every barrier; every ldmatrix and mma.sync is executed by
// the whole warp.

#include <cuda_fp16.h>
#include <cuda_bf16.h>
#include "lab/index.h"
#include "lab/ptx.h"

#define WARPS 4
#define BR (WARPS * 16)     // query rows per block, 16 per warp
#define BC 64               // keys per tile
#define LDH (HEAD_DIM + 8)  // 16-bit rows padded by 16 bytes: ldmatrix's 8 rows hit 8 bank groups
#define NEG_INF __int_as_float((int)0xff800000)
#define LOG2E 1.4426950408889634f

// The two element types differ only in the mma instruction and the rounding of P.
__device__ __forceinline__ void mma16816(float (&d)[4], const unsigned (&a)[4], const unsigned (&b)[2],
                                         __half) {
    ptx::mma_m16n8k16_f16(d, a, b, d);
}
__device__ __forceinline__ void mma16816(float (&d)[4], const unsigned (&a)[4], const unsigned (&b)[2],
                                         __nv_bfloat16) {
    ptx::mma_m16n8k16_bf16(d, a, b, d);
}
__device__ __forceinline__ unsigned pack2(float lo, float hi, __half) { return ptx::pack_half2(lo, hi); }
__device__ __forceinline__ unsigned pack2(float lo, float hi, __nv_bfloat16) { return ptx::pack_bf162(lo, hi); }

// `rows` rows of HEAD_DIM 16-bit elements starting at `row0` into shared memory, 16 bytes per
// cp.async; rows at or past S are zero-filled (a zero V row times a zero P adds nothing, a
// zero K row is masked anyway).
template <class elem>
__device__ __forceinline__ void load_rows(elem *dst, const elem *src, int row0, int rows, int S) {
    constexpr int CHUNKS = HEAD_DIM / 8;
    for (int idx = threadIdx.x; idx < rows * CHUNKS; idx += WARPS * 32) {
        const int r = idx / CHUNKS, c = (idx % CHUNKS) * 8;
        const bool in = row0 + r < S;
        ptx::cp_async_cg_zfill(ptx::smem_addr(dst + r * LDH + c), in ? src + lab_at(row0 + r, c, HEAD_DIM) : src,
                               in ? 16 : 0);
    }
}

template <class elem>
__device__ __forceinline__ void flash2_mma(const elem *Q, const elem *K, const elem *V, float *O, int S,
                                           float scale, int causal) {
    // Carved in this order; the plan's dynamic shared memory size is the sum.
    extern __shared__ __align__(128) unsigned char smem_raw[];
    elem *Qs = reinterpret_cast<elem *>(smem_raw);  // [BR][LDH]
    elem *Ks = Qs + BR * LDH;                        // [2][BC][LDH]
    elem *Vs = Ks + 2 * BC * LDH;                    // [2][BC][LDH]

    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int g = lane / 4, t = lane % 4;
    const int h = blockIdx.y;
    const int q0 = blockIdx.x * BR;
    const int w0 = warp * 16;  // the warp's first row in the block
    const long long base = lab_at(h, 0, (long long)S * HEAD_DIM);
    const elem *Qh = Q + base, *Kh = K + base, *Vh = V + base;

    const int kv_end = causal ? min(S, q0 + BR) : S;  // causal: no tile past the block's last row
    const int tiles = (kv_end + BC - 1) / BC;

    // Q and the first K/V tile in one group, then one group per tile ahead.
    load_rows(Qs, Qh, q0, BR, S);
    load_rows(Ks, Kh, 0, BC, S);
    load_rows(Vs, Vh, 0, BC, S);
    ptx::cp_async_commit();

    // ldmatrix x4 row addresses: lane l points at row l % 16 of a 16-row slab, 8-column chunk
    // l / 16 (A: the four 8x8 quarters in a0..a3 order; V with .trans: keys 0-7 / 8-15 of two
    // n8 tiles, i.e. b0, b1 of tile 2p then of tile 2p + 1).
    const int lrow = lane % 16, lchunk = (lane / 16) * 8;
    // K without .trans: lane l points at key l % 8 and 8-column chunk l / 8, so the four
    // matrices are b0, b1 of one k16 step and b0, b1 of the next (B[k][n] = K[n][k]).
    const int krow = lane % 8, kchunk = (lane / 8) * 8;

    unsigned qf[HEAD_DIM / 16][4];
    float o[HEAD_DIM / 8][4];
#pragma unroll
    for (int n = 0; n < HEAD_DIM / 8; ++n) o[n][0] = o[n][1] = o[n][2] = o[n][3] = 0.0f;
    // Per lane: rows g and g + 8 of the warp. m in base-2 units of the scaled score; l is this
    // lane's share of the row sum (its columns only).
    float m[2] = {NEG_INF, NEG_INF}, l[2] = {0.0f, 0.0f};
    const int row[2] = {q0 + w0 + g, q0 + w0 + g + 8};
    const float scale2 = scale * LOG2E;

    for (int it = 0; it < tiles; ++it) {
        const int j0 = it * BC;
        if (it + 1 < tiles) {  // the next tile into the other stage
            const int st = (it + 1) % 2;
            load_rows(Ks + st * BC * LDH, Kh, j0 + BC, BC, S);
            load_rows(Vs + st * BC * LDH, Vh, j0 + BC, BC, S);
        }
        ptx::cp_async_commit();
        ptx::cp_async_wait_group<1>();  // this tile (and Q) landed for this thread
        __syncthreads();                 // ... and for every thread
        if (it == 0) {
#pragma unroll
            for (int k = 0; k < HEAD_DIM / 16; ++k)
                ptx::ldmatrix_x4(qf[k], ptx::smem_addr(Qs + (w0 + lrow) * LDH + k * 16 + lchunk));
        }
        const elem *ks = Ks + (it % 2) * BC * LDH;
        const elem *vs = Vs + (it % 2) * BC * LDH;

        if (!(causal && j0 > q0 + w0 + 15)) {  // else every row of this warp precedes the tile
            // 1. S = Q K^T: BC / 8 accumulator tiles of 16 rows x 8 keys.
            float s[BC / 8][4];
#pragma unroll
            for (int n = 0; n < BC / 8; ++n) {
                s[n][0] = s[n][1] = s[n][2] = s[n][3] = 0.0f;
#pragma unroll
                for (int k = 0; k < HEAD_DIM / 16; k += 2) {
                    unsigned r[4];
                    ptx::ldmatrix_x4(r, ptx::smem_addr(ks + (n * 8 + krow) * LDH + k * 16 + kchunk));
                    const unsigned b0[2] = {r[0], r[1]}, b1[2] = {r[2], r[3]};
                    mma16816(s[n], qf[k], b0, elem());
                    mma16816(s[n], qf[k + 1], b1, elem());
                }
            }

            // 2. Online softmax on the accumulators: c0, c1 belong to row g, c2, c3 to g + 8.
            float tile_max[2] = {NEG_INF, NEG_INF};
#pragma unroll
            for (int n = 0; n < BC / 8; ++n)
#pragma unroll
                for (int e = 0; e < 4; ++e) {
                    const int key = j0 + n * 8 + 2 * t + (e & 1), r = e / 2;
                    const float x = (key >= S || (causal && key > row[r])) ? NEG_INF : s[n][e] * scale2;
                    s[n][e] = x;
                    tile_max[r] = fmaxf(tile_max[r], x);
                }
            float alpha[2], m_use[2];
#pragma unroll
            for (int r = 0; r < 2; ++r) {
                // The quad's 4 lanes hold the row's columns.
                tile_max[r] = fmaxf(tile_max[r], __shfl_xor_sync(0xffffffffu, tile_max[r], 1));
                tile_max[r] = fmaxf(tile_max[r], __shfl_xor_sync(0xffffffffu, tile_max[r], 2));
                const float m_new = fmaxf(m[r], tile_max[r]);
                // -inf only for a row that sees no key (none here: key 0 is in its first tile).
                m_use[r] = m_new == NEG_INF ? 0.0f : m_new;
                alpha[r] = exp2f(m[r] - m_use[r]);
                m[r] = m_new;
                l[r] *= alpha[r];
            }
#pragma unroll
            for (int n = 0; n < HEAD_DIM / 8; ++n) {
                o[n][0] *= alpha[0], o[n][1] *= alpha[0];
                o[n][2] *= alpha[1], o[n][3] *= alpha[1];
            }
            // P = 2^(s - m) in FP32 for the sum, packed to 16 bits as the A fragments of P V.
            unsigned pf[BC / 16][4];
#pragma unroll
            for (int n = 0; n < BC / 8; ++n) {
                const float p0 = exp2f(s[n][0] - m_use[0]), p1 = exp2f(s[n][1] - m_use[0]);
                const float p2 = exp2f(s[n][2] - m_use[1]), p3 = exp2f(s[n][3] - m_use[1]);
                l[0] += p0 + p1;
                l[1] += p2 + p3;
                // Tile n is the k-half n % 2 of k16 step n / 2: a0/a1 from the even tile,
                // a2/a3 from the odd one.
                pf[n / 2][(n % 2) * 2 + 0] = pack2(p0, p1, elem());
                pf[n / 2][(n % 2) * 2 + 1] = pack2(p2, p3, elem());
            }

            // 3. O += P V, V's B fragments by ldmatrix.trans (two n8 tiles of d per x4).
#pragma unroll
            for (int k = 0; k < BC / 16; ++k)
#pragma unroll
                for (int p = 0; p < HEAD_DIM / 16; ++p) {
                    unsigned r[4];
                    ptx::ldmatrix_x4_trans(r, ptx::smem_addr(vs + (k * 16 + lrow) * LDH + p * 16 + lchunk));
                    const unsigned b0[2] = {r[0], r[1]}, b1[2] = {r[2], r[3]};
                    mma16816(o[2 * p], pf[k], b0, elem());
                    mma16816(o[2 * p + 1], pf[k], b1, elem());
                }
        }
        __syncthreads();  // every warp is done with this stage before it is refilled
    }
    ptx::cp_async_wait_all();  // only empty groups remain; nothing may land after exit

    // The deferred normalization: the row sum completed across the quad, one division per row.
#pragma unroll
    for (int r = 0; r < 2; ++r) {
        l[r] += __shfl_xor_sync(0xffffffffu, l[r], 1);
        l[r] += __shfl_xor_sync(0xffffffffu, l[r], 2);
    }
#pragma unroll
    for (int r = 0; r < 2; ++r) {
        if (row[r] >= S) continue;
        const float inv = 1.0f / l[r];
        float *orow = O + base + lab_at(row[r], 0, HEAD_DIM);
#pragma unroll
        for (int n = 0; n < HEAD_DIM / 8; ++n)
            *reinterpret_cast<float2 *>(orow + n * 8 + 2 * t) = make_float2(o[n][2 * r] * inv, o[n][2 * r + 1] * inv);
    }
}

extern "C" __global__ void __launch_bounds__(WARPS * 32)
    attn_flash2_mma_fp16(const __half *Q, const __half *K, const __half *V, float *O, int heads, int S, int D,
                         float scale, int causal) {
    flash2_mma(Q, K, V, O, S, scale, causal);
}

extern "C" __global__ void __launch_bounds__(WARPS * 32)
    attn_flash2_mma_bf16(const __nv_bfloat16 *Q, const __nv_bfloat16 *K, const __nv_bfloat16 *V, float *O,
                         int heads, int S, int D, float scale, int causal) {
    flash2_mma(Q, K, V, O, S, scale, causal);
}
