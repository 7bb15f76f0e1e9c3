// 03_fused.cu: rung 02's GEMM with the bias + activation fused into its epilogue.
//
// The main loop is linear_gemm_xwt of 02_unfused.cu unchanged. The difference is the store:
// each thread adds bias[c] to its 8x8 accumulators and applies the activation while they are
// still in registers, then writes Y once. Compared with 02 this saves one launch and the
// round trip of the M x N intermediate through DRAM (written, then read back): 8 x M x N
// bytes, which matters most when K is small relative to M and N (the GEMM is short).
// Each thread loads its 8 bias values once, before the stores. act: 0 = ReLU, 1 = GELU, 2 = none.

#define BM 128
#define BN 128
#define BK 8
#define TM 8
#define TN 8
#define NTHREADS 256

__device__ __forceinline__ float activate(float x, int act) {
    if (act == 0) return fmaxf(x, 0.0f);
    if (act == 2) return x;
    const float c = 0.7978845608f;  // sqrt(2 / pi)
    return 0.5f * x * (1.0f + tanhf(c * (x + 0.044715f * x * x * x)));
}

extern "C" __global__ void linear_fused(const float *__restrict__ X, const float *__restrict__ W,
                                        const float *__restrict__ bias, float *__restrict__ Y,
                                        int M, int N, int K, int act) {
    __shared__ __align__(16) float As[BK * BM];  // [BK][BM]: X tile, transposed
    __shared__ __align__(16) float Bs[BK * BN];  // [BK][BN]: W tile, transposed

    const int tid = threadIdx.x;
    const int row0 = blockIdx.y * BM, col0 = blockIdx.x * BN;
    const int trow = tid / (BN / TN), tcol = tid % (BN / TN);

    float acc[TM][TN];
#pragma unroll
    for (int i = 0; i < TM; ++i)
#pragma unroll
        for (int j = 0; j < TN; ++j) acc[i][j] = 0.0f;
    float regM[TM], regN[TN];

    for (int k0 = 0; k0 < K; k0 += BK) {
#pragma unroll
        for (int l = 0; l < (BM * BK) / NTHREADS; ++l) {
            const int idx = tid + l * NTHREADS;
            const int r = idx / BK, c = idx % BK;
            const int gr = row0 + r, gk = k0 + c;
            As[c * BM + r] = (gr < M && gk < K) ? X[gr * K + gk] : 0.0f;
            const int gn = col0 + r;
            Bs[c * BN + r] = (gn < N && gk < K) ? W[gn * K + gk] : 0.0f;
        }
        __syncthreads();  // tiles complete

#pragma unroll
        for (int k = 0; k < BK; ++k) {
#pragma unroll
            for (int i = 0; i < TM; i += 4) {
                const float4 v = *reinterpret_cast<const float4 *>(&As[k * BM + trow * TM + i]);
                regM[i] = v.x; regM[i + 1] = v.y; regM[i + 2] = v.z; regM[i + 3] = v.w;
            }
#pragma unroll
            for (int j = 0; j < TN; j += 4) {
                const float4 v = *reinterpret_cast<const float4 *>(&Bs[k * BN + tcol * TN + j]);
                regN[j] = v.x; regN[j + 1] = v.y; regN[j + 2] = v.z; regN[j + 3] = v.w;
            }
#pragma unroll
            for (int i = 0; i < TM; ++i)
#pragma unroll
                for (int j = 0; j < TN; ++j) acc[i][j] += regM[i] * regN[j];
        }
        __syncthreads();  // reads done before the next tiles overwrite them
    }

    // The fused epilogue: bias and activation on the registers, one store of Y.
    float b[TN];
#pragma unroll
    for (int j = 0; j < TN; ++j) {
        const int c = col0 + tcol * TN + j;
        b[j] = c < N ? bias[c] : 0.0f;
    }
#pragma unroll
    for (int i = 0; i < TM; ++i) {
        const int r = row0 + trow * TM + i;
#pragma unroll
        for (int j = 0; j < TN; ++j) {
            const int c = col0 + tcol * TN + j;
            if (r < M && c < N) Y[r * N + c] = activate(acc[i][j] + b[j], act);
        }
    }
}
