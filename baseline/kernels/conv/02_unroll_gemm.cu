// conv/02_unroll_gemm.cu: unroll (im2col) -> GEMM -> permute, three kernels per chunk.
//
// What changed since 01_direct and why: the convolution becomes a matrix product, so the
// shared-memory tiled GEMM of the GEMM ladder (rung 02, baseline/kernels/02_tiled.cu,
// launched unchanged between these two kernels) does the arithmetic with shared-memory reuse. For a chunk of Bc images:
//   conv_unroll:  U[C*K*K][Bc*Ho*Wo], column (b, oh, ow) holds that output's input window;
//   gemm_tiled:   G[M][Bc*Ho*Wo] = filter[M][C*K*K] * U (the filter is already row-major);
//   conv_permute: y[b][m][oh][ow] = G[m][(b, oh, ow)], back to NCHW.
// The price: U repeats every input value K*K times and G makes a round trip through memory.
// U for batch 10000 of the shape 1x4x86x86x7 would be 12.5 GB, so the plan walks the batch
// in chunks whose U and G fit a fixed scratch budget (pointer offsets per chunk).
// One thread per element, consecutive threads along the contiguous index of the buffer they
// write; threads past the end exit (no barriers), so any shape works.

extern "C" __global__ void conv_unroll(const float *x, float *U, int Bc, int C, int H, int W,
                                       int K) {
    const int Ho = H - K + 1, Wo = W - K + 1;
    const int N = Bc * Ho * Wo;  // columns of U
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= C * K * K * N) return;
    const int col = i % N, row = i / N;
    const int ow = col % Wo, oh = (col / Wo) % Ho, b = col / (Wo * Ho);
    const int q = row % K, p = (row / K) % K, c = row / (K * K);
    U[i] = x[((b * C + c) * H + oh + p) * W + ow + q];
}

extern "C" __global__ void conv_permute(const float *G, float *y, int Bc, int M, int HoWo) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= Bc * M * HoWo) return;
    const int pix = i % HoWo, m = (i / HoWo) % M, b = i / (HoWo * M);
    y[i] = G[m * (Bc * HoWo) + b * HoWo + pix];
}
