// Included after a user's kernel file, before the wrapper: `__global__`, `__launch_bounds__`
// and `__grid_constant__` mean what the compiler defines again (NVRTC's definitions, or the
// simulator's), for the wrapper and any file included after it.
#undef __global__
#undef __launch_bounds__
#ifndef KERNEL_LAB_SIM
#undef __grid_constant__
#define __grid_constant__ __location__(grid_constant)
#endif
#ifdef KERNEL_LAB_SIM
#define __global__
#define __launch_bounds__(...)
#else
#define __global__ __location__(global)
#define __launch_bounds__(...) __annotate__(launch_bounds(__VA_ARGS__))
#endif
