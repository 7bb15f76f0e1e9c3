// Stand-in for <sys/stat.h> in a user's kernel file, which host code (a check that a folder
// exists) includes. The simulator (a host C++ compiler) uses the real header; NVRTC has none,
// and device code needs nothing from it.
#pragma once
#ifdef KERNEL_LAB_SIM
#include_next <sys/stat.h>
#endif
