// reduce/02_strided.cu: rung 01 with the tree's work given to the first threads of the block.
//
// What changed and why: at stride s, thread t adds the pair at k = 2 s t instead of the
// threads whose index is a multiple of 2s adding their own. The pairs added are the same, in
// the same order, so the sum is bitwise rung 01's; but the active threads are now 0, 1, 2,
// ..., 128 / s - 1, whole warps: at s = 1 warps 0-3 add and warps 4-7 have no lane active,
// and from s = 4 on only warp 0 works. The idle warps still issue each step (ptxas predicates
// it rather than branching round it), but their loads and stores ask nothing of shared
// memory: the tree makes a fraction of rung 01's shared-memory requests.
//
// The cost it brings: lane t of a warp touches words 2 s t and 2 s t + s, so at s = 1 its 32
// lanes fall in 16 of shared memory's 32 banks, two to a bank, and each larger stride crowds
// them into fewer: every access of steps s = 1..8 is a 2- to 16-way bank conflict, and of
// s = 16..64, where 128 / s threads add, all in one bank, an 8- to 2-way one.

#define BLOCK 256

extern "C" __global__ void reduce_strided(const float *__restrict__ x, float *__restrict__ y,
                                          int n) {
    __shared__ float s[BLOCK];
    const unsigned t = threadIdx.x, i = blockIdx.x * BLOCK + t;
    s[t] = i < (unsigned)n ? x[i] : 0.0f;
    __syncthreads();
    for (unsigned stride = 1; stride < BLOCK; stride *= 2) {
        const unsigned k = 2 * stride * t;
        if (k < BLOCK) s[k] += s[k + stride];
        __syncthreads();
    }
    if (t == 0) y[blockIdx.x] = s[0];
}
