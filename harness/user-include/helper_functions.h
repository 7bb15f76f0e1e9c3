// Stand-in for the CUDA samples' <helper_functions.h> (their Common/ folder), for host code
// alone: see helper_cuda.h.
#pragma once
#include "helper_string.h"
#include "helper_timer.h"
