// 12_wmma_fp16_convert.cu: FP32 inputs converted to FP16 on the GPU, inside the timed plan.
//
// Rung 11 was timed on inputs that already lived in FP16. Real FP32 data must be converted
// first: this rung's plan runs f32_to_f16 on A and on B into scratch FP16 buffers, then rung
// 11's gemm_wmma_fp16 unchanged. The difference between the two rows is the conversion cost:
// a read of 4 and a write of 2 bytes per input element, pure bandwidth, which at small sizes
// can eat the tensor-core speedup over TF32.
// In the sm_90 SASS the loop body is one LDG.E.CONSTANT, one F2FP.F16.F32.PACK_AB and one
// 16-bit STG.E.U16 per element.
// One thread per element, grid-stride so any length works; no barriers, early exit is safe.
// The index is 64-bit (lab/index.h): the grid covers n elements, so i + stride reaches about
// 2n, which wraps an `int` once n passes 2^30 (4 GiB of FP32), well below the 2^31 - 1
// elements a tensor may have.

#include <cuda_fp16.h>
#include "lab/index.h"

extern "C" __global__ void f32_to_f16(const float *__restrict__ src, __half *__restrict__ dst,
                                      int n) {
    for (long long i = lab_global_index(); i < n; i += lab_grid_stride())
        dst[i] = __float2half_rn(src[i]);
}
