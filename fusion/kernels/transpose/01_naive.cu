// transpose/01_naive.cu: each thread copies elements of X straight to their transposed places
// in Y, Y[N][M] = X[M][N]^T.
//
// A block of 32 x 8 threads covers a 32 x 32 tile, each thread four of its rows, 8 apart.
// A warp (the 32 threads of one threadIdx.y) reads 32 consecutive floats of a row of X: one
// 128-byte line, coalesced. It writes them down a column of Y, M floats apart: 32 lines per
// store instruction, of which it writes 4 bytes each. The loads are as cheap as loads get;
// every store moves a whole sector (32 bytes) between L2 and the SM for 4 useful bytes.

#define TILE 32
#define ROWS 8

extern "C" __global__ void transpose_naive(const float *__restrict__ X, float *__restrict__ Y,
                                           int M, int N) {
    const int col = blockIdx.x * TILE + threadIdx.x;
    const int row = blockIdx.y * TILE + threadIdx.y;
    if (col >= N) return;
    for (int r = 0; r < TILE; r += ROWS) {
        if (row + r < M) Y[(size_t)col * M + row + r] = X[(size_t)(row + r) * N + col];
    }
}
