// reduce/08_one_pass.cu: rung 07 in one launch: the last block to finish sums the blocks'
// partial sums.
//
// What changed and why: rung 07 launches twice. Its second launch, one block summing at most
// 1024 numbers, does almost no work, but it starts only when the first has ended and pays a
// kernel's start of its own: a cost that does not shrink with N. Here each block
// writes its partial sum, then thread 0 makes it visible to the whole GPU (__threadfence())
// before counting the block as done with atomicAdd on a counter. The block that counts last
// knows every partial sum is written; a second __threadfence(), after its count, keeps its
// reads of them from moving before it (without it the simulator reports the race), and the
// __syncthreads() after passes that order to the block's other threads. That block sums the
// partial sums and writes y, and sets the counter back to 0 for the next launch. The partial
// sums are read with __ldcg (through L2, not L1): they were written by other SMs, whose
// writes this SM's L1 does not see.

#define BLOCK 256
#define WARPS (BLOCK / 32)

__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
    for (int o = 16; o > 0; o /= 2) v += __shfl_down_sync(0xffffffffu, v, o);
    return v;
}

// The block's sum of v, in thread 0. Ends with a barrier, so `warps` can be used again.
__device__ __forceinline__ float block_sum(float v, float *warps) {
    const unsigned t = threadIdx.x;
    v = warp_sum(v);
    if (t % 32 == 0) warps[t / 32] = v;
    __syncthreads();
    if (t < 32) v = warp_sum(t < WARPS ? warps[t] : 0.0f);
    __syncthreads();
    return v;
}

extern "C" __global__ void reduce_one_pass(const float *__restrict__ x, float *partials,
                                           unsigned *done, float *__restrict__ y, int n) {
    __shared__ float warps[WARPS];
    __shared__ bool last;
    const unsigned t = threadIdx.x, first = blockIdx.x * BLOCK + t, stride = gridDim.x * BLOCK;
    const unsigned n4 = (unsigned)n / 4;
    const float4 *x4 = reinterpret_cast<const float4 *>(x);
    float v = 0.0f;
    for (unsigned i = first; i < n4; i += stride) {
        const float4 q = x4[i];
        v += (q.x + q.y) + (q.z + q.w);
    }
    if (4 * n4 + first < (unsigned)n) v += x[4 * n4 + first];
    v = block_sum(v, warps);
    if (t == 0) {
        partials[blockIdx.x] = v;
        __threadfence();  // the partial sum, then the count
        last = atomicAdd(done, 1u) == gridDim.x - 1;
        if (last) __threadfence();  // the others' counts, then their partial sums
    }
    __syncthreads();
    if (!last) return;
    v = 0.0f;
    for (unsigned b = t; b < gridDim.x; b += BLOCK) v += __ldcg(partials + b);
    v = block_sum(v, warps);
    if (t == 0) {
        y[0] = v;
        *done = 0;
    }
}
