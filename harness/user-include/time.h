// Stand-in for <time.h> in a user's kernel file, which host code (timing, logging)
// includes. The simulator (a host C++ compiler) uses the real header; NVRTC has none, and
// device code needs nothing from it. The host code's functions are blanked, but a host
// class keeps its data members (a timer's start time), whose types NVRTC must know.
#pragma once
#ifdef KERNEL_LAB_SIM
#include_next <time.h>
#else
struct timespec {
    long tv_sec;
    long tv_nsec;
};
#endif
