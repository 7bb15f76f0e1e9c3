// Stand-in for <cuda.h> in a user's kernel file. The simulator (a host C++ compiler) uses the real
// header; NVRTC has none, and device code needs at most what follows.
#pragma once
#ifdef KERNEL_LAB_SIM
#include_next <cuda.h>
#else
// The driver API is host-only; its version, which code tests (`#if CUDA_VERSION >= 9000`), is
// that of the toolkit NVRTC comes from, as cuda.h's is nvcc's.
#define CUDA_VERSION (__CUDACC_VER_MAJOR__ * 1000 + __CUDACC_VER_MINOR__ * 10)
#endif
