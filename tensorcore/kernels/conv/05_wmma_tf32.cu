// conv/05_wmma_tf32.cu: the fused implicit GEMM of rung 04 on tensor cores (WMMA, TF32).
//
// What changed since 04_restrict_unroll and why it should be faster: the FMAs move to the
// tensor cores. A block of 4 warps computes a 16 (feature maps) x 128 (output pixels) tile
// of the product filter[M][C*K*K] x U[C*K*K][B*Ho*Wo]. Per step of BK = 16 taps:
//   - the 16 x 16 filter tile is staged in shared memory (zero past M and past C*K*K);
//   - the 16 x 128 tile of the unrolled matrix U is gathered from the input straight into
//     shared memory (each thread owns one pixel, one column, and fills its 16 rows), so U
//     still never exists in global memory;
//   - each warp multiplies the filter fragment by two 8x16 U fragments per k8 (m16n16k8,
//     inputs rounded with wmma::__float_to_tf32, FP32 accumulation).
// The accumulators go through shared memory and each thread stores its pixel's 16 maps into
// NCHW (the fused permute), guarded against M and the last pixel.
// Kept from rung 04: __restrict__ and the compile-time filter size and channels (KS, CIN), so
// decoding a tap index into (c, p, q) divides by constants. C*K*K is padded with zeros to a
// multiple of 16, M to a multiple of 16: the first layer (M = 4, C*K*K = 49) wastes
// most of each MMA, which tensor-core throughput can afford; the loads are what count.
// WMMA pointers are 32-byte aligned and ldm a multiple of 4 floats (LDA 20, LDB 132).

#include <mma.h>
using namespace nvcuda;

#if !defined(KS) || !defined(CIN)
#error "compile with -D KS=<filter size> -D CIN=<input channels>"
#endif

#define KK (KS * KS)
#define CKK (CIN * KK)
#define BM 16
#define BN 128
#define BK 16
#define LDA (BK + 4)
#define LDB (BN + 4)
#define NTHREADS 128

extern "C" __global__ void conv_wmma_tf32(const float *__restrict__ x,
                                          const float *__restrict__ f,
                                          float *__restrict__ y, int B, int C, int M, int H,
                                          int W, int K) {
    __shared__ __align__(32) float As[BM * LDA];
    __shared__ __align__(32) float Bs[BK * LDB];  // also the output staging tile at the end

    const int tid = threadIdx.x, warp = tid / 32;
    const int Ho = H - KS + 1, Wo = W - KS + 1, HoWo = Ho * Wo;
    const int col = blockIdx.x * BN + tid;  // this thread's pixel: one column of U
    const int m0 = blockIdx.y * BM;
    const bool live = col < B * HoWo;
    const int b = live ? col / HoWo : 0, pix = live ? col % HoWo : 0;
    const int oh = pix / Wo, ow = pix % Wo;
    const float *xw = x + (b * CIN * H + oh) * W + ow;

    wmma::fragment<wmma::accumulator, 16, 16, 8, float> acc[2];
    wmma::fill_fragment(acc[0], 0.0f);
    wmma::fill_fragment(acc[1], 0.0f);

    for (int k0 = 0; k0 < CKK; k0 += BK) {
        for (int i = tid; i < BM * BK; i += NTHREADS) {
            const int r = i / BK, kc = i % BK, k = k0 + kc;
            As[r * LDA + kc] = (m0 + r < M && k < CKK) ? f[(m0 + r) * CKK + k] : 0.0f;
        }
#pragma unroll
        for (int r = 0; r < BK; ++r) {
            const int k = k0 + r, c = k / KK, t = k % KK;
            Bs[r * LDB + tid] = (live && k < CKK) ? xw[(c * H + t / KS) * W + t % KS] : 0.0f;
        }
        __syncthreads();  // both tiles complete

#pragma unroll
        for (int kk = 0; kk < BK; kk += 8) {
            wmma::fragment<wmma::matrix_a, 16, 16, 8, wmma::precision::tf32, wmma::row_major> a;
            wmma::load_matrix_sync(a, &As[kk], LDA);
#pragma unroll
            for (int t = 0; t < a.num_elements; ++t) a.x[t] = wmma::__float_to_tf32(a.x[t]);
#pragma unroll
            for (int j = 0; j < 2; ++j) {
                wmma::fragment<wmma::matrix_b, 16, 16, 8, wmma::precision::tf32, wmma::row_major> bf;
                wmma::load_matrix_sync(bf, &Bs[kk * LDB + warp * 32 + j * 16], LDB);
#pragma unroll
                for (int t = 0; t < bf.num_elements; ++t) bf.x[t] = wmma::__float_to_tf32(bf.x[t]);
                wmma::mma_sync(acc[j], a, bf, acc[j]);
            }
        }
        __syncthreads();  // reads done before the next tiles overwrite them
    }

    // Bs is free: stage the 16 x 128 result there (BK == BM rows of LDB floats).
#pragma unroll
    for (int j = 0; j < 2; ++j)
        wmma::store_matrix_sync(&Bs[warp * 32 + j * 16], acc[j], LDB, wmma::mem_row_major);
    __syncthreads();  // the whole tile is staged
    if (!live) return;
#pragma unroll
    for (int r = 0; r < BM; ++r)
        if (m0 + r < M) y[(b * M + m0 + r) * HoWo + pix] = Bs[r * LDB + tid];
}
