// Included before a user's kernel file (the lab adds the line; it is not in the file). Names
// that CUDA code often takes for granted from host headers, for NVRTC, which has no host headers.
#pragma once
typedef unsigned int uint;
typedef unsigned short ushort;
typedef unsigned long ulong;
#ifndef KERNEL_LAB_SIM
#ifndef INFINITY
#define INFINITY __int_as_float(0x7f800000)
#endif
#ifndef NAN
#define NAN __int_as_float(0x7fffffff)
#endif
#endif
// The user's kernels become device functions, called by the `extern "C"` wrapper the lab
// appends (a kernel cannot call a kernel). Their `__launch_bounds__` move to the wrapper, which
// gets the block size the kernel is launched with.
#undef __global__
#define __global__ __device__
#undef __launch_bounds__
#define __launch_bounds__(...)
