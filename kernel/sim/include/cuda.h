// cuda.h (simulator stand-in): kernels sometimes include it; the runtime header is enough.
#pragma once

#include "cuda_runtime.h"

// The driver API's version, which code tests (`#if CUDA_VERSION >= 9000`): that of the toolkit
// whose headers the simulator's follow (its -D__CUDACC_VER_MAJOR__, sim::compile's FLAGS).
#ifndef CUDA_VERSION
#define CUDA_VERSION (__CUDACC_VER_MAJOR__ * 1000 + __CUDACC_VER_MINOR__ * 10)
#endif
