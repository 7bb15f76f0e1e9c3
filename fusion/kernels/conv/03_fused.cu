// conv/03_fused.cu: unroll, GEMM and permute fused into one kernel (implicit GEMM).
//
// What changed since 02_unroll_gemm and why it should be faster: the unrolled matrix is never
// written. The kernel still computes the product filter[M][C*K*K] x U[C*K*K][B*Ho*Wo], but
// each thread owns one column of U (one output pixel (b, oh, ow)) and gathers that column's
// values straight from the input image as it needs them; the result is stored straight into
// NCHW, so the permute disappears too. Per output that removes a write and a read of K*K*C
// unrolled values and a round trip of the GEMM output, and two launches per chunk.
// Reuse: a block of NT threads (NT pixels) works on BM feature maps. Every input value a
// thread loads goes into BM FMAs, one per accumulator (the BM accumulators stay in
// registers); the BM x BK tile of the filter is staged in shared memory, and each weight is
// read from there by all threads at once, as a broadcast.
// Tails: feature maps past M get zero weights and are not stored; threads past the last pixel
// load nothing and store nothing but still reach both barriers.

#define BM 16   // feature maps per block (blockIdx.y)
#define BK 64   // filter columns (c, p, q) staged per step
#define NT 256  // threads per block, one output pixel each

extern "C" __global__ void conv_fused(const float *x, const float *f, float *y, int B, int C,
                                      int M, int H, int W, int K) {
    __shared__ float fs[BM][BK];
    const int Ho = H - K + 1, Wo = W - K + 1, HoWo = Ho * Wo;
    const int KK = K * K, CKK = C * KK;
    const int col = blockIdx.x * NT + threadIdx.x;  // column (b, oh, ow) of the implicit U
    const int m0 = blockIdx.y * BM;
    const bool live = col < B * HoWo;
    const int b = live ? col / HoWo : 0, pix = live ? col % HoWo : 0;
    const int oh = pix / Wo, ow = pix % Wo;
    const float *xw = x + (b * C * H + oh) * W + ow;  // this pixel's window in channel 0

    float acc[BM];
#pragma unroll
    for (int i = 0; i < BM; ++i) acc[i] = 0.0f;

    for (int k0 = 0; k0 < CKK; k0 += BK) {
        for (int i = threadIdx.x; i < BM * BK; i += NT) {
            const int r = i / BK, kk = i % BK;
            fs[r][kk] = (m0 + r < M && k0 + kk < CKK) ? f[(m0 + r) * CKK + k0 + kk] : 0.0f;
        }
        __syncthreads();  // the filter tile is complete
        const int kend = min(BK, CKK - k0);
        for (int kk = 0; kk < kend; ++kk) {
            // The unrolled matrix's element U[k][col], computed instead of loaded.
            const int k = k0 + kk, c = k / KK, r = k % KK, p = r / K, q = r % K;
            const float v = live ? xw[(c * H + p) * W + q] : 0.0f;
#pragma unroll
            for (int i = 0; i < BM; ++i) acc[i] += fs[i][kk] * v;
        }
        __syncthreads();  // everyone is done with the tile before it is overwritten
    }
    if (!live) return;
    // The permute, fused: row m of the product goes straight to y[b][m][oh][ow].
#pragma unroll
    for (int i = 0; i < BM; ++i)
        if (m0 + i < M) y[(b * M + m0 + i) * HoWo + pix] = acc[i];
}
