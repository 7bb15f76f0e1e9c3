// Stand-in for <curand.h> (cuRAND's host API) in a user's kernel file: the types host code
// names, so that its declarations compile. The lab blanks host function bodies and fills the
// inputs itself; nothing here is ever called.
#pragma once
typedef struct kernel_lab_curand_generator *curandGenerator_t;
typedef enum { CURAND_STATUS_SUCCESS = 0 } curandStatus_t;
typedef enum {
    CURAND_RNG_PSEUDO_DEFAULT = 100,
    CURAND_RNG_PSEUDO_XORWOW = 101,
    CURAND_RNG_PSEUDO_PHILOX4_32_10 = 161
} curandRngType_t;
