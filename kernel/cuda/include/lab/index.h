// lab/index.h: index arithmetic shared by the lab's kernels.
//
// Products of dimensions overflow `int` long before a GPU runs out of memory (a 16-head
// 16384 x 16384 score matrix has 2^32 elements), so element offsets are 64-bit. A kernel that
// indexes with these never wraps, whatever the shape the harness accepts.
#pragma once

// Offset of element (row, col) of a row-major matrix with `ld` elements per row.
__device__ __forceinline__ long long lab_at(long long row, long long col, long long ld) {
    return row * ld + col;
}

// The global index of this thread in a 1-D launch, and the grid-stride step, both 64-bit:
// `i += stride` past 2^31 must not wrap.
__device__ __forceinline__ long long lab_global_index() {
    return (long long)blockIdx.x * blockDim.x + threadIdx.x;
}
__device__ __forceinline__ long long lab_grid_stride() {
    return (long long)gridDim.x * blockDim.x;
}
