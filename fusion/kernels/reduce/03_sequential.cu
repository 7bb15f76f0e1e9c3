// reduce/03_sequential.cu: rung 02 with sequential addressing: at stride s, thread t < s adds
// element t + s to element t, s going from 128 down to 1.
//
// What changed and why: the active threads are still the first ones (whole warps), but a
// warp's 32 lanes now touch 32 consecutive words, one per bank, for both the element they
// read at t + s and the one they update at t: no bank conflicts. The pairs are different
// (the halves of the block are added, then the halves of the first half, ...), so the sum
// rounds differently from rungs 01 and 02.

#define BLOCK 256

extern "C" __global__ void reduce_sequential(const float *__restrict__ x, float *__restrict__ y,
                                             int n) {
    __shared__ float s[BLOCK];
    const unsigned t = threadIdx.x, i = blockIdx.x * BLOCK + t;
    s[t] = i < (unsigned)n ? x[i] : 0.0f;
    __syncthreads();
    for (unsigned stride = BLOCK / 2; stride > 0; stride /= 2) {
        if (t < stride) s[t] += s[t + stride];
        __syncthreads();
    }
    if (t == 0) y[blockIdx.x] = s[0];
}
