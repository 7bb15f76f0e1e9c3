// 16_mma_double_buffer.cu: rung 15 with register double buffering of the fragments and a K
// step of 64.
//
// What changed since 15 and why it should be faster:
// - Register double buffering: in the source the ldmatrix of k16 step s + 1 comes before the
//   32 mma.sync of step s, into a second set of fragment registers, so that a warp's
//   tensor-core instructions need not wait on its own shared-memory loads, the latency hiding
//   that 8 warps per SM leave to each warp. ptxas had done much of it for 15 on its own: 15's
//   SASS issues 11 of a k-tile's 16 LDSM before the first HMMA and the rest among them, so
//   its loads hold the HMMA back only at the start of a k-tile, after the barrier; 16's SASS
//   issues 8 LDSM there, then the other 24 among its 128 HMMA.
// - BK = 64 (15: 32): four k16 steps per barrier instead of two, so the barrier, the wait and
//   the address arithmetic of the ring are paid half as often per mma. The ring shrinks to 3
//   stages to stay at two blocks per SM on an H100: 3 x 32 KB = 96 KB of dynamic shared
//   memory (an A100, 164 KB per SM, fits one).
// - A rows are now 128 B (8 chunks), so A's swizzle becomes chunk ^ (row & 7), like B's.
// The body is a template over the 16-bit type (FP16 here; rung 17 instantiates BF16): the
// copies move raw 16-bit codes, only the mma.sync differs. Tails as in 14 and 15: zero-filled
// copies, guarded 2-byte loads when K or N is not a multiple of 8, guarded stores of C. Every
// thread reaches every barrier; ldmatrix and mma.sync run on all 32 lanes of each warp.

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include "lab/ptx.h"

#define BM 128
#define BN 128
#define BK 64
#define STAGES 3
#define NTHREADS 128
#define KSTEPS (BK / 16)
#define A_STAGE (BM * BK)  // 16-bit elements
#define B_STAGE (BK * BN)

// Offsets, in elements, of the 16-byte chunk holding (r, c) (c a multiple of 8): the chunk
// index XORed with the row's low 3 bits, so 8 consecutive rows of one logical chunk sit in 8
// distinct bank groups (A rows are 128 B, B rows 256 B).
__device__ __forceinline__ int swz_a(int r, int c) { return r * BK + (((c >> 3) ^ (r & 7)) << 3); }
__device__ __forceinline__ int swz_b(int r, int c) { return r * BN + (((c >> 3) ^ (r & 7)) << 3); }

// Issues the copies of the k-tile at k0 into one stage: 8 chunks of A and 8 of B per thread.
__device__ __forceinline__ void load_tile(unsigned short *as, unsigned short *bs,
                                          const unsigned short *__restrict__ A,
                                          const unsigned short *__restrict__ B, int M, int N, int K,
                                          int row0, int col0, int k0, bool a_vec, bool b_vec) {
    const int tid = threadIdx.x;
#pragma unroll
    for (int i = 0; i < BM * BK / 8 / NTHREADS; ++i) {
        const int idx = tid + i * NTHREADS;
        const int r = idx / (BK / 8), c = (idx % (BK / 8)) * 8;
        const int gr = row0 + r, gk = k0 + c;
        unsigned short *dst = as + swz_a(r, c);
        if (a_vec) {
            const int bytes = gr < M ? 2 * max(0, min(8, K - gk)) : 0;
            ptx::cp_async_cg_zfill(ptx::smem_addr(dst), bytes > 0 ? A + (size_t)gr * K + gk : A, bytes);
        } else {
#pragma unroll
            for (int e = 0; e < 8; ++e) dst[e] = (gr < M && gk + e < K) ? A[(size_t)gr * K + gk + e] : 0;
        }
    }
#pragma unroll
    for (int i = 0; i < BK * BN / 8 / NTHREADS; ++i) {
        const int idx = tid + i * NTHREADS;
        const int r = idx / (BN / 8), c = (idx % (BN / 8)) * 8;
        const int gk = k0 + r, gc = col0 + c;
        unsigned short *dst = bs + swz_b(r, c);
        if (b_vec) {
            const int bytes = gk < K ? 2 * max(0, min(8, N - gc)) : 0;
            ptx::cp_async_cg_zfill(ptx::smem_addr(dst), bytes > 0 ? B + (size_t)gk * N + gc : B, bytes);
        } else {
#pragma unroll
            for (int e = 0; e < 8; ++e) dst[e] = (gk < K && gc + e < N) ? B[(size_t)gk * N + gc + e] : 0;
        }
    }
}

// The fragments of one k16 step of this warp's 64x64 tile: 4 A tiles (ldmatrix x4) and 8 B
// tiles (4 ldmatrix x4.trans, two n8 tiles each).
struct Frags {
    unsigned a[4][4], b[8][2];
};

__device__ __forceinline__ void load_frags(Frags &f, const unsigned short *as, const unsigned short *bs, int wm,
                                           int wn, int kk, int lane) {
    const int lrow = lane % 16, lchunk = (lane / 16) * 8;
#pragma unroll
    for (int i = 0; i < 4; ++i) ptx::ldmatrix_x4(f.a[i], ptx::smem_addr(as + swz_a(wm * 64 + i * 16 + lrow, kk + lchunk)));
#pragma unroll
    for (int p = 0; p < 4; ++p) {
        unsigned r[4];
        ptx::ldmatrix_x4_trans(r, ptx::smem_addr(bs + swz_b(kk + lrow, wn * 64 + p * 16 + lchunk)));
        f.b[2 * p][0] = r[0], f.b[2 * p][1] = r[1];
        f.b[2 * p + 1][0] = r[2], f.b[2 * p + 1][1] = r[3];
    }
}

template <bool BF16>
__device__ __forceinline__ void mma_step(float (&acc)[4][8][4], const Frags &f) {
#pragma unroll
    for (int i = 0; i < 4; ++i)
#pragma unroll
        for (int j = 0; j < 8; ++j) {
            if (BF16)
                ptx::mma_m16n8k16_bf16(acc[i][j], f.a[i], f.b[j], acc[i][j]);
            else
                ptx::mma_m16n8k16_f16(acc[i][j], f.a[i], f.b[j], acc[i][j]);
        }
}

template <bool BF16>
__device__ __forceinline__ void gemm_mma_body(const unsigned short *__restrict__ A,
                                              const unsigned short *__restrict__ B, float *__restrict__ C,
                                              int M, int N, int K, unsigned short *smem) {
    unsigned short *As = smem;
    unsigned short *Bs = smem + STAGES * A_STAGE;
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    const int wm = warp / 2, wn = warp % 2;
    const int row0 = blockIdx.y * BM, col0 = blockIdx.x * BN;
    const bool a_vec = K % 8 == 0 && (size_t)A % 16 == 0;
    const bool b_vec = N % 8 == 0 && (size_t)B % 16 == 0;
    const int tiles = (K + BK - 1) / BK;

    float acc[4][8][4];
#pragma unroll
    for (int i = 0; i < 4; ++i)
#pragma unroll
        for (int j = 0; j < 8; ++j)
#pragma unroll
            for (int e = 0; e < 4; ++e) acc[i][j][e] = 0.0f;

#pragma unroll
    for (int s = 0; s < STAGES - 1; ++s) {
        if (s < tiles)
            load_tile(As + s * A_STAGE, Bs + s * B_STAGE, A, B, M, N, K, row0, col0, s * BK, a_vec, b_vec);
        ptx::cp_async_commit();
    }

    Frags f[2];
    for (int kt = 0; kt < tiles; ++kt) {
        ptx::cp_async_wait_group<STAGES - 2>();
        __syncthreads();  // tile kt visible to all; every warp is done with tile kt - 1
        const int next = kt + STAGES - 1;
        if (next < tiles)
            load_tile(As + (next % STAGES) * A_STAGE, Bs + (next % STAGES) * B_STAGE, A, B, M, N, K, row0,
                      col0, next * BK, a_vec, b_vec);
        ptx::cp_async_commit();

        const unsigned short *as = As + (kt % STAGES) * A_STAGE;
        const unsigned short *bs = Bs + (kt % STAGES) * B_STAGE;
        load_frags(f[0], as, bs, wm, wn, 0, lane);
#pragma unroll
        for (int s = 0; s < KSTEPS; ++s) {
            // Fetch step s + 1 into the other buffer, then multiply step s: the loads are in
            // flight while the tensor cores work (fully unrolled, so f[] stays in registers).
            if (s + 1 < KSTEPS) load_frags(f[(s + 1) % 2], as, bs, wm, wn, (s + 1) * 16, lane);
            mma_step<BF16>(acc, f[s % 2]);
        }
    }
    ptx::cp_async_wait_all();  // only empty groups remain; nothing may land after exit

    const int g = lane / 4, t = lane % 4;
    const bool pairs = N % 2 == 0 && (size_t)C % 8 == 0;
#pragma unroll
    for (int i = 0; i < 4; ++i)
#pragma unroll
        for (int j = 0; j < 8; ++j)
#pragma unroll
            for (int h = 0; h < 2; ++h) {
                const int r = row0 + wm * 64 + i * 16 + g + 8 * h;
                const int c = col0 + wn * 64 + j * 8 + 2 * t;
                if (r >= M || c >= N) continue;
                float *dst = C + (size_t)r * N + c;
                if (pairs) {
                    *reinterpret_cast<float2 *>(dst) = make_float2(acc[i][j][2 * h], acc[i][j][2 * h + 1]);
                } else {
                    dst[0] = acc[i][j][2 * h];
                    if (c + 1 < N) dst[1] = acc[i][j][2 * h + 1];
                }
            }
}

extern __shared__ __align__(128) unsigned short gemm_smem[];

extern "C" __global__ void __launch_bounds__(NTHREADS)
    gemm_mma_double_buffer(const __half *__restrict__ A, const __half *__restrict__ B,
                           float *__restrict__ C, int M, int N, int K) {
    gemm_mma_body<false>(reinterpret_cast<const unsigned short *>(A),
                         reinterpret_cast<const unsigned short *>(B), C, M, N, K, gemm_smem);
}
