// Stand-in for <ATen/cuda/CUDAContext.h>: ATen's names (see ATen/ATen.h). The stream and
// handle getters it declares are called by host code only, which the lab removes.
#pragma once
#include "ATen/ATen.h"
