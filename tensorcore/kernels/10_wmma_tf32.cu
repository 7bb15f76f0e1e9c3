// 10_wmma_tf32.cu: tensor cores through WMMA, TF32 inputs, FP32 accumulation.
//
// What changed since rung 07 (warp tiling on CUDA cores, its parent) and why it should be faster:
// the FMAs move from CUDA cores to tensor cores. One wmma::mma_sync on a warp multiplies a 16x8
// tile of A by an 8x16 tile of B into a 16x16 FP32 accumulator (m16n16k8), several times the
// throughput of the FP32 pipes, at the price of rounding A and B to TF32 (10-bit mantissa, relative
// error about 2^-11 per input: the TF32 tolerance of the table).
// Layout: a block of 4 warps (128 threads) computes a 64x64 tile of C; each warp owns a 32x32
// quarter (2x2 accumulator fragments). K advances in steps of BK = 16 (two k8 steps), the A
// and B tiles staged in shared memory with zero padding outside the matrix, so any M, N, K
// works. The fragments are converted with wmma::__float_to_tf32 after loading.
// Tails on store: a fragment is written to shared memory (store_matrix_sync), then the block
// copies only the in-range part of its 64x64 tile to C.
// WMMA pointers must be 256-bit aligned and ldm a multiple of 4 floats: the padded leading
// dimensions (20, 68) keep every fragment origin on a 32-byte boundary.
// Every thread reaches every barrier; mma_sync is executed by all 32 lanes of each warp.
// What the sm_90 SASS shows (NVRTC 13.0): each m16n16k8 mma_sync is 4 HMMA.1684.F32.TF32,
// 32 per K step of 16. The fragments come from shared memory through 32 generic LD.E per
// thread and step (not LDS, not ldmatrix: NVRTC's TF32 load_matrix_sync loses the shared
// address space here), and __float_to_tf32 costs 2 instructions per value (a finite test and
// a rounding integer add). Staging is scalar: one float per LDG.E.CONSTANT and per STS; at
// each K step a thread stages 8 floats of A's tile and 8 of B's. These are the costs the row
// carries besides the tensor cores.

#include <mma.h>
using namespace nvcuda;

#define BM 64
#define BN 64
#define BK 16
#define LDA (BK + 4)  // padding staggers the rows across banks
#define LDB (BN + 4)
#define LDC (BN + 4)
#define NTHREADS 128

extern "C" __global__ void gemm_wmma_tf32(const float *__restrict__ A,
                                          const float *__restrict__ B,
                                          float *__restrict__ C, int M, int N, int K) {
    __shared__ __align__(32) float As[BM * LDA];
    __shared__ __align__(32) float Bs[BK * LDB];
    __shared__ __align__(32) float Cs[BM * LDC];

    const int tid = threadIdx.x, warp = tid / 32;
    const int wm = warp / 2, wn = warp % 2;  // this warp's 32x32 quarter of the block tile
    const int row0 = blockIdx.y * BM, col0 = blockIdx.x * BN;

    wmma::fragment<wmma::accumulator, 16, 16, 8, float> acc[2][2];
#pragma unroll
    for (int i = 0; i < 2; ++i)
#pragma unroll
        for (int j = 0; j < 2; ++j) wmma::fill_fragment(acc[i][j], 0.0f);

    for (int k0 = 0; k0 < K; k0 += BK) {
        for (int idx = tid; idx < BM * BK; idx += NTHREADS) {
            const int r = idx / BK, c = idx % BK;
            const int gr = row0 + r, gk = k0 + c;
            As[r * LDA + c] = (gr < M && gk < K) ? A[gr * K + gk] : 0.0f;
        }
        for (int idx = tid; idx < BK * BN; idx += NTHREADS) {
            const int r = idx / BN, c = idx % BN;
            const int gk = k0 + r, gc = col0 + c;
            Bs[r * LDB + c] = (gk < K && gc < N) ? B[gk * N + gc] : 0.0f;
        }
        __syncthreads();  // tiles complete

#pragma unroll
        for (int kk = 0; kk < BK; kk += 8) {
            wmma::fragment<wmma::matrix_a, 16, 16, 8, wmma::precision::tf32, wmma::row_major> a[2];
            wmma::fragment<wmma::matrix_b, 16, 16, 8, wmma::precision::tf32, wmma::row_major> b[2];
#pragma unroll
            for (int i = 0; i < 2; ++i) {
                wmma::load_matrix_sync(a[i], &As[(wm * 32 + i * 16) * LDA + kk], LDA);
#pragma unroll
                for (int t = 0; t < a[i].num_elements; ++t) a[i].x[t] = wmma::__float_to_tf32(a[i].x[t]);
            }
#pragma unroll
            for (int j = 0; j < 2; ++j) {
                wmma::load_matrix_sync(b[j], &Bs[kk * LDB + wn * 32 + j * 16], LDB);
#pragma unroll
                for (int t = 0; t < b[j].num_elements; ++t) b[j].x[t] = wmma::__float_to_tf32(b[j].x[t]);
            }
#pragma unroll
            for (int i = 0; i < 2; ++i)
#pragma unroll
                for (int j = 0; j < 2; ++j) wmma::mma_sync(acc[i][j], a[i], b[j], acc[i][j]);
        }
        __syncthreads();  // reads done before the next tiles overwrite them
    }

#pragma unroll
    for (int i = 0; i < 2; ++i)
#pragma unroll
        for (int j = 0; j < 2; ++j)
            wmma::store_matrix_sync(&Cs[(wm * 32 + i * 16) * LDC + wn * 32 + j * 16], acc[i][j],
                                    LDC, wmma::mem_row_major);
    __syncthreads();  // the whole 64x64 tile is in Cs
    for (int idx = tid; idx < BM * BN; idx += NTHREADS) {
        const int r = idx / BN, c = idx % BN;
        const int gr = row0 + r, gc = col0 + c;
        if (gr < M && gc < N) C[gr * N + gc] = Cs[r * LDC + c];
    }
}
