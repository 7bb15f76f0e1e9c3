// Stand-in for <c10/macros/Macros.h>: the macros of PyTorch's core that kernels use.
#pragma once
#define C10_WARP_SIZE 32
#define C10_HOST_DEVICE __host__ __device__
#define C10_DEVICE __device__
#define C10_HOST __host__
#define C10_ALWAYS_INLINE inline __attribute__((always_inline))
#define C10_RESTRICT __restrict__
#define C10_LIKELY(expr) (__builtin_expect(static_cast<bool>(expr), 1))
#define C10_UNLIKELY(expr) (__builtin_expect(static_cast<bool>(expr), 0))
#define C10_LAUNCH_BOUNDS_0 __launch_bounds__(256, 4)
#define C10_LAUNCH_BOUNDS_1(max_threads_per_block) __launch_bounds__((max_threads_per_block))
#define C10_LAUNCH_BOUNDS_2(max_threads_per_block, min_blocks_per_sm) \
    __launch_bounds__((max_threads_per_block), (min_blocks_per_sm))
