// softmax_rows.cu: the row softmax between the two cuBLAS products of the cuBLAS-based
// attention reference row (not a rung: the ladder's own softmax is 01_naive.cu's).
//
// One warp per row of scores, in place: the lanes stride along the row (coalesced), reduce
// the maximum and then the sum of exp(s - max) with shuffles, and normalize. Causal rows mask
// their keys past the diagonal here, since the cuBLAS product computes every score.

#include "lab/index.h"

#define NEG_INF __int_as_float((int)0xff800000)

extern "C" __global__ void softmax_rows(float *Sc, int rows, int S, int causal) {
    const long long r = lab_global_index() / 32;
    const int lane = threadIdx.x % 32;
    if (r >= rows) return;  // whole warps leave together: rows are warp-uniform
    float *row = Sc + r * S;
    const int visible = causal ? (int)(r % S) + 1 : S;
    float m = NEG_INF;
    for (int j = lane; j < visible; j += 32) m = fmaxf(m, row[j]);
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, o));
    float sum = 0.0f;
    for (int j = lane; j < visible; j += 32) {
        const float e = __expf(row[j] - m);
        row[j] = e;
        sum += e;
    }
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) sum += __shfl_xor_sync(0xffffffffu, sum, o);
    const float inv = 1.0f / sum;
    for (int j = lane; j < S; j += 32) row[j] = j < visible ? row[j] * inv : 0.0f;
}
