// Stand-in for <cublas.h>: see cublas_v2.h.
#pragma once
// cuBLAS's own header brings the half and bfloat16 types, which a file may name through it alone.
#include <cuda_fp16.h>
#include <cuda_bf16.h>
#include "cublas_v2.h"
