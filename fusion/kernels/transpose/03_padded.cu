// transpose/03_padded.cu: rung 02 with one float of padding at the end of each row of the
// tile.
//
// What changed and why: the tile is 32 x 33. Word (i, j) lies at i * 33 + j, in bank
// (i + j) % 32, so the 32 lanes reading column c (rows 0 to 31) hit 32 different banks: one
// wavefront per read instead of 32. The rows of the tile, which the loads write, stay
// consecutive words, so they were and remain conflict-free. The padding costs 128 bytes of
// shared memory a block and nothing else.

#define TILE 32
#define ROWS 8

extern "C" __global__ void transpose_padded(const float *__restrict__ X, float *__restrict__ Y,
                                            int M, int N) {
    __shared__ float tile[TILE][TILE + 1];
    int col = blockIdx.x * TILE + threadIdx.x;
    int row = blockIdx.y * TILE + threadIdx.y;
    for (int r = 0; r < TILE; r += ROWS) {
        if (row + r < M && col < N) tile[threadIdx.y + r][threadIdx.x] = X[(size_t)(row + r) * N + col];
    }
    __syncthreads();
    col = blockIdx.y * TILE + threadIdx.x;
    row = blockIdx.x * TILE + threadIdx.y;
    for (int r = 0; r < TILE; r += ROWS) {
        if (row + r < N && col < M) Y[(size_t)(row + r) * M + col] = tile[threadIdx.x][threadIdx.y + r];
    }
}
