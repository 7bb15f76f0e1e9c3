// 01_naive_fused.cu: the cautionary row (the "fused" kernel written first). One thread computes one
// output Y[row, col] = act(dot(X[row, :], W[col, :]) + bias[col]) in a serial loop over K.
//
// It is "fused" (one launch, Y written once) but its GEMM is naive: no tiling, no reuse, so
// every output reads 2K floats from global memory. Consecutive threads take consecutive
// columns, i.e. consecutive ROWS of W, K floats apart: the W loads of a warp do not coalesce.
// Such a kernel loses to cuBLAS's GEMM followed by a separate activation kernel (the `ref` row;
// the ladder's table measures by how much): fusing an epilogue only pays on top of a good GEMM
// (rungs 02 and 03).
// act: 0 = ReLU, 1 = GELU (tanh approximation), 2 = none. Any M, N, K: out-of-range threads
// store nothing.

__device__ __forceinline__ float activate(float x, int act) {
    if (act == 0) return fmaxf(x, 0.0f);
    if (act == 2) return x;
    const float c = 0.7978845608f;  // sqrt(2 / pi)
    return 0.5f * x * (1.0f + tanhf(c * (x + 0.044715f * x * x * x)));
}

extern "C" __global__ void linear_naive_fused(const float *X, const float *W, const float *bias,
                                              float *Y, int M, int N, int K, int act) {
    const long long idx = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= (long long)M * N) return;  // no barriers in this kernel: early exit is safe
    const int row = (int)(idx / N), col = (int)(idx % N);
    const float *x_row = X + (long long)row * K;
    const float *w_row = W + (long long)col * K;
    float acc = 0.0f;
    for (int k = 0; k < K; ++k) acc += x_row[k] * w_row[k];
    Y[idx] = activate(acc + bias[col], act);
}
