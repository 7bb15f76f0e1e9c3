// transpose/02_shared_tile.cu: rung 01 through a 32 x 32 tile in shared memory, so that the
// stores are coalesced too.
//
// What changed and why: the block reads its tile of X row by row into shared memory, waits at
// a barrier, then writes the tile's columns as rows of Y. A warp's 32 stores now go to 32
// consecutive floats of one row of Y: one line per store instruction instead of 32. The
// transposition moved into shared memory: lane l of a warp reads tile[l][c], 32 words 32
// apart, and with 32 banks of 4 bytes (bank = word % 32) all 32 fall in one bank. Every read
// of the tile is a 32-way bank conflict: 32 wavefronts where one would do.

#define TILE 32
#define ROWS 8

extern "C" __global__ void transpose_shared_tile(const float *__restrict__ X,
                                                 float *__restrict__ Y, int M, int N) {
    __shared__ float tile[TILE][TILE];
    int col = blockIdx.x * TILE + threadIdx.x;
    int row = blockIdx.y * TILE + threadIdx.y;
    for (int r = 0; r < TILE; r += ROWS) {
        if (row + r < M && col < N) tile[threadIdx.y + r][threadIdx.x] = X[(size_t)(row + r) * N + col];
    }
    __syncthreads();
    // The tile's column threadIdx.y + r is row blockIdx.x * TILE + threadIdx.y + r of Y.
    col = blockIdx.y * TILE + threadIdx.x;
    row = blockIdx.x * TILE + threadIdx.y;
    for (int r = 0; r < TILE; r += ROWS) {
        if (row + r < N && col < M) Y[(size_t)(row + r) * M + col] = tile[threadIdx.x][threadIdx.y + r];
    }
}
