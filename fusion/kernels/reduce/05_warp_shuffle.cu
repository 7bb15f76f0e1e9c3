// reduce/05_warp_shuffle.cu: rung 04 with the tree inside each warp done in registers by
// __shfl_down_sync, and shared memory holding only the 8 warps' sums.
//
// What changed and why: rung 04's tree takes 8 steps through shared memory, each a load, an
// add, a store and a __syncthreads() for the whole block. A warp's lanes can instead read
// each other's registers: after 5 steps of `v += __shfl_down_sync(mask, v, o)` (o = 16, 8,
// 4, 2, 1) lane 0 holds its warp's sum, with no shared memory and no barrier (the lanes of a
// warp exchange in step). Lane 0 of each warp writes its sum to shared memory, one
// __syncthreads() later the first warp sums the 8 of them the same way: one barrier instead
// of 9. This replaces the "unrolled last warp" of older write-ups, which relied on the lanes
// of a warp running in lockstep through shared memory without a barrier; since Volta they
// need not, and that code is a race.

#define BLOCK 256
#define WARPS (BLOCK / 32)

// The sum of v over the warp's 32 lanes, in lane 0 (the other lanes hold partial sums).
__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
    for (int o = 16; o > 0; o /= 2) v += __shfl_down_sync(0xffffffffu, v, o);
    return v;
}

extern "C" __global__ void reduce_warp_shuffle(const float *__restrict__ x,
                                               float *__restrict__ y, int n) {
    __shared__ float warps[WARPS];
    const unsigned t = threadIdx.x, i = blockIdx.x * (2 * BLOCK) + t;
    float v = i < (unsigned)n ? x[i] : 0.0f;
    if (i + BLOCK < (unsigned)n) v += x[i + BLOCK];
    v = warp_sum(v);
    if (t % 32 == 0) warps[t / 32] = v;
    __syncthreads();
    if (t < 32) {
        v = warp_sum(t < WARPS ? warps[t] : 0.0f);
        if (t == 0) y[blockIdx.x] = v;
    }
}
