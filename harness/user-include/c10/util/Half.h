// Stand-in for <c10/util/Half.h>: c10::Half as PyTorch defines it (see kernel_lab_float16.h).
#pragma once
#include "c10/util/kernel_lab_float16.h"
namespace c10 {
KERNEL_LAB_FLOAT16(Half, __half, __half_raw)
}  // namespace c10
