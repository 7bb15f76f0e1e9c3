// Included before a user's kernel file when the lab calls one of its kernels through a
// wrapper: the user's kernels become device functions, called by the `extern "C"` wrapper the
// lab appends (a kernel cannot call a kernel). Their `__launch_bounds__` move to the wrapper,
// which is declared with the block size the kernel is launched with. A `__grid_constant__`
// parameter (a struct taken by value) is an ordinary one of a device function.
#undef __global__
#define __global__ __device__
#undef __launch_bounds__
#define __launch_bounds__(...)
#undef __grid_constant__
#define __grid_constant__
