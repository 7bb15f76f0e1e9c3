// 01_naive.cu: the starting point. One thread computes one element of C = A * B.
//
// Each thread walks a row of A and a column of B straight from global memory: 2K loads for
// 2K FLOPs, so the kernel is limited by memory traffic, not arithmetic. Worse, neighbouring
// threads of a warp (consecutive threadIdx.x) take consecutive *rows*, so their loads of A
// are K floats apart and their stores of C are N floats apart: neither coalesces, and each
// warp-wide load of A turns into 32 separate transactions (the 32 lanes share one column, so
// they all read the same element of B). Rung 02 fixes both problems.
// Row-major, any M, N, K: threads outside C return before touching memory.
// ptxas unrolls the K loop by itself (the sm_90 SASS has a 16-FFMA loop body and 8-, 4- and
// 1-step remainders), so unrolling is not what this kernel lacks.

extern "C" __global__ void gemm_naive(const float *A, const float *B, float *C,
                                      int M, int N, int K) {
    const int row = blockIdx.x * blockDim.x + threadIdx.x;
    const int col = blockIdx.y * blockDim.y + threadIdx.y;
    if (row >= M || col >= N) return;

    float acc = 0.0f;
    for (int k = 0; k < K; ++k) {
        acc += A[row * K + k] * B[k * N + col];
    }
    C[row * N + col] = acc;
}
