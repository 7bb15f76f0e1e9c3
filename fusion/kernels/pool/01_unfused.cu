// pool/01_unfused.cu: ReLU then P x P max pooling (stride P, no padding) as two kernels, as
// an eager framework runs a CNN's activation and pooling layers.
//
// pool_relu writes max(x, 0) for every element of x[B,C,H,W] to a scratch buffer of x's
// size, one thread per element; pool_max reads the scratch back and writes the maximum of
// each window, one thread per output. Per output that is the window's P x P inputs read,
// P x P activations written and read again, one output written: the activation makes a round
// trip through DRAM that the fused rung avoids. A partial window at the right or bottom edge
// (H or W not a multiple of P) is dropped, as PyTorch's MaxPool2d does by default; the ReLU
// kernel still writes those elements, since it does not know about windows.

extern "C" __global__ void pool_relu(const float *__restrict__ x, float *__restrict__ a,
                                     int B, int C, int H, int W) {
    const long i = (long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < (long)B * C * H * W) a[i] = fmaxf(x[i], 0.0f);
}

extern "C" __global__ void pool_max(const float *__restrict__ a, float *__restrict__ y, int B,
                                    int C, int H, int W, int P) {
    const int HO = H / P, WO = W / P;
    const long o = (long)blockIdx.x * blockDim.x + threadIdx.x;
    if (o >= (long)B * C * HO * WO) return;
    const int ow = (int)(o % WO), oh = (int)(o / WO % HO);
    const long plane = o / ((long)HO * WO);
    const float *win = a + plane * H * W + (long)oh * P * W + (long)ow * P;
    float m = win[0];
    for (int r = 0; r < P; ++r)
        for (int q = 0; q < P; ++q) m = fmaxf(m, win[r * W + q]);
    y[o] = m;
}
