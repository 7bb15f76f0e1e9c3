// Stand-in for <ATen/cuda/DeviceUtils.cuh>: PyTorch's warp shuffles, as the CUDA intrinsics they
// wrap (every lane of the warp taking part unless a mask says otherwise).
#pragma once
#include "c10/macros/Macros.h"
template <typename T>
__device__ __forceinline__ T WARP_SHFL(T value, int srcLane, int width = warpSize, unsigned int mask = 0xffffffff) {
    return __shfl_sync(mask, value, srcLane, width);
}
template <typename T>
__device__ __forceinline__ T WARP_SHFL_XOR(T value, int laneMask, int width = warpSize, unsigned int mask = 0xffffffff) {
    return __shfl_xor_sync(mask, value, laneMask, width);
}
template <typename T>
__device__ __forceinline__ T WARP_SHFL_UP(T value, unsigned int delta, int width = warpSize, unsigned int mask = 0xffffffff) {
    return __shfl_up_sync(mask, value, delta, width);
}
template <typename T>
__device__ __forceinline__ T WARP_SHFL_DOWN(T value, unsigned int delta, int width = warpSize, unsigned int mask = 0xffffffff) {
    return __shfl_down_sync(mask, value, delta, width);
}
__device__ __forceinline__ unsigned int WARP_BALLOT(int predicate, unsigned int mask = 0xffffffff) {
    return __ballot_sync(mask, predicate);
}
__device__ __forceinline__ unsigned int WARP_ACTIVEMASK() { return __activemask(); }
