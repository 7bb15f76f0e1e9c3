// cuda_runtime.h (simulator stand-in): everything a kernel source may use without including
// anything. The host prepends it to every translation unit it compiles.
#pragma once

#include "sim_builtins.h"
#include "cuda_fp16.h"
#include "cuda_bf16.h"
#include "sim_hopper.h"
#include "sim_launch.h"
#include "sim_intrinsics.h"

// The runtime's handle and status types, which the data members of a user's host classes
// name (a timer's `cudaEvent_t events_[2]`, a launcher's `cudaStream_t`); NVRTC declares them
// too. The lab blanks the host code that would use them.
typedef struct CUstream_st *cudaStream_t;
typedef struct CUevent_st *cudaEvent_t;
typedef enum cudaError { cudaSuccess = 0 } cudaError_t;
