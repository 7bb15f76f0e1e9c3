// bias_act.cu: the epilogue a network's GEMM layers need when the GEMM is a ladder rung that
// writes only C = A B: Y = act(C + bias) and, with a residual, Y = act(C + bias) + R. One
// thread per element in a grid-stride loop; the bias index is the column (element % N).
// act: 0 = ReLU, 1 = GELU (tanh approximation), 2 = none. Fusing this epilogue into the GEMM
// is the linear ladder's lesson (linear rung 03); here it stays apart, so that swapping the
// GEMM rung swaps the GEMM alone.

__device__ __forceinline__ float activate(float x, int act) {
    if (act == 0) return fmaxf(x, 0.0f);
    if (act == 2) return x;
    const float c = 0.7978845608f;  // sqrt(2 / pi)
    return 0.5f * x * (1.0f + tanhf(c * (x + 0.044715f * x * x * x)));
}

extern "C" __global__ void net_bias_act(const float *__restrict__ C,
                                        const float *__restrict__ bias,
                                        float *__restrict__ Y, int rows, int N, int act) {
    const long long total = (long long)rows * N;
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < total;
         i += (long long)gridDim.x * blockDim.x)
        Y[i] = activate(C[i] + bias[i % N], act);
}

extern "C" __global__ void net_bias_act_residual(const float *__restrict__ C,
                                                 const float *__restrict__ bias,
                                                 const float *__restrict__ R,
                                                 float *__restrict__ Y, int rows, int N,
                                                 int act) {
    const long long total = (long long)rows * N;
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < total;
         i += (long long)gridDim.x * blockDim.x)
        Y[i] = activate(C[i] + bias[i % N], act) + R[i];
}
