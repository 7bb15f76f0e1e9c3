// Stand-in for <ATen/ATen.h> in a PyTorch extension's kernel file, for NVRTC and the simulator
// alike (PyTorch is not installed): the host names of torch/types.h, and what device code names
// of ATen's: c10::Half and c10::BFloat16 (16 bits that compute in float, as PyTorch's do),
// at::acc_type and c10's macros. The lab blanks host code; the dispatch macros and tensor
// methods it calls are not here.
#pragma once
#include <cuda_fp16.h>
#include <cuda_bf16.h>
#include "torch/types.h"
#include "c10/macros/Macros.h"
#include "ATen/AccumulateType.h"
