// 03_restrict_unroll.cu: rung 02's tiled kernel plus two hints to the compiler.
//
// 1. `__restrict__` on A, B and C promises that the three never overlap, so the compiler may
//    route the read-only operands through the non-coherent (read-only) cache path.
// 2. `#pragma unroll` on the inner loop over the tile.
// What the compiler makes of them (the sm_90 SASS of NVRTC 13.0, `harness inspect --sass`):
// the unroll changes nothing, because ptxas already unrolled rung 02's constant-trip loop into
// 32 FFMA with constant shared offsets and merged the As[ty][k] reads into 8 LDS.128. The one
// difference from rung 02 is `__restrict__`: the two global loads become read-only
// LDG.E.CONSTANT instead of LDG.E; registers (32) and every other instruction are the same.
// So expect this row at about 1.0x rung 02: the lesson is that these hints are often already
// applied, and the SASS, not the source, says what a change did. Rung 04 changes the work.
// Everything else (32x32 tiles, zero-filled tails, guarded stores, two barriers per step that
// every thread reaches) is rung 02 unchanged.

#define TILE 32

extern "C" __global__ void gemm_restrict_unroll(const float *__restrict__ A,
                                                const float *__restrict__ B,
                                                float *__restrict__ C, int M, int N, int K) {
    __shared__ float As[TILE][TILE];
    __shared__ float Bs[TILE][TILE];

    const int tx = threadIdx.x, ty = threadIdx.y;
    const int row = blockIdx.y * TILE + ty;
    const int col = blockIdx.x * TILE + tx;

    float acc = 0.0f;
    for (int k0 = 0; k0 < K; k0 += TILE) {
        As[ty][tx] = (row < M && k0 + tx < K) ? A[row * K + k0 + tx] : 0.0f;
        Bs[ty][tx] = (k0 + ty < K && col < N) ? B[(k0 + ty) * N + col] : 0.0f;
        __syncthreads();  // the tiles are complete before anyone reads them

#pragma unroll
        for (int k = 0; k < TILE; ++k) {
            acc += As[ty][k] * Bs[k][tx];
        }
        __syncthreads();  // everyone is done reading before the next tiles overwrite them
    }
    if (row < M && col < N) C[row * N + col] = acc;
}
