// 13_flash_wgmma_overlap.cu: rung 11 with each warpgroup's softmax running while its own
// wgmma compute (sm_90a only).
//
// What changed since 11 and why it should be faster:
// - In 11 a warpgroup works in lock step: it issues S = Q K^T and waits for it, computes the
//   softmax with the tensor cores idle (for this warpgroup), issues O += P V and waits again.
//   The overlap of softmax with tensor work is left to other warpgroups on the SM.
// - Here a warpgroup issues the scores of the next tile and then P V of this one, back to back,
//   and waits only for the scores (wgmma.wait_group 1: P V may still run): the next tile's
//   masks, maximum and exponentials are computed while P V runs. It then waits for P V before
//   it touches O (the rescale) or P's registers (the next packing), which P V reads. This is
//   FlashAttention-3's pipelining inside a warpgroup.
// - The scores of tile t + 1 are computed while tile t's V is still read, so K and V have
//   three stages (11: two): tile t + 2 is copied into the stage of tile t - 1, which every
//   warpgroup finished at the end of the previous step. At HEAD_DIM 128 the stages and Q take
//   128 KB (129 KB with the alignment slack): one block per SM (__launch_bounds__(256, 1),
//   two warpgroups), so each warpgroup overlaps its own work instead of relying on a second
//   block.
// - A warpgroup stops at its own last tile (causal), counted before the loop, since its scores
//   are now a tile ahead; every thread still reaches every barrier.
// In the SASS (sm_90a) the tile loop waits for wgmma once with one group left in flight
// (WARPGROUP.DEPBAR.LE gsb0, 0x1) and once for all.
// This file is compiled after rung 11's source (the plan appends it): its constants, swizzled
// copies, descriptors, softmax step, P V product and store are 11's as they stand.

#define STAGES 3

template <class elem>
__device__ __forceinline__ void flash_wgmma_overlap(const elem *Q, const elem *K, const elem *V, float *O, int S,
                                                    float scale, int causal) {
    extern __shared__ unsigned char smem_raw[];
    const unsigned pad = (1024 - (hopper::smem(smem_raw) & 1023)) & 1023;
    elem *Qs = reinterpret_cast<elem *>(smem_raw + pad);  // [BR x HEAD_DIM], swizzled
    elem *Ks = Qs + BR * HEAD_DIM;                        // [STAGES][BC x HEAD_DIM]
    elem *Vs = Ks + STAGES * BC * HEAD_DIM;               // [STAGES][BC x HEAD_DIM]

    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int g = lane / 4, t = lane % 4;
    const int wg = __shfl_sync(0xffffffffu, threadIdx.x / 128, 0);
    const int h = blockIdx.y;
    const int q0 = blockIdx.x * BR;
    const int w0 = warp * 16;
    const long long base = lab_at(h, 0, (long long)S * HEAD_DIM);
    const elem *Qh = Q + base, *Kh = K + base, *Vh = V + base;

    constexpr unsigned STAGE = BC * HEAD_DIM * 2;
    const unsigned long long dq = kmajor_desc(Qs, wg * 64), dk = kmajor_desc(Ks, 0), dv = v_desc(Vs);

    const int kv_end = causal ? min(S, q0 + BR) : S;
    const int tiles = (kv_end + BC - 1) / BC;
    // The warpgroup's own tiles: causal rows stop at the tile of their last row.
    const int mine = causal ? min(tiles, (q0 + wg * 64 + 63) / BC + 1) : tiles;

    // Q and tile 0, then tile 1: two groups in flight.
    load_rows<BR>(Qs, Qh, q0, S);
    load_rows<BC>(Ks, Kh, 0, S);
    load_rows<BC>(Vs, Vh, 0, S);
    ptx::cp_async_commit();
    if (tiles > 1) {
        load_rows<BC>(Ks + BC * HEAD_DIM, Kh, BC, S);
        load_rows<BC>(Vs + BC * HEAD_DIM, Vh, BC, S);
    }
    ptx::cp_async_commit();

    float o[HEAD_DIM / 2];
#pragma unroll
    for (int i = 0; i < HEAD_DIM / 2; ++i) o[i] = 0.0f;
    float m[2] = {NEG_INF, NEG_INF}, l[2] = {0.0f, 0.0f}, alpha[2], sum[2];
    const int row[2] = {q0 + w0 + g, q0 + w0 + g + 8};
    const float scale2 = scale * LOG2E;
    float s[BC / 2];
    unsigned pf[BC / 16][4];

    // S = Q K^T of tile `tile` into s: HEAD_DIM / 16 wgmma, the first overwriting, one group.
    auto issue_scores = [&](int tile) {
        const unsigned stage = (tile % STAGES) * STAGE;
#pragma unroll
        for (int k = 0; k < HEAD_DIM / 16; ++k) {
            const unsigned long long a = hopper::desc_add(dq, kmajor_step<BR>(k));
            const unsigned long long b = hopper::desc_add(dk, stage + kmajor_step<BC>(k));
            hopper::wgmma_m64n64k16_ss(s, a, b, k > 0, elem());
        }
        hopper::wgmma_commit();
    };

    // Tile 0's scores and P, before the loop.
    ptx::cp_async_wait_group<1>();  // Q and tile 0 landed for this thread
    hopper::fence_proxy_async();
    __syncthreads();
    if (mine > 0) {
        hopper::wgmma_fence();
        issue_scores(0);
        hopper::wgmma_wait<0>();
        hopper::fence_operands(s);
        softmax_step(s, m, alpha, sum, 0, S, causal, q0 + w0, row, t, scale2);
        rescale_and_pack<elem>(o, l, alpha, sum, s, pf);
    }

    for (int it = 0; it < tiles; ++it) {
        ptx::cp_async_wait_group<0>();  // tile it + 1 landed for this thread
        hopper::fence_proxy_async();
        __syncthreads();  // ... for every thread; every warpgroup is done with tile it - 1
        if (it + 2 < tiles) {  // tile it + 2 into the stage of tile it - 1
            const int st = (it + 2) % STAGES;
            load_rows<BC>(Ks + st * BC * HEAD_DIM, Kh, (it + 2) * BC, S);
            load_rows<BC>(Vs + st * BC * HEAD_DIM, Vh, (it + 2) * BC, S);
        }
        ptx::cp_async_commit();
        if (it >= mine) continue;  // past this warpgroup's last tile (causal)

        // The next tile's scores, then this tile's P V; wait for the scores only. On its last
        // tile a warpgroup recomputes that tile's scores and discards them: every step is the
        // same sequence of wgmma groups, which ptxas needs to keep them in flight (with the
        // scores issued only when a next tile exists it serialized every wgmma of the kernel).
        const bool next = it + 1 < mine;
        hopper::wgmma_fence();  // the packing wrote P, the rescale O
        issue_scores(next ? it + 1 : it);
        const unsigned stage = (it % STAGES) * STAGE;
#pragma unroll
        for (int k = 0; k < BC / 16; ++k) wgmma_pv<elem>(o, pf[k], hopper::desc_add(dv, stage + v_step(k)));
        hopper::wgmma_commit();
        hopper::wgmma_wait<1>();  // the scores landed; P V may still run
        hopper::fence_operands(s);
        if (next) softmax_step(s, m, alpha, sum, (it + 1) * BC, S, causal, q0 + w0, row, t, scale2);
        hopper::wgmma_wait<0>();  // P V done: O and P's registers are free
        hopper::fence_operands(o);
        if (next) rescale_and_pack<elem>(o, l, alpha, sum, s, pf);
    }
    ptx::cp_async_wait_all();
    write_output(o, l, row, t, O + base, S);
}

extern "C" __global__ void __launch_bounds__(THREADS, 1)
    attn_flash_wgmma_overlap_fp16(const __half *Q, const __half *K, const __half *V, float *O, int heads, int S,
                                  int D, float scale, int causal) {
    flash_wgmma_overlap(Q, K, V, O, S, scale, causal);
}

extern "C" __global__ void __launch_bounds__(THREADS, 1)
    attn_flash_wgmma_overlap_bf16(const __nv_bfloat16 *Q, const __nv_bfloat16 *K, const __nv_bfloat16 *V,
                                  float *O, int heads, int S, int D, float scale, int causal) {
    flash_wgmma_overlap(Q, K, V, O, S, scale, causal);
}
