// Stand-in for <cuda.h> in a user's kernel file. The simulator (a host C++ compiler) uses the real
// header; NVRTC has none, and device code needs at most what follows.
#pragma once
#ifdef KERNEL_LAB_SIM
#include_next <cuda.h>
#else
// The driver API is host-only.
#endif
