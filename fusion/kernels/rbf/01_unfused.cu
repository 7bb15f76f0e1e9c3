// rbf/01_unfused.cu: the radial-basis expansion with cosine cutoff as three kernels through
// scratch buffers, as a framework composing tensor operations runs it.
//
// out[n,k] = exp(-gamma (d_n - mu_k)^2) * fc(d_n), fc(d) = 0.5 (cos(pi d / r_c) + 1) for
// d < r_c, else 0; mu_k = k * step with step = r_c / (K - 1). rbf_expand writes the n x K
// Gaussians E to scratch, rbf_cutoff the n cutoffs C, rbf_multiply reads both and writes out.
// Per output: E written and read back, out written: 3 x 4 bytes where 4 would do (d and C are
// K times smaller). The output is the bulk of the traffic, so the chain is DRAM-bound.
// The cutoff's cosine is cospif(d / r_c): cos(pi x) takes its argument in periods, so the
// reduction is exact and has no slow path for large arguments, nor the stack frame that
// cosf(pi * d / r_c) keeps for one.

extern "C" __global__ void rbf_expand(const float *__restrict__ d, float *__restrict__ E,
                                      int n, int K, float step, float gamma) {
    const long i = (long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= (long)n * K) return;
    const float x = d[i / K] - (float)(i % K) * step;
    E[i] = expf(-gamma * x * x);
}

extern "C" __global__ void rbf_cutoff(const float *__restrict__ d, float *__restrict__ C, int n,
                                      float rc) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    const float v = d[i];
    C[i] = v < rc ? 0.5f * (cospif(v / rc) + 1.0f) : 0.0f;
}

extern "C" __global__ void rbf_multiply(const float *__restrict__ E, const float *__restrict__ C,
                                        float *__restrict__ out, int n, int K) {
    const long i = (long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < (long)n * K) out[i] = E[i] * C[i / K];
}
