// Stand-in for <c10/cuda/CUDAGuard.h>: its device guards are used by host code only, which the
// lab removes.
#pragma once
#include "ATen/ATen.h"
