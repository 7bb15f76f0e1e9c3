// Stand-in for <c10/util/BFloat16.h>: c10::BFloat16 as CUDA's type of the same format (see ATen/ATen.h).
#pragma once
#include "ATen/AccumulateType.h"
