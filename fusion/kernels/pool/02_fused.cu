// pool/02_fused.cu: rung 01's two kernels as one, the ReLU folded into the maximum.
//
// ReLU is monotonic, so max(relu(x1), ..., relu(xk)) = relu(max(x1, ..., xk)) =
// max(0, x1, ..., xk): starting the window's running maximum at 0 instead of at its first
// element is the whole ReLU. One thread per output reads its window of x once and writes
// one output: no scratch buffer, no second launch, and the elements no window covers (the
// edge rows and columns when H or W is not a multiple of P) are never read. Per output the
// thread makes the P x P comparisons of rung 01's pool_max; rung 01's comparison with 0 of
// every element is gone.

extern "C" __global__ void pool_fused(const float *__restrict__ x, float *__restrict__ y,
                                      int B, int C, int H, int W, int P) {
    const int HO = H / P, WO = W / P;
    const long o = (long)blockIdx.x * blockDim.x + threadIdx.x;
    if (o >= (long)B * C * HO * WO) return;
    const int ow = (int)(o % WO), oh = (int)(o / WO % HO);
    const long plane = o / ((long)HO * WO);
    const float *win = x + plane * H * W + (long)oh * P * W + (long)ow * P;
    float m = 0.0f;  // the ReLU
    for (int r = 0; r < P; ++r)
        for (int q = 0; q < P; ++q) m = fmaxf(m, win[r * W + q]);
    y[o] = m;
}
