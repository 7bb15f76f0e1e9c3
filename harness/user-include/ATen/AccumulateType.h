// Stand-in for <ATen/AccumulateType.h>: the type a kernel accumulates T in on the GPU, as
// PyTorch's is (float for the half types, T otherwise).
#pragma once
#include "c10/util/Half.h"
#include "c10/util/BFloat16.h"
namespace at {
using c10::BFloat16;
using c10::Half;
template <typename T, bool is_cuda> struct AccumulateType { using type = T; };
template <bool is_cuda> struct AccumulateType<c10::Half, is_cuda> { using type = float; };
template <bool is_cuda> struct AccumulateType<c10::BFloat16, is_cuda> { using type = float; };
template <> struct AccumulateType<float, false> { using type = double; };
template <typename T, bool is_cuda> using acc_type = typename AccumulateType<T, is_cuda>::type;
}  // namespace at
