// softmax/02_warp.cu: one warp per row, and the maximum and the sum in one pass (online).
//
// Two ideas over rung 01. First, as in layernorm/02_warp.cu, the 32 lanes of a warp share a
// row and stride it (lane l takes l, l + 32, ...): every load instruction reads 32
// consecutive floats, one 128-byte line or two (coalesced), and M rows make 32 x M threads.
//
// Second, the online softmax: each lane keeps a running maximum m and a running sum s of
// exp(x - m). A new element x larger than m rescales the sum to the new maximum,
// s = s * exp(m - x) + 1; otherwise s += exp(x - m). The lanes' pairs (m, s) are merged in
// five __shfl_xor_sync steps by the same rule (m = max of the two, each s rescaled to it).
// The row is read twice (statistics, then the write) instead of three times.
//
// A lane with no element of the row (N < 32) holds m = -inf and s = 0; the merge gives such a
// pair a weight of 0 rather than compute exp(-inf - (-inf)), which is NaN.

#define NEG_INF __int_as_float((int)0xff800000)

// exp(m - top) for a running maximum m <= top: 0 for an empty lane's m = -inf.
__device__ __forceinline__ float rescale(float m, float top) {
    return m == NEG_INF ? 0.0f : expf(m - top);
}

extern "C" __global__ void softmax_warp(const float *__restrict__ X, float *__restrict__ Y,
                                        int M, int N) {
    const int lane = threadIdx.x % 32;
    const int row = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32;
    if (row >= M) return;  // whole warps leave together
    const float *x = X + (long)row * N;
    float *y = Y + (long)row * N;
    float m = NEG_INF, s = 0.0f;
    for (int j = lane; j < N; j += 32) {
        const float v = x[j];
        if (v > m) {
            s = s * rescale(m, v) + 1.0f;
            m = v;
        } else {
            s += expf(v - m);
        }
    }
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) {
        const float m2 = __shfl_xor_sync(0xffffffffu, m, o);
        const float s2 = __shfl_xor_sync(0xffffffffu, s, o);
        const float top = fmaxf(m, m2);
        s = s * rescale(m, top) + s2 * rescale(m2, top);
        m = top;
    }
    const float inv = 1.0f / s;
    for (int j = lane; j < N; j += 32) y[j] = expf(x[j] - m) * inv;
}
