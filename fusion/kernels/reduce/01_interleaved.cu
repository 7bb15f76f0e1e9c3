// reduce/01_interleaved.cu: the sum of x[N] as a tree of pairs in shared memory, one block of
// 256 threads per 256 elements.
//
// Each thread loads one element into shared memory. The tree then adds pairs: at stride s
// the threads whose index is a multiple of 2s add the element s places to their right, so
// after log2(256) = 8 steps the block's sum is in s[0], which thread 0 writes to y[block].
// The host launches the kernel again on those partial sums until one is left: 3 launches at
// N = 2^24 (65536, then 256 partial sums, then 1).
//
// The active threads of a step are spread over the block: at s = 1 every second lane of
// every warp adds, at s = 16 one lane in 32. ptxas predicates each step's loads, addition and
// store rather than branching round them, so all 8 warps issue every step of the tree, and
// until s reaches 32 each makes its shared-memory requests for a few active lanes; a
// __syncthreads() separates the steps.

#define BLOCK 256

extern "C" __global__ void reduce_interleaved(const float *__restrict__ x, float *__restrict__ y,
                                              int n) {
    __shared__ float s[BLOCK];
    const unsigned t = threadIdx.x, i = blockIdx.x * BLOCK + t;
    s[t] = i < (unsigned)n ? x[i] : 0.0f;
    __syncthreads();
    for (unsigned stride = 1; stride < BLOCK; stride *= 2) {
        if (t % (2 * stride) == 0) s[t] += s[t + stride];
        __syncthreads();
    }
    if (t == 0) y[blockIdx.x] = s[0];
}
