// conv/01_direct.cu: the naive direct convolution, the first rung of the convolution ladder.
//
// One thread per output element y[b][m][oh][ow], consecutive threads along ow (so a warp's
// stores are coalesced). Each thread walks its C x K x K window and the matching filter
// weights straight from global memory: every input value is read by up to M*K*K threads and
// every weight by every thread of a feature map, with no reuse through shared memory.
// Valid convolution, stride 1: Ho = H - K + 1, Wo = W - K + 1. Tails: threads past the last
// output exit (there is no barrier), so any shape works.

extern "C" __global__ void conv_direct(const float *x, const float *f, float *y, int B, int C,
                                       int M, int H, int W, int K) {
    const int Ho = H - K + 1, Wo = W - K + 1;
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= B * M * Ho * Wo) return;
    const int ow = i % Wo;
    int t = i / Wo;
    const int oh = t % Ho;
    t /= Ho;
    const int m = t % M;
    const int b = t / M;

    float acc = 0.0f;
    for (int c = 0; c < C; ++c) {
        const float *xc = x + ((b * C + c) * H + oh) * W + ow;  // window origin
        const float *fc = f + (m * C + c) * K * K;
        for (int p = 0; p < K; ++p)
            for (int q = 0; q < K; ++q) acc += xc[p * W + q] * fc[p * K + q];
    }
    y[i] = acc;
}
