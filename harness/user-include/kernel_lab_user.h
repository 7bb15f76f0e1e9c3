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
