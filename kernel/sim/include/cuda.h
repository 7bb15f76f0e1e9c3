// cuda.h (simulator stand-in): kernels sometimes include it; the runtime header is enough.
#pragma once

#include "cuda_runtime.h"

// The driver API's version, which code tests (`#if CUDA_VERSION >= 9000`): the CUDA 13 toolkit's,
// whose headers the simulator's follow.
#ifndef CUDA_VERSION
#define CUDA_VERSION 13000
#endif
