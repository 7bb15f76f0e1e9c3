// cuda_runtime.h (simulator stand-in): everything a kernel source may use without including
// anything. The host prepends it to every translation unit it compiles.
#pragma once

#include "sim_builtins.h"
#include "cuda_fp16.h"
#include "cuda_bf16.h"
#include "sim_hopper.h"
#include "sim_launch.h"
#include "sim_intrinsics.h"
