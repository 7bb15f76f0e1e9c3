// Stand-in for <cublas_v2.h> in a user's kernel file: the types host code names, so that its
// declarations compile. The lab blanks host function bodies; nothing here is ever called.
#pragma once
// cuBLAS's own header brings the half and bfloat16 types, which a file may name through it alone.
#include <cuda_fp16.h>
#include <cuda_bf16.h>
typedef struct kernel_lab_cublas_context *cublasHandle_t;
typedef enum { CUBLAS_STATUS_SUCCESS = 0 } cublasStatus_t;
typedef enum { CUBLAS_OP_N = 0, CUBLAS_OP_T = 1, CUBLAS_OP_C = 2 } cublasOperation_t;
typedef enum { CUBLAS_DEFAULT_MATH = 0, CUBLAS_TENSOR_OP_MATH = 1, CUBLAS_TF32_TENSOR_OP_MATH = 3 } cublasMath_t;
typedef enum {
    CUBLAS_COMPUTE_16F = 64,
    CUBLAS_COMPUTE_32F = 68,
    CUBLAS_COMPUTE_32F_FAST_16F = 74,
    CUBLAS_COMPUTE_32F_FAST_16BF = 75,
    CUBLAS_COMPUTE_32F_FAST_TF32 = 77,
    CUBLAS_COMPUTE_64F = 70
} cublasComputeType_t;
