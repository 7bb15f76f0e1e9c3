// transpose/04_swizzled.cu: rung 03 without the padding: element (i, j) of the tile is stored
// in column j ^ i of row i, an XOR swizzle.
//
// What changed and why: a warp writing row i of the tile puts its 32 values in the columns
// j ^ i, j = 0..31: the same 32 words in another order, one per bank. A warp reading column
// c of the tile reads word i * 32 + (c ^ i) of row i, whose bank c ^ i differs for each of
// its 32 rows: no conflict either way, as with rung 03's padding, but the tile is 32 x 32
// again. Rows of a whole number of 16-byte chunks are what wider shared-memory accesses,
// ldmatrix and the TMA's swizzled boxes need, which a padded row of 33 floats is not. The
// tensor-core rungs of the GEMM ladder swizzle the same way, but whole 16-byte chunks
// (chunk c of row r at c ^ (r % 8)), so that a chunk's 4 words stay together for a vector
// access; this tile swizzles single words. The speed should be rung 03's.

#define TILE 32
#define ROWS 8

extern "C" __global__ void transpose_swizzled(const float *__restrict__ X, float *__restrict__ Y,
                                              int M, int N) {
    __shared__ float tile[TILE][TILE];
    int col = blockIdx.x * TILE + threadIdx.x;
    int row = blockIdx.y * TILE + threadIdx.y;
    for (int r = 0; r < TILE; r += ROWS) {
        const int i = threadIdx.y + r;
        if (row + r < M && col < N) tile[i][threadIdx.x ^ i] = X[(size_t)(row + r) * N + col];
    }
    __syncthreads();
    col = blockIdx.y * TILE + threadIdx.x;
    row = blockIdx.x * TILE + threadIdx.y;
    for (int r = 0; r < TILE; r += ROWS) {
        const int j = threadIdx.y + r;
        if (row + r < N && col < M) Y[(size_t)(row + r) * M + col] = tile[threadIdx.x][j ^ threadIdx.x];
    }
}
