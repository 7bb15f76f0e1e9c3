// 09_flash2_br128.cu: rung 07 with 128-row query blocks of 8 warps, a leaner softmax and one
// barrier per K/V tile.
//
// What changed since 07 and why it should be faster:
// - 128 query rows per block, 8 warps of 16 rows (07: 64 rows, 4 warps). Every K and V tile
//   that reaches shared memory now serves twice the rows: per FLOP, half the bytes from L2 and
//   half the cp.async instructions. At S = 4096, D = 128 a 64-row block reads all of K and V
//   (2 MB) for 64 x 4096 x 128 x 4 = 134 MFLOP, 64 FLOP per byte; here 128. A warp's own work
//   per tile (the mma.sync, the ldmatrix of K and V, the softmax of its 16 rows) is 07's.
// - The scale folded into the base-2 exponent, as the FlashAttention-2 kernels do: the running
//   maximum is kept on the raw scores (scale > 0, so the order is the same) and
//   p = exp2(s * scale * log2 e - m * scale * log2 e) is one FFMA and one MUFU.EX2 per score
//   (ptx::ex2_approx: exp2f would add a range test and two multiplies). The key and causal
//   masks are applied only on the tiles that need them (the tile holding S's last key, the
//   tiles crossing the warp's diagonal); 07 tests every score of every tile. In the SASS
//   (sm_90, HEAD_DIM 64) 07's tile loop holds 164 FMUL (32 in each arm of its mask's
//   if/else, of which a tile runs one: 132 run), 64 FADD and 34 range tests
//   (FSETP.GEU against -126) around its 34 MUFU.EX2; this loop 34 FMUL (32 of them the
//   output rescale), 30 FADD, 36 FFMA and no range test (its only FSETP, 4, compare row
//   maxima with -inf, as 2 of 07's do).
// - One barrier per tile (07: two). The wait for tile j and the barrier come first; after it
//   every warp is done with tile j - 1, so its stage takes tile j + 1's copies at once, which
//   then have the whole of tile j's work to land.
// K and V tiles still arrive by 16-byte cp.async into two stages (zero-filled past S), Q
// travels in the first tile's group, P is the A operand of P V in registers and the output
// is normalized once at the end, as in 07. HEAD_DIM is 64 or 128 (the plan declines others).
// One block of 8 warps per SM at either HEAD_DIM: the registers of a 256-thread block (output
// accumulators, Q fragments, scores, P, and the K and V fragments in flight) exceed half the
// register file. Capping them at 128 for two blocks spills at HEAD_DIM 64 already.
// Every thread reaches every barrier; every ldmatrix and mma.sync runs on the whole warp.

#include <cuda_fp16.h>
#include <cuda_bf16.h>
#include "lab/index.h"
#include "lab/ptx.h"

#define WARPS 8
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
// ROWS is a multiple of 16, so each thread copies the same number of chunks (a fully unrolled
// loop whose row and column per chunk the compiler derives once from threadIdx.x).
template <int ROWS, class elem>
__device__ __forceinline__ void load_rows(elem *dst, const elem *src, int row0, int S) {
    constexpr int CHUNKS = HEAD_DIM / 8;
    static_assert(ROWS * CHUNKS % (WARPS * 32) == 0, "whole chunks per thread");
#pragma unroll
    for (int i = 0; i < ROWS * CHUNKS / (WARPS * 32); ++i) {
        const int idx = threadIdx.x + i * WARPS * 32;
        const int r = idx / CHUNKS, c = (idx % CHUNKS) * 8;
        const bool in = row0 + r < S;
        ptx::cp_async_cg_zfill(ptx::smem_addr(dst + r * LDH + c), in ? src + lab_at(row0 + r, c, HEAD_DIM) : src,
                               in ? 16 : 0);
    }
}

template <class elem>
__device__ __forceinline__ void flash2_br128(const elem *Q, const elem *K, const elem *V, float *O, int S,
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

    load_rows<BR>(Qs, Qh, q0, S);
    load_rows<BC>(Ks, Kh, 0, S);
    load_rows<BC>(Vs, Vh, 0, S);
    ptx::cp_async_commit();

    // ldmatrix x4 row addresses, as in 07: Q and V (.trans) by 16-row slabs and 8-column
    // chunks; K (no .trans) by key l % 8 and chunk l / 8 (b0, b1 of two k16 steps).
    const int lrow = lane % 16, lchunk = (lane / 16) * 8;
    const int krow = lane % 8, kchunk = (lane / 8) * 8;

    unsigned qf[HEAD_DIM / 16][4];
    float o[HEAD_DIM / 8][4];
#pragma unroll
    for (int n = 0; n < HEAD_DIM / 8; ++n) o[n][0] = o[n][1] = o[n][2] = o[n][3] = 0.0f;
    // Per lane: rows g and g + 8 of the warp. m is the running maximum of the raw scores
    // (unscaled); l this lane's share of the row sum (its columns only).
    float m[2] = {NEG_INF, NEG_INF}, l[2] = {0.0f, 0.0f};
    const int row[2] = {q0 + w0 + g, q0 + w0 + g + 8};
    const float scale2 = scale * LOG2E;

    for (int it = 0; it < tiles; ++it) {
        const int j0 = it * BC;
        ptx::cp_async_wait_group<0>();  // tile it (and Q) landed for this thread
        __syncthreads();                 // ... for every thread; and every warp is done with tile it - 1
        if (it + 1 < tiles) {            // the next tile into the stage tile it - 1 used
            const int st = (it + 1) % 2;
            load_rows<BC>(Ks + st * BC * LDH, Kh, j0 + BC, S);
            load_rows<BC>(Vs + st * BC * LDH, Vh, j0 + BC, S);
        }
        ptx::cp_async_commit();
        if (it == 0) {
#pragma unroll
            for (int k = 0; k < HEAD_DIM / 16; ++k)
                ptx::ldmatrix_x4(qf[k], ptx::smem_addr(Qs + (w0 + lrow) * LDH + k * 16 + lchunk));
        }
        const elem *ks = Ks + (it % 2) * BC * LDH;
        const elem *vs = Vs + (it % 2) * BC * LDH;

        if (causal && j0 > q0 + w0 + 15) continue;  // every row of this warp precedes the tile

        // 1. S = Q K^T: BC / 8 accumulator tiles of 16 rows x 8 keys, raw (unscaled) scores.
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

        // 2. Masks, only where a key of the tile lies past S or past the warp's first row.
        if (j0 + BC > S || (causal && j0 + BC - 1 > q0 + w0)) {
#pragma unroll
            for (int n = 0; n < BC / 8; ++n)
#pragma unroll
                for (int e = 0; e < 4; ++e) {
                    const int key = j0 + n * 8 + 2 * t + (e & 1);
                    if (key >= S || (causal && key > row[e / 2])) s[n][e] = NEG_INF;
                }
        }

        // 3. Online softmax on the raw scores: c0, c1 belong to row g, c2, c3 to g + 8.
        float tile_max[2] = {NEG_INF, NEG_INF};
#pragma unroll
        for (int n = 0; n < BC / 8; ++n) {
            tile_max[0] = fmaxf(tile_max[0], fmaxf(s[n][0], s[n][1]));
            tile_max[1] = fmaxf(tile_max[1], fmaxf(s[n][2], s[n][3]));
        }
        float alpha[2], m_scaled[2];
#pragma unroll
        for (int r = 0; r < 2; ++r) {
            // The quad's 4 lanes hold the row's columns.
            tile_max[r] = fmaxf(tile_max[r], __shfl_xor_sync(0xffffffffu, tile_max[r], 1));
            tile_max[r] = fmaxf(tile_max[r], __shfl_xor_sync(0xffffffffu, tile_max[r], 2));
            const float m_new = fmaxf(m[r], tile_max[r]);
            // A row that saw no key would keep m = -inf and its scores (all -inf) give p = 0;
            // none does here (key 0 is in every row's first tile).
            m_scaled[r] = m_new == NEG_INF ? 0.0f : m_new * scale2;
            alpha[r] = ptx::ex2_approx(m[r] == NEG_INF ? NEG_INF : m[r] * scale2 - m_scaled[r]);
            m[r] = m_new;
            l[r] *= alpha[r];
        }
#pragma unroll
        for (int n = 0; n < HEAD_DIM / 8; ++n) {
            o[n][0] *= alpha[0], o[n][1] *= alpha[0];
            o[n][2] *= alpha[1], o[n][3] *= alpha[1];
        }
        // P = 2^(s * scale2 - m * scale2): one FFMA and one EX2 per score; FP32 for the sum,
        // packed to 16 bits as the A fragments of P V (tile n is k-half n % 2 of step n / 2).
        unsigned pf[BC / 16][4];
#pragma unroll
        for (int n = 0; n < BC / 8; ++n) {
            const float p0 = ptx::ex2_approx(fmaf(s[n][0], scale2, -m_scaled[0]));
            const float p1 = ptx::ex2_approx(fmaf(s[n][1], scale2, -m_scaled[0]));
            const float p2 = ptx::ex2_approx(fmaf(s[n][2], scale2, -m_scaled[1]));
            const float p3 = ptx::ex2_approx(fmaf(s[n][3], scale2, -m_scaled[1]));
            l[0] += p0 + p1;
            l[1] += p2 + p3;
            pf[n / 2][(n % 2) * 2 + 0] = pack2(p0, p1, elem());
            pf[n / 2][(n % 2) * 2 + 1] = pack2(p2, p3, elem());
        }

        // 4. O += P V, V's B fragments by ldmatrix.trans (two n8 tiles of d per x4).
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
    attn_flash2_br128_fp16(const __half *Q, const __half *K, const __half *V, float *O, int heads, int S, int D,
                           float scale, int causal) {
    flash2_br128(Q, K, V, O, S, scale, causal);
}

extern "C" __global__ void __launch_bounds__(WARPS * 32)
    attn_flash2_br128_bf16(const __nv_bfloat16 *Q, const __nv_bfloat16 *K, const __nv_bfloat16 *V, float *O,
                           int heads, int S, int D, float scale, int causal) {
    flash2_br128(Q, K, V, O, S, scale, causal);
}
