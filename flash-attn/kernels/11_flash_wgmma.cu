// 11_flash_wgmma.cu: rung 09 on Hopper's wgmma (sm_90a only): each warpgroup multiplies
// straight from shared memory, P from registers.
//
// What changed since 09 and why it should be faster:
// - The 8 warps are 2 warpgroups of 64 query rows (09: 8 warps of 16). S = Q K^T is
//   HEAD_DIM / 16 wgmma m64n64k16 reading Q and K from shared memory through descriptors;
//   O += P V is 4 wgmma m64nNk16 (N = HEAD_DIM, 16 keys each) taking P from registers, in the
//   layout 09's mma.sync took it, and V from shared memory as an MN-major operand. No
//   ldmatrix, and no Q fragments held in registers for the whole kernel. In the SASS (sm_90a,
//   HEAD_DIM 64) the tile loop holds 8 HGMMA and no LDSM; 09's, per warp, 64 HMMA and 36 LDSM
//   (16 of K, 16 of V, and Q's 4 on the first tile).
// - wgmma is asynchronous: a warp issues a product's instructions and waits once, instead of
//   feeding every mma.sync its fragments. Without Q's fragments 128 registers suffice
//   (__launch_bounds__(256, 2), no spills), so two blocks fit per SM at HEAD_DIM 128 (09:
//   one), four warpgroups: one warpgroup's softmax can run while another's wgmma keeps the
//   tensor cores busy.
// - The tiles are laid out as wgmma reads them: HEAD_DIM / 64 boxes of rows of 128 bytes, the
//   16-byte chunk c of row r stored at chunk c ^ (r % 8) (the 128-byte swizzle the
//   descriptors name); no padding.
// What stays: K and V arrive by 16-byte cp.async into two stages, one barrier per tile, the
// softmax in base 2 with the scale folded in, masks only on boundary tiles, the output
// normalized once at the end. The copies write shared memory in the generic proxy and wgmma
// reads it in the async proxy: each thread fences its landed copies (fence.proxy.async)
// before the barrier that lets wgmma read them. HEAD_DIM is 64 or 128 (the plan declines
// others).
// Every thread reaches every barrier; every wgmma runs on a whole warpgroup (the causal skip
// is decided per warpgroup).

#include <cuda_fp16.h>
#include <cuda_bf16.h>
#include "lab/hopper.h"
#include "lab/index.h"
#include "lab/ptx.h"

#define WARPGROUPS 2
#define THREADS (WARPGROUPS * 128)
#define BR (WARPGROUPS * 64)  // query rows per block, 64 per warpgroup
#define BC 64                 // keys per tile
#define BOX 64                // 16-bit elements per 128-byte swizzle row
#define NEG_INF __int_as_float((int)0xff800000)
#define LOG2E 1.4426950408889634f

__device__ __forceinline__ unsigned pack2(float lo, float hi, __half) { return ptx::pack_half2(lo, hi); }
__device__ __forceinline__ unsigned pack2(float lo, float hi, __nv_bfloat16) { return ptx::pack_bf162(lo, hi); }

// O += P V for one k16 step of keys: N = HEAD_DIM, picked by the accumulators' size.
template <class elem>
__device__ __forceinline__ void wgmma_pv(float (&o)[32], const unsigned (&p)[4], unsigned long long dv) {
    hopper::wgmma_m64n64k16_rs(o, p, dv, elem());
}
template <class elem>
__device__ __forceinline__ void wgmma_pv(float (&o)[64], const unsigned (&p)[4], unsigned long long dv) {
    hopper::wgmma_m64n128k16_rs(o, p, dv, elem());
}

// Element (r, c) of a ROWS x HEAD_DIM tile in the 128-byte swizzled layout: box c / 64 of ROWS
// rows of 128 B, the 16-byte chunk (c % 64) / 8 of row r stored at that chunk XOR r % 8.
template <int ROWS>
__device__ __forceinline__ int swizzled(int r, int c) {
    return (c / BOX) * ROWS * BOX + r * BOX + ((((c % BOX) / 8) ^ (r % 8)) * 8) + c % 8;
}

// ROWS rows of HEAD_DIM 16-bit elements starting at `row0`, 16 bytes per cp.async, into the
// swizzled layout; rows at or past S are zero-filled (a zero V row times a zero P adds nothing,
// a zero K row is masked anyway). A thread's chunks lie STEP rows apart, a multiple of 8: one
// column and one swizzle for all of them, so one shared address plus constants.
template <int ROWS, class elem>
__device__ __forceinline__ void load_rows(elem *dst, const elem *src, int row0, int S) {
    constexpr int CHUNKS = HEAD_DIM / 8, STEP = THREADS / CHUNKS;
    static_assert(ROWS % STEP == 0 && STEP % 8 == 0, "whole chunks per thread, one swizzle");
    const int r = threadIdx.x / CHUNKS, c = threadIdx.x % CHUNKS * 8;
    elem *d = dst + swizzled<ROWS>(r, c);
    const elem *from = src + lab_at(row0 + r, c, HEAD_DIM);
#pragma unroll
    for (int i = 0; i < ROWS / STEP; ++i) {
        const bool in = row0 + r + i * STEP < S;
        ptx::cp_async_cg_zfill(ptx::smem_addr(d + i * STEP * BOX), in ? from + i * STEP * HEAD_DIM : src,
                               in ? 16 : 0);
    }
}

// The descriptors are built once, before the tile loop, from warp-uniform values (the base
// of the shared-memory layout, the warpgroup), and stepped with hopper::desc_add (the loop
// counter picks the stage): they stay in uniform registers, where wgmma takes them. Built per
// step from the thread's index, each wgmma operand would cost every warp a chain of integer
// instructions and a move into uniform registers.

// A K-major ROWS-row tile (Q or K) from row `row0`: 8-row groups 1024 B apart (SBO). Its k16
// step `k` (along HEAD_DIM) lies 32 B further along the swizzled row for each step inside a
// box, and a box (ROWS rows of 128 B) further for each 4 steps.
template <class elem>
__device__ __forceinline__ unsigned long long kmajor_desc(const elem *tile, int row0) {
    return hopper::smem_desc_128b(tile + row0 * BOX, 16, 1024);
}
template <int ROWS>
__device__ __forceinline__ unsigned kmajor_step(int k) {
    return (k / 4) * ROWS * 128 + (k % 4) * 32;
}

// A V tile, MN-major: 64-column boxes BC rows of 128 B apart (LBO), 8-key groups 1024 B apart
// (SBO); k16 step `k` (keys 16k..16k + 15) starts 16 rows of 128 B further.
template <class elem>
__device__ __forceinline__ unsigned long long v_desc(const elem *tile) {
    return hopper::smem_desc_128b(tile, BC * BOX * 2, 1024);
}
__device__ __forceinline__ unsigned v_step(int k) { return k * 16 * 128; }

// Masks (boundary tiles only) and the online-softmax step of one tile's raw scores: the new
// maxima, the factor `alpha` that rescales the rows' earlier O and sum, the tile's row sums
// `sum`, and P = 2^(s scale2 - m scale2) left in `s` in place of the scores.
__device__ __forceinline__ void softmax_step(float (&s)[BC / 2], float (&m)[2], float (&alpha)[2], float (&sum)[2],
                                             int j0, int S, int causal, int first_row, const int (&row)[2],
                                             int t, float scale2) {
    if (j0 + BC > S || (causal && j0 + BC - 1 > first_row)) {
#pragma unroll
        for (int n = 0; n < BC / 8; ++n)
#pragma unroll
            for (int e = 0; e < 4; ++e) {
                const int key = j0 + n * 8 + 2 * t + (e & 1);
                if (key >= S || (causal && key > row[e / 2])) s[4 * n + e] = NEG_INF;
            }
    }
    float tile_max[2] = {NEG_INF, NEG_INF};
#pragma unroll
    for (int n = 0; n < BC / 8; ++n) {
        tile_max[0] = fmaxf(tile_max[0], fmaxf(s[4 * n], s[4 * n + 1]));
        tile_max[1] = fmaxf(tile_max[1], fmaxf(s[4 * n + 2], s[4 * n + 3]));
    }
    float m_scaled[2];
#pragma unroll
    for (int r = 0; r < 2; ++r) {
        tile_max[r] = fmaxf(tile_max[r], __shfl_xor_sync(0xffffffffu, tile_max[r], 1));
        tile_max[r] = fmaxf(tile_max[r], __shfl_xor_sync(0xffffffffu, tile_max[r], 2));
        const float m_new = fmaxf(m[r], tile_max[r]);
        m_scaled[r] = m_new == NEG_INF ? 0.0f : m_new * scale2;
        alpha[r] = ptx::ex2_approx(m[r] == NEG_INF ? NEG_INF : m[r] * scale2 - m_scaled[r]);
        m[r] = m_new;
        sum[r] = 0.0f;
    }
#pragma unroll
    for (int n = 0; n < BC / 8; ++n)
#pragma unroll
        for (int e = 0; e < 4; ++e) {
            s[4 * n + e] = ptx::ex2_approx(fmaf(s[4 * n + e], scale2, -m_scaled[e / 2]));
            sum[e / 2] += s[4 * n + e];
        }
}

// O and the row sums rescaled by alpha, and P packed as the A registers of P V: the
// mma.m16n8k16 A layout per warp, so score tile n is k-half n % 2 of step n / 2, as in 09. It
// overwrites O and the registers the previous P V read: only once that P V is done.
template <class elem, int N>
__device__ __forceinline__ void rescale_and_pack(float (&o)[N], float (&l)[2], const float (&alpha)[2],
                                                 const float (&sum)[2], const float (&s)[BC / 2],
                                                 unsigned (&pf)[BC / 16][4]) {
#pragma unroll
    for (int j = 0; j < N / 4; ++j) {
        o[4 * j] *= alpha[0], o[4 * j + 1] *= alpha[0];
        o[4 * j + 2] *= alpha[1], o[4 * j + 3] *= alpha[1];
    }
#pragma unroll
    for (int r = 0; r < 2; ++r) l[r] = l[r] * alpha[r] + sum[r];
#pragma unroll
    for (int n = 0; n < BC / 8; ++n) {
        pf[n / 2][(n % 2) * 2 + 0] = pack2(s[4 * n], s[4 * n + 1], elem());
        pf[n / 2][(n % 2) * 2 + 1] = pack2(s[4 * n + 2], s[4 * n + 3], elem());
    }
}

// The deferred normalization and the store: each row's sum completed across its quad, one
// division per row, rows past S not written.
template <int N>
__device__ __forceinline__ void write_output(const float (&o)[N], float (&l)[2], const int (&row)[2], int t,
                                             float *Oh, int S) {
#pragma unroll
    for (int r = 0; r < 2; ++r) {
        l[r] += __shfl_xor_sync(0xffffffffu, l[r], 1);
        l[r] += __shfl_xor_sync(0xffffffffu, l[r], 2);
    }
#pragma unroll
    for (int r = 0; r < 2; ++r) {
        if (row[r] >= S) continue;
        const float inv = 1.0f / l[r];
        float *orow = Oh + lab_at(row[r], 0, HEAD_DIM);
#pragma unroll
        for (int j = 0; j < HEAD_DIM / 8; ++j)
            *reinterpret_cast<float2 *>(orow + j * 8 + 2 * t) =
                make_float2(o[4 * j + 2 * r] * inv, o[4 * j + 2 * r + 1] * inv);
    }
}

template <class elem>
__device__ __forceinline__ void flash_wgmma(const elem *Q, const elem *K, const elem *V, float *O, int S,
                                            float scale, int causal) {
    // The swizzle repeats every 1024 B and the descriptors assume each box starts on that
    // boundary: align the layout's start (the plan adds 1024 B of slack).
    extern __shared__ unsigned char smem_raw[];
    const unsigned pad = (1024 - (hopper::smem(smem_raw) & 1023)) & 1023;
    elem *Qs = reinterpret_cast<elem *>(smem_raw + pad);  // [BR x HEAD_DIM], swizzled
    elem *Ks = Qs + BR * HEAD_DIM;                        // [2][BC x HEAD_DIM]
    elem *Vs = Ks + 2 * BC * HEAD_DIM;                    // [2][BC x HEAD_DIM]

    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int g = lane / 4, t = lane % 4;
    // The warpgroup (rows 64 wg .. 64 wg + 63 of the block), read through a shuffle from lane 0:
    // the compiler then knows it is the same in every lane and keeps what derives from it (the
    // descriptors) in uniform registers.
    const int wg = __shfl_sync(0xffffffffu, threadIdx.x / 128, 0);
    const int h = blockIdx.y;
    const int q0 = blockIdx.x * BR;
    const int w0 = warp * 16;  // the warp's first row in the block (16 per warp of a warpgroup)
    const long long base = lab_at(h, 0, (long long)S * HEAD_DIM);
    const elem *Qh = Q + base, *Kh = K + base, *Vh = V + base;

    // Stage `st`'s tiles begin STAGE bytes after stage 0's.
    constexpr unsigned STAGE = BC * HEAD_DIM * 2;
    const unsigned long long dq = kmajor_desc(Qs, wg * 64), dk = kmajor_desc(Ks, 0), dv = v_desc(Vs);

    const int kv_end = causal ? min(S, q0 + BR) : S;  // causal: no tile past the block's last row
    const int tiles = (kv_end + BC - 1) / BC;

    load_rows<BR>(Qs, Qh, q0, S);
    load_rows<BC>(Ks, Kh, 0, S);
    load_rows<BC>(Vs, Vh, 0, S);
    ptx::cp_async_commit();

    // O in the m64nNk16 D layout: o[4j + {0,1}] row g, columns 8j + 2t + {0,1}; o[4j + {2,3}]
    // the same at row g + 8 (rows of the warp's 16).
    float o[HEAD_DIM / 2];
#pragma unroll
    for (int i = 0; i < HEAD_DIM / 2; ++i) o[i] = 0.0f;
    float m[2] = {NEG_INF, NEG_INF}, l[2] = {0.0f, 0.0f};
    const int row[2] = {q0 + w0 + g, q0 + w0 + g + 8};
    const float scale2 = scale * LOG2E;

    for (int it = 0; it < tiles; ++it) {
        const int j0 = it * BC;
        ptx::cp_async_wait_group<0>();  // tile it (and Q) landed for this thread
        hopper::fence_proxy_async();    // ... and is visible to wgmma (the async proxy)
        __syncthreads();                 // ... for every thread; and every warpgroup is done with tile it - 1
        if (it + 1 < tiles) {            // the next tile into the stage tile it - 1 used
            const int st = (it + 1) % 2;
            load_rows<BC>(Ks + st * BC * HEAD_DIM, Kh, j0 + BC, S);
            load_rows<BC>(Vs + st * BC * HEAD_DIM, Vh, j0 + BC, S);
        }
        ptx::cp_async_commit();
        const unsigned stage = (it % 2) * STAGE;

        if (causal && j0 > q0 + wg * 64 + 63) continue;  // every row of this warpgroup precedes the tile

        // 1. S = Q K^T, raw (unscaled) scores of 64 rows x BC keys: s[4n + e] as 09's s[n][e].
        float s[BC / 2];
        hopper::wgmma_fence();  // the softmax of tile it - 1 read these registers
#pragma unroll
        for (int k = 0; k < HEAD_DIM / 16; ++k) {
            const unsigned long long a = hopper::desc_add(dq, kmajor_step<BR>(k));
            const unsigned long long b = hopper::desc_add(dk, stage + kmajor_step<BC>(k));
            hopper::wgmma_m64n64k16_ss(s, a, b, k > 0, elem());
        }
        hopper::wgmma_commit();
        hopper::wgmma_wait<0>();

        // 2-3. Masks on boundary tiles and the online softmax, as in 09; P packed as the A
        // registers of P V.
        float alpha[2], sum[2];
        softmax_step(s, m, alpha, sum, j0, S, causal, q0 + w0, row, t, scale2);
        unsigned pf[BC / 16][4];
        rescale_and_pack<elem>(o, l, alpha, sum, s, pf);

        // 4. O += P V: BC / 16 wgmma, P from registers, V from shared memory.
        hopper::wgmma_fence();  // the rescale wrote O, the packing wrote P
#pragma unroll
        for (int k = 0; k < BC / 16; ++k) wgmma_pv<elem>(o, pf[k], hopper::desc_add(dv, stage + v_step(k)));
        hopper::wgmma_commit();
        hopper::wgmma_wait<0>();  // before the barrier that lets the stage be refilled
    }
    ptx::cp_async_wait_all();  // only empty groups remain; nothing may land after exit

    write_output(o, l, row, t, O + base, S);
}

extern "C" __global__ void __launch_bounds__(THREADS, 2)
    attn_flash_wgmma_fp16(const __half *Q, const __half *K, const __half *V, float *O, int heads, int S, int D,
                          float scale, int causal) {
    flash_wgmma(Q, K, V, O, S, scale, causal);
}

extern "C" __global__ void __launch_bounds__(THREADS, 2)
    attn_flash_wgmma_bf16(const __nv_bfloat16 *Q, const __nv_bfloat16 *K, const __nv_bfloat16 *V, float *O,
                          int heads, int S, int D, float scale, int causal) {
    flash_wgmma(Q, K, V, O, S, scale, causal);
}
