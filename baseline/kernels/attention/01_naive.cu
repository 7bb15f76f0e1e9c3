// 01_naive.cu: attention as three kernels, the S x S score matrix materialized in memory.
//
// The textbook formula, one kernel per step: S = Q K^T * scale, P = softmax(S) row by row
// (subtracting the row maximum first, so exp never overflows), O = P V. Each step reads what
// the previous one wrote to global memory: the S x S matrix per head is written once, read
// and rewritten by the softmax, and read again by P V. Its size grows with S^2 while Q, K, V
// and O grow with S, so at long sequences nearly all traffic (and memory) is the scores.
// Every later rung computes the same thing without ever storing S.
// Offsets are 64-bit (lab/index.h): a few heads of 16384 x 16384 scores pass 2^31 elements.

#include "lab/index.h"

#define NEG_INF __int_as_float((int)0xff800000)  // -inf, without any host header

// One thread per score: (i, j) of head blockIdx.z. Causal scores above the diagonal are -inf,
// which the softmax turns into exact zeros.
extern "C" __global__ void attn_scores(const float *Q, const float *K, float *Sc, int heads,
                                       int S, int D, float scale, int causal) {
    const int j = blockIdx.x * blockDim.x + threadIdx.x;
    const int i = blockIdx.y * blockDim.y + threadIdx.y;
    const int h = blockIdx.z;
    if (i >= S || j >= S || h >= heads) return;
    const float *q = Q + lab_at(h, 0, (long long)S * D) + lab_at(i, 0, D);
    const float *k = K + lab_at(h, 0, (long long)S * D) + lab_at(j, 0, D);
    float acc = 0.0f;
    for (int c = 0; c < D; ++c) acc += q[c] * k[c];
    Sc[lab_at(h, 0, (long long)S * S) + lab_at(i, j, S)] =
        (causal && j > i) ? NEG_INF : acc * scale;
}

// One thread per row of scores, in place: max, then the sum of exp(s - max), then normalize.
// Three passes over the row in global memory, and neighbouring threads read addresses S apart.
extern "C" __global__ void attn_softmax(float *Sc, int rows, int S) {
    const long long r = lab_global_index();
    if (r >= rows) return;
    float *row = Sc + r * S;
    float m = NEG_INF;
    for (int j = 0; j < S; ++j) m = fmaxf(m, row[j]);
    float sum = 0.0f;
    for (int j = 0; j < S; ++j) {
        const float e = expf(row[j] - m);
        row[j] = e;
        sum += e;
    }
    const float inv = 1.0f / sum;
    for (int j = 0; j < S; ++j) row[j] *= inv;
}

// One thread per output element: O[i][c] = sum_j P[i][j] V[j][c], both straight from global
// memory (the naive GEMM again, batched over heads).
extern "C" __global__ void attn_pv(const float *P, const float *V, float *O, int heads, int S,
                                   int D) {
    const int c = blockIdx.x * blockDim.x + threadIdx.x;
    const int i = blockIdx.y * blockDim.y + threadIdx.y;
    const int h = blockIdx.z;
    if (i >= S || c >= D || h >= heads) return;
    const float *p = P + lab_at(h, 0, (long long)S * S) + lab_at(i, 0, S);
    const float *v = V + lab_at(h, 0, (long long)S * D);
    float acc = 0.0f;
    for (int j = 0; j < S; ++j) acc += p[j] * v[lab_at(j, c, D)];
    O[lab_at(h, 0, (long long)S * D) + lab_at(i, c, D)] = acc;
}
