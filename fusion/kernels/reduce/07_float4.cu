// reduce/07_float4.cu: rung 06 reading x as float4: each trip of a thread's loop loads 16
// bytes in one instruction and adds them as (x0 + x1) + (x2 + x3).
//
// What changed and why: a DRAM-bound kernel needs enough bytes in flight to cover the
// memory's latency. Rung 06's loop is not unrolled (its SASS has one LDG a trip, and the
// trip's FADD waits for it), so each thread has one 4-byte load in flight at a time. Here
// one 16-byte load covers four elements: four times the bytes in flight per thread, and a
// quarter of the trips. x is 16-byte aligned (cudaMalloc gives 256 bytes); the last N % 4
// elements are read one each by the first threads.

#define BLOCK 256
#define WARPS (BLOCK / 32)

__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
    for (int o = 16; o > 0; o /= 2) v += __shfl_down_sync(0xffffffffu, v, o);
    return v;
}

extern "C" __global__ void reduce_float4(const float *__restrict__ x, float *__restrict__ y,
                                         int n) {
    __shared__ float warps[WARPS];
    const unsigned t = threadIdx.x, first = blockIdx.x * BLOCK + t, stride = gridDim.x * BLOCK;
    const unsigned n4 = (unsigned)n / 4;
    const float4 *x4 = reinterpret_cast<const float4 *>(x);
    float v = 0.0f;
    for (unsigned i = first; i < n4; i += stride) {
        const float4 q = x4[i];
        v += (q.x + q.y) + (q.z + q.w);
    }
    if (4 * n4 + first < (unsigned)n) v += x[4 * n4 + first];
    v = warp_sum(v);
    if (t % 32 == 0) warps[t / 32] = v;
    __syncthreads();
    if (t < 32) {
        v = warp_sum(t < WARPS ? warps[t] : 0.0f);
        if (t == 0) y[blockIdx.x] = v;
    }
}
