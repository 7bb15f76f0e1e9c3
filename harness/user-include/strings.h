// Stand-in for <strings.h> in a user's kernel file, which host code (parsing command lines)
// includes. The simulator (a host C++ compiler) uses the real header; NVRTC has none, and
// device code needs nothing from it.
#pragma once
#ifdef KERNEL_LAB_SIM
#include_next <strings.h>
#endif
