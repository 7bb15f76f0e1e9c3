// 06_vectorized.cu: 16-byte (float4) memory access. What changed since 05 and why (two ideas,
// so the row measures both together):
//
// 1. Global loads and stores move float4s: one 128-bit instruction instead of four 32-bit
//    ones. Each thread loads one float4 of A and one of B per K step (256 x 4 = 1024 = 128 x 8
//    floats per tile) and stores C as float4s. In the sm_90 SASS a K step has 2
//    LDG.E.128.CONSTANT where rung 05 has 8 LDG.E.CONSTANT, and C takes 16 STG.E.128 where 05
//    takes 64 STG.E. This is the difference the row measures.
// 2. The A tile is stored TRANSPOSED in shared memory (As[k][m]), so a thread's 8 values of A
//    for one k are contiguous and come in as two float4 shared loads, like its 8 values of B.
//    The SASS shows this buys no shared-load instructions: ptxas had already merged rung 05's
//    reads of A along the unrolled k loop, so both rungs issue 32 LDS.128 per K step (4 per
//    k) for 512 FFMA. The transpose is kept because it makes the float4 reads explicit rather
//    than left to the compiler, and rung 07 builds on this layout.
// Registers: 127 on sm_90 (rung 05: 128 with __launch_bounds__), 2 blocks of 256 per SM on
// both, so occupancy does not differ between the two rows.
// Constraint: a float4 must be 16-byte aligned, so rows of A and B must start on a multiple
// of 4 floats: K % 4 == 0 and N % 4 == 0 (the Rust side declines other shapes). M is free.
// Because K and N are multiples of 4 and every float4 starts at a multiple of 4, a float4 is
// either wholly inside the matrix or wholly outside: tails are guarded per float4 (zero-fill
// for loads, skip for stores). Every thread reaches every barrier.

#define BM 128
#define BN 128
#define BK 8
#define TM 8
#define TN 8
#define NTHREADS 256

extern "C" __global__ void gemm_vectorized(const float *__restrict__ A,
                                           const float *__restrict__ B,
                                           float *__restrict__ C, int M, int N, int K) {
    __shared__ __align__(16) float As[BK * BM];  // [BK][BM]: transposed
    __shared__ __align__(16) float Bs[BK * BN];  // [BK][BN]

    const int tid = threadIdx.x;
    const int row0 = blockIdx.y * BM, col0 = blockIdx.x * BN;
    const int trow = tid / (BN / TN), tcol = tid % (BN / TN);
    // Load assignment: A tile 128 rows x 2 float4; B tile 8 rows x 32 float4.
    const int a_r = tid / (BK / 4), a_c = (tid % (BK / 4)) * 4;
    const int b_r = tid / (BN / 4), b_c = (tid % (BN / 4)) * 4;

    float acc[TM][TN];
#pragma unroll
    for (int i = 0; i < TM; ++i)
#pragma unroll
        for (int j = 0; j < TN; ++j) acc[i][j] = 0.0f;
    float regM[TM], regN[TN];
    const float4 zero = make_float4(0.0f, 0.0f, 0.0f, 0.0f);

    for (int k0 = 0; k0 < K; k0 += BK) {
        const int ar = row0 + a_r, ak = k0 + a_c;
        const float4 a4 = (ar < M && ak < K)
                              ? *reinterpret_cast<const float4 *>(&A[ar * K + ak])
                              : zero;
        As[(a_c + 0) * BM + a_r] = a4.x;  // transpose on the way in
        As[(a_c + 1) * BM + a_r] = a4.y;
        As[(a_c + 2) * BM + a_r] = a4.z;
        As[(a_c + 3) * BM + a_r] = a4.w;
        const int bk = k0 + b_r, bc = col0 + b_c;
        *reinterpret_cast<float4 *>(&Bs[b_r * BN + b_c]) =
            (bk < K && bc < N) ? *reinterpret_cast<const float4 *>(&B[bk * N + bc]) : zero;
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

#pragma unroll
    for (int i = 0; i < TM; ++i) {
        const int r = row0 + trow * TM + i;
#pragma unroll
        for (int j = 0; j < TN; j += 4) {
            const int c = col0 + tcol * TN + j;
            if (r < M && c < N)
                *reinterpret_cast<float4 *>(&C[r * N + c]) =
                    make_float4(acc[i][j], acc[i][j + 1], acc[i][j + 2], acc[i][j + 3]);
        }
    }
}
