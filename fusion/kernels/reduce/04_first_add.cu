// reduce/04_first_add.cu: rung 03 with the tree's first step done while loading: a block of
// 256 threads sums 512 elements, each thread adding element i + 256 to element i before it
// stores one value to shared memory.
//
// What changed and why: in rung 03 half the threads leave at the tree's first step, having
// loaded one element each. Here every thread loads two, and the block covers twice the
// elements: half the blocks, each doing the same 8 tree steps and barriers, so the tree's
// cost per element is halved. A pass reduces by a factor of 512 instead of 256, which saves
// a launch at some sizes: N = 2^17 takes 2 launches (256 partial sums, then 1), not 3.

#define BLOCK 256

extern "C" __global__ void reduce_first_add(const float *__restrict__ x, float *__restrict__ y,
                                            int n) {
    __shared__ float s[BLOCK];
    const unsigned t = threadIdx.x, i = blockIdx.x * (2 * BLOCK) + t;
    float v = i < (unsigned)n ? x[i] : 0.0f;
    if (i + BLOCK < (unsigned)n) v += x[i + BLOCK];
    s[t] = v;
    __syncthreads();
    for (unsigned stride = BLOCK / 2; stride > 0; stride /= 2) {
        if (t < stride) s[t] += s[t + stride];
        __syncthreads();
    }
    if (t == 0) y[blockIdx.x] = s[0];
}
