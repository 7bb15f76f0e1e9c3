// reduce/06_grid_stride.cu: rung 05 with a fixed grid: at most 1024 blocks, whatever N, each
// thread first summing its elements i, i + T, i + 2T, ... (T, the grid's thread count) in a
// register, then the block summing its threads as rung 05 does.
//
// What changed and why: rung 05 runs a block and its tree for every 512 elements, 32768
// blocks at N = 2^24, and reads each element only once per thread. Here the blocks are as
// many as the GPU can hold at once (1024 blocks of 256 threads: an H100's 132 SMs hold 8
// each) and each thread adds N / T elements in a loop, a load and an add a trip, so the
// tree, the barrier and the block's start are paid once per thread instead of once per 2
// elements. Consecutive threads read consecutive elements at every trip of the loop
// (coalesced). The 1024 partial sums take one more launch of one block: at most 2 launches
// whatever N (1 where one block covers x).

#define BLOCK 256
#define WARPS (BLOCK / 32)

__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
    for (int o = 16; o > 0; o /= 2) v += __shfl_down_sync(0xffffffffu, v, o);
    return v;
}

extern "C" __global__ void reduce_grid_stride(const float *__restrict__ x,
                                              float *__restrict__ y, int n) {
    __shared__ float warps[WARPS];
    const unsigned t = threadIdx.x, stride = gridDim.x * BLOCK;
    float v = 0.0f;
    for (unsigned i = blockIdx.x * BLOCK + t; i < (unsigned)n; i += stride) v += x[i];
    v = warp_sum(v);
    if (t % 32 == 0) warps[t / 32] = v;
    __syncthreads();
    if (t < 32) {
        v = warp_sum(t < WARPS ? warps[t] : 0.0f);
        if (t == 0) y[blockIdx.x] = v;
    }
}
