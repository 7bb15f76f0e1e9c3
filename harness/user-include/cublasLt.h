// Stand-in for <cublasLt.h> in a user's kernel file: the types host code names, so that its
// declarations compile. The lab blanks host function bodies; nothing here is ever called.
#pragma once
// cuBLAS's own header brings the half and bfloat16 types, which a file may name through it alone.
#include <cuda_fp16.h>
#include <cuda_bf16.h>
#include "cublas_v2.h"
typedef struct kernel_lab_cublaslt_context *cublasLtHandle_t;
typedef struct kernel_lab_cublaslt_matmul_desc *cublasLtMatmulDesc_t;
typedef struct kernel_lab_cublaslt_matrix_layout *cublasLtMatrixLayout_t;
typedef struct kernel_lab_cublaslt_preference *cublasLtMatmulPreference_t;
typedef struct {
    unsigned long long data[8];
} cublasLtMatmulAlgo_t;
typedef struct {
    cublasLtMatmulAlgo_t algo;
    unsigned long workspaceSize;
    cublasStatus_t state;
    float wavesCount;
    int reserved[4];
} cublasLtMatmulHeuristicResult_t;
