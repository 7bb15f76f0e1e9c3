// The simulator's <vector_types.h>, which code written for nvcc includes directly: what its
// declarations give device code comes with the simulator's <cuda_runtime.h>.
#pragma once
#include "cuda_runtime.h"
