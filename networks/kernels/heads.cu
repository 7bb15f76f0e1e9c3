// heads.cu: the layout changes around a network's attention. The QKV projection writes one
// row of 3E features per token ([B*S, 3, H, D]); the attention rungs read Q, K and V as
// [B, H, S, D] each. `net_split_heads` adds the projection's bias on the way (it reads every
// element once anyway) and `net_merge_heads` brings O back to one row per token for the
// output projection. One thread per element written, so the writes are coalesced; the reads
// are runs of D contiguous floats.

extern "C" __global__ void net_split_heads(const float *__restrict__ C,
                                           const float *__restrict__ bias,
                                           float *__restrict__ QKV, int B, int S, int H,
                                           int D) {
    const long long E = (long long)H * D;
    const long long per = (long long)B * S * E;  // elements of each of Q, K, V
    for (long long o = blockIdx.x * (long long)blockDim.x + threadIdx.x; o < 3 * per;
         o += (long long)gridDim.x * blockDim.x) {
        const long long which = o / per, r = o % per;
        const long long d = r % D, s = (r / D) % S, h = (r / D / S) % H, b = r / D / S / H;
        const long long col = which * E + h * D + d;
        QKV[o] = C[(b * S + s) * 3 * E + col] + bias[col];
    }
}

extern "C" __global__ void net_merge_heads(const float *__restrict__ O,
                                           float *__restrict__ Y, int B, int S, int H,
                                           int D) {
    const long long E = (long long)H * D;
    const long long total = (long long)B * S * E;
    for (long long y = blockIdx.x * (long long)blockDim.x + threadIdx.x; y < total;
         y += (long long)gridDim.x * blockDim.x) {
        const long long row = y / E, col = y % E;
        const long long b = row / S, s = row % S, h = col / D, d = col % D;
        Y[y] = O[((b * H + h) * S + s) * D + d];
    }
}
