// Included after a user's kernel file, before the wrapper: `__global__` and `__launch_bounds__` mean what the
// compiler defines again (NVRTC's definitions, or the simulator's), for the wrapper.
#undef __global__
#undef __launch_bounds__
#ifdef KERNEL_LAB_SIM
#define __global__
#define __launch_bounds__(...)
#else
#define __global__ __location__(global)
#define __launch_bounds__(...) __annotate__(launch_bounds(__VA_ARGS__))
#endif
