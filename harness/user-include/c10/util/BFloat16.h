// Stand-in for <c10/util/BFloat16.h>: c10::BFloat16 as PyTorch defines it (see
// kernel_lab_float16.h).
#pragma once
#include "c10/util/kernel_lab_float16.h"
namespace c10 {
KERNEL_LAB_FLOAT16(BFloat16, __nv_bfloat16, __nv_bfloat16_raw)
}  // namespace c10
