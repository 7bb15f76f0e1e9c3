// eltwise/01_unfused.cu: Y = GELU(X + b) + R as three kernels, one per operation,
// one thread per element, the intermediates in scratch buffers.
//
// This is how an eager framework runs the chain: every operation is its own launch and its
// result a full M x N tensor in DRAM. Per element the three launches read X and b, write T1;
// read T1, write T2; read T2 and R, write Y: 7 x 4 bytes (the bias is cached), against the
// 3 x 4 bytes the chain needs. The arithmetic is a dozen FLOPs per element, so every launch
// is bound by DRAM bandwidth and the chain costs ~7/3 of the fused kernel, plus two launches.
// GELU uses the tanh approximation, as PyTorch's gelu(approximate="tanh").

extern "C" __global__ void eltwise_bias_add(const float *__restrict__ X,
                                            const float *__restrict__ bias,
                                            float *__restrict__ T, int M, int N) {
    const long i = (long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < (long)M * N) T[i] = X[i] + bias[i % N];
}

extern "C" __global__ void eltwise_gelu(const float *__restrict__ T, float *__restrict__ U,
                                        int M, int N) {
    const long i = (long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < (long)M * N) {
        const float x = T[i];
        const float c = 0.7978845608f;  // sqrt(2 / pi)
        U[i] = 0.5f * x * (1.0f + tanhf(c * (x + 0.044715f * x * x * x)));
    }
}

extern "C" __global__ void eltwise_residual_add(const float *__restrict__ U,
                                                const float *__restrict__ R,
                                                float *__restrict__ Y, int M, int N) {
    const long i = (long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < (long)M * N) Y[i] = U[i] + R[i];
}
