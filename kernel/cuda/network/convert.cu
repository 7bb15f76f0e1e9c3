// convert.cu: FP32 -> FP16 / BF16 conversion of an activation, inserted by a network's
// composition where a layer reads a narrower type than the layer before it wrote. It is what
// a mixed-precision forward pass pays for its conversions: one read of 4 bytes and one write
// of 2 bytes per element, timed with the layer that needs it.
#include <cuda_fp16.h>
#include <cuda_bf16.h>

extern "C" __global__ void convert_f32_to_f16(const float *__restrict__ x,
                                              __half *__restrict__ y, int n) {
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
         i += (long long)gridDim.x * blockDim.x)
        y[i] = __float2half_rn(x[i]);
}

extern "C" __global__ void convert_f32_to_bf16(const float *__restrict__ x,
                                               __nv_bfloat16 *__restrict__ y, int n) {
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
         i += (long long)gridDim.x * blockDim.x)
        y[i] = __float2bfloat16_rn(x[i]);
}
