// Stand-in for <c10/util/Half.h>: c10::Half as CUDA's type of the same format (see ATen/ATen.h).
#pragma once
#include "ATen/AccumulateType.h"
