// layernorm/01_naive.cu: Y = (x - mean) / sqrt(var + eps) * gamma + beta for each row of
// X[M,N], one thread per row.
//
// The textbook loop, as a CPU would run it: the thread walks its row three times, first to
// sum it (the mean), then to sum the squared deviations from that mean (the biased variance,
// two passes rather than sum and sum of squares, which cancel in f32 when the mean is large
// against the spread), then to normalize, scale by gamma, shift by beta and store. Each sum is
// a serial chain of dependent adds.
//
// Two things hold it back on a GPU. Only M threads exist, one per row, so a few thousand rows
// give a few warps per SM with nothing to hide their load latency. And the 32 lanes of a warp
// work on 32 different rows: one load instruction touches 32 addresses N floats apart, 32
// separate cache lines, where a coalesced load touches one.

#define LAYERNORM_EPS 1e-5f

extern "C" __global__ void layernorm_naive(const float *__restrict__ X,
                                           const float *__restrict__ gamma,
                                           const float *__restrict__ beta,
                                           float *__restrict__ Y, int M, int N) {
    const int row = blockIdx.x * blockDim.x + threadIdx.x;
    if (row >= M) return;
    const float *x = X + (long)row * N;
    float *y = Y + (long)row * N;
    float sum = 0.0f;
    for (int j = 0; j < N; ++j) sum += x[j];
    const float mean = sum / N;
    float sq = 0.0f;
    for (int j = 0; j < N; ++j) {
        const float d = x[j] - mean;
        sq += d * d;
    }
    const float rstd = rsqrtf(sq / N + LAYERNORM_EPS);
    for (int j = 0; j < N; ++j) y[j] = (x[j] - mean) * rstd * gamma[j] + beta[j];
}
