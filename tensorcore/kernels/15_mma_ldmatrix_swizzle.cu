// 15_mma_ldmatrix_swizzle.cu: mma.sync m16n8k16 fed by ldmatrix from an XOR-swizzled
// shared-memory ring.
//
// What changed since 14 (WMMA, padded rows), and why to expect about the same speed:
// - mma.sync instead of WMMA: the fragment layouts are documented (PTX ISA, "Matrix Fragments
//   for mma.m16n8k16"), so the kernel loads them itself with ldmatrix, one instruction per
//   16x16 A tile or 16x16 B pair, and writes C straight from the accumulator registers (no
//   trip through shared memory: 14's epilogue, 64 KiB of accumulators stored to shared memory
//   and read back per tile, and its barrier are gone).
// - ldmatrix reads eight 16-byte rows per 8x8 matrix in one shared-memory wavefront when the
//   eight rows fall into eight different 16-byte bank groups. Unpadded tiles put them in the
//   same groups: A rows are 64 B (BK = 32 halves), so rows r and r + 2 share banks (4-way
//   conflict); B rows are 256 B, so all eight k rows of a column chunk share banks (8-way).
//   14 padded the rows by 16 bytes instead (A rows 80 B, B rows 272 B: 5 and 17 bank groups,
//   both odd, so eight consecutive rows already fall in eight distinct groups, and every row
//   stays 16-byte aligned); the padding keeps ldmatrix conflict-free but costs space (75776 B
//   against 65536 B), and its cp.async copies of A conflict: a quarter-warp's eight 16-byte
//   chunks are two rows' four, 80 bytes apart, so the last lands on the first's banks. Here
//   the 16-byte chunk index is XORed with the row instead:
//     A (4 chunks per row):  chunk ^ ((row >> 1) & 3)   rows 2j, 2j+1 form one 128-byte line
//     B (16 chunks per row): chunk ^ (row & 7)
//   Eight consecutive rows at one logical chunk then land in eight distinct bank groups, and
//   a cp.async chunk (16 B) is still contiguous, so the copies keep their width.
// Expect about 1.0x against 14: neither layout has ldmatrix conflicts, and WMMA FP16 already
// compiles to ldmatrix and HMMA.16816, so the main loops issue the same 64 HMMA, 16 LDSM and
// 8 LDGSTS per k-tile (32 LDGSTS in each function with the ring's prologue; `harness inspect
// --sass`); what differs is the epilogue (C from the accumulator
// registers here, through shared memory in 14) and 15's documented fragment layouts, which
// 16 and 17 build on.
// Layout as in 14: 128x128 block tile, 4 warps of 64x64 (4 m16 x 8 n8 accumulator tiles, 128
// FP32 registers per thread), BK = 32, a 4-stage cp.async ring (4 x 16 KB = 64 KB dynamic),
// zero-filled copies for row and column tails and guarded 2-byte loads when K or N is not a
// multiple of 8. Every thread reaches every barrier; every ldmatrix and mma.sync is executed by
// all 32 lanes of each warp.

#include <cuda_fp16.h>
#include "lab/ptx.h"

#define BM 128
#define BN 128
#define BK 32
#define STAGES 4
#define NTHREADS 128
#define A_STAGE (BM * BK)  // halves
#define B_STAGE (BK * BN)

// Offsets, in halves, of the 16-byte chunk holding element (r, c) (c a multiple of 8).
__device__ __forceinline__ int swz_a(int r, int c) { return r * BK + (((c >> 3) ^ ((r >> 1) & 3)) << 3); }
__device__ __forceinline__ int swz_b(int r, int c) { return r * BN + (((c >> 3) ^ (r & 7)) << 3); }

// Issues the copies of the k-tile at k0 into one stage (`as`, `bs`): 4 chunks of A and 4 of B
// per thread. Elements are handled as raw 16-bit codes (zero is all-zero bits).
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

extern "C" __global__ void __launch_bounds__(NTHREADS)
    gemm_mma_ldmatrix(const __half *__restrict__ Ah, const __half *__restrict__ Bh,
                      float *__restrict__ C, int M, int N, int K) {
    extern __shared__ __align__(128) unsigned short smem[];
    unsigned short *As = smem;
    unsigned short *Bs = smem + STAGES * A_STAGE;
    const unsigned short *A = reinterpret_cast<const unsigned short *>(Ah);
    const unsigned short *B = reinterpret_cast<const unsigned short *>(Bh);

    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    const int wm = warp / 2, wn = warp % 2;  // this warp's 64x64 quarter of the block tile
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

    // ldmatrix row addresses: lane l points at row l % 16 of a 16-row slab and its chunk l / 16
    // (A: rows = m, x4 = the four 8x8 quarters in a0..a3 order; B: rows = k, .trans, x4 = k
    // halves 0-7 and 8-15 of two n8 tiles, i.e. b0, b1 of tile 2p and b0, b1 of tile 2p + 1).
    const int lrow = lane % 16, lchunk = (lane / 16) * 8;

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
#pragma unroll
        for (int kk = 0; kk < BK; kk += 16) {
            unsigned a[4][4], b[8][2];
#pragma unroll
            for (int i = 0; i < 4; ++i)
                ptx::ldmatrix_x4(a[i], ptx::smem_addr(as + swz_a(wm * 64 + i * 16 + lrow, kk + lchunk)));
#pragma unroll
            for (int p = 0; p < 4; ++p) {
                unsigned r[4];
                ptx::ldmatrix_x4_trans(r, ptx::smem_addr(bs + swz_b(kk + lrow, wn * 64 + p * 16 + lchunk)));
                b[2 * p][0] = r[0], b[2 * p][1] = r[1];
                b[2 * p + 1][0] = r[2], b[2 * p + 1][1] = r[3];
            }
#pragma unroll
            for (int i = 0; i < 4; ++i)
#pragma unroll
                for (int j = 0; j < 8; ++j) ptx::mma_m16n8k16_f16(acc[i][j], a[i], b[j], acc[i][j]);
        }
    }
    ptx::cp_async_wait_all();  // only empty groups remain; nothing may land after exit

    // C straight from the accumulators: lane (g, t) holds rows g and g + 8, columns 2t, 2t + 1
    // of each m16n8 tile. Pairs go out as float2 when N is even (then 2t < N implies 2t+1 < N).
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
