// Stand-in for <math.h> in a user's kernel file. The simulator (a host C++ compiler) uses the real
// header; NVRTC has none, and device code needs at most what follows.
#pragma once
#ifdef KERNEL_LAB_SIM
#include_next <math.h>
#else
// The math functions (sqrtf, expf, fmaxf...) are built into NVRTC.
#ifndef INFINITY
#define INFINITY __int_as_float(0x7f800000)
#endif
#ifndef NAN
#define NAN __int_as_float(0x7fffffff)
#endif
#endif
