// cuda.h (simulator stand-in): kernels sometimes include it; the runtime header is enough.
#pragma once

#include "cuda_runtime.h"
