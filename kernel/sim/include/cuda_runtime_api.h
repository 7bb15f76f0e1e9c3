// The simulator's <cuda_runtime_api.h>: what <cuda_runtime.h> gives device code (host API
// calls live in host code, which the lab blanks).
#pragma once
#include "cuda_runtime.h"
