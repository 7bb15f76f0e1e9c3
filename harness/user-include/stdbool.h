// Stand-in for <stdbool.h> in a user's kernel file (a C header that C headers shared with CUDA
// include). The simulator (a host C++ compiler) uses the real header; NVRTC has none, and in C++
// it defines nothing but its own guard: bool, true and false are keywords.
#pragma once
#ifdef KERNEL_LAB_SIM
#include_next <stdbool.h>
#else
#define __bool_true_false_are_defined 1
#endif
