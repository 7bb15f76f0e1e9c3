// Stand-in for <stdio.h> in a user's kernel file. The simulator (a host C++ compiler) uses the real
// header; NVRTC has none, and device code needs at most what follows.
#pragma once
#ifdef KERNEL_LAB_SIM
#include_next <stdio.h>
#else
// printf is built into NVRTC for device code; host I/O lives in host functions.
#endif
