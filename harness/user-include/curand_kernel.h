// Stand-in for <curand_kernel.h> (cuRAND's device API), which NVRTC does not ship: its state
// types and the calls kernels make most, so that a file including it compiles. A file usually
// includes it for a kernel of its host code that fills inputs, which the lab never launches:
// the lab fills inputs itself. A kernel of the lab's rows that does call these draws from
// SplitMix64 per (seed, subsequence, offset), a well-mixed sequence but not cuRAND's numbers.
#pragma once

#ifndef KERNEL_LAB_CURAND_STAND_IN
#define KERNEL_LAB_CURAND_STAND_IN

namespace kernel_lab {
struct curand_state {
    unsigned long long s;
};
__host__ __device__ inline unsigned long long splitmix64(unsigned long long *s) {
    unsigned long long z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}
} // namespace kernel_lab

struct curandStateXORWOW : kernel_lab::curand_state {};
struct curandStatePhilox4_32_10 : kernel_lab::curand_state {};
struct curandStateMRG32k3a : kernel_lab::curand_state {};
typedef curandStateXORWOW curandStateXORWOW_t;
typedef curandStateXORWOW curandState_t;
typedef curandStateXORWOW curandState;
typedef curandStatePhilox4_32_10 curandStatePhilox4_32_10_t;
typedef curandStateMRG32k3a curandStateMRG32k3a_t;

__host__ __device__ inline void curand_init(unsigned long long seed,
                                            unsigned long long subsequence,
                                            unsigned long long offset,
                                            kernel_lab::curand_state *state) {
    state->s = seed ^ (subsequence * 0xD1B54A32D192ED03ull);
    for (unsigned long long i = 0; i < offset % 64; ++i) kernel_lab::splitmix64(&state->s);
    state->s += offset;
}

// 32 random bits.
__host__ __device__ inline unsigned int curand(kernel_lab::curand_state *state) {
    return (unsigned int)(kernel_lab::splitmix64(&state->s) >> 32);
}

// Uniform in (0, 1], as cuRAND's.
__host__ __device__ inline float curand_uniform(kernel_lab::curand_state *state) {
    return ((curand(state) >> 8) + 1) * (1.0f / 16777216.0f);
}

__host__ __device__ inline double curand_uniform_double(kernel_lab::curand_state *state) {
    return ((kernel_lab::splitmix64(&state->s) >> 11) + 1) * (1.0 / 9007199254740992.0);
}

// Standard normal, by Box-Muller.
__host__ __device__ inline float curand_normal(kernel_lab::curand_state *state) {
    const float u = curand_uniform(state), v = curand_uniform(state);
    return sqrtf(-2.0f * logf(u)) * cosf(6.2831853071795865f * v);
}

__host__ __device__ inline double curand_normal_double(kernel_lab::curand_state *state) {
    const double u = curand_uniform_double(state), v = curand_uniform_double(state);
    return sqrt(-2.0 * log(u)) * cos(6.283185307179586 * v);
}

#endif
