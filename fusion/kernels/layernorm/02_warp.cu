// layernorm/02_warp.cu: rung 01 with one warp per row instead of one thread.
//
// The arithmetic is rung 01's (the mean, then the variance about it, then the write); what
// changes is who does it. The 32 lanes of a warp share one row: lane l takes elements l,
// l + 32, l + 64, ..., so each load instruction of the warp reads 32 consecutive floats, one
// 128-byte line, or two where the row does not start on a line (coalesced), where rung 01's
// touched 32 lines of 32 rows. Each lane sums its
// strided share and the 32 partial sums are combined in five __shfl_xor_sync steps, register
// to register, after which every lane holds the row's total (no shared memory, no barrier).
//
// It is faster for both reasons rung 01 is slow: a row's loads are coalesced, and the work of
// a row is spread over 32 threads, so M rows make 32 x M threads, enough warps to keep the
// SMs' loads in flight. The second and third passes re-read the row the same warp has just
// read; the byte model (Shape::min_bytes) counts one read of X, so it assumes those re-reads
// hit in L1 or L2, as a row of a few thousand floats can.
//
// Rows are warp-uniform, so a warp past the last row leaves as a whole and every shuffle runs
// with all 32 lanes. Lanes beyond N (rows shorter than a warp) add zeros.

#define LAYERNORM_EPS 1e-5f

__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

extern "C" __global__ void layernorm_warp(const float *__restrict__ X,
                                          const float *__restrict__ gamma,
                                          const float *__restrict__ beta,
                                          float *__restrict__ Y, int M, int N) {
    const int lane = threadIdx.x % 32;
    const int row = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32;
    if (row >= M) return;  // whole warps leave together
    const float *x = X + (long)row * N;
    float *y = Y + (long)row * N;
    float sum = 0.0f;
    for (int j = lane; j < N; j += 32) sum += x[j];
    const float mean = warp_sum(sum) / N;
    float sq = 0.0f;
    for (int j = lane; j < N; j += 32) {
        const float d = x[j] - mean;
        sq += d * d;
    }
    const float rstd = rsqrtf(warp_sum(sq) / N + LAYERNORM_EPS);
    for (int j = lane; j < N; j += 32) y[j] = (x[j] - mean) * rstd * gamma[j] + beta[j];
}
