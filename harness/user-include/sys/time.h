// Stand-in for <sys/time.h> in a user's kernel file, which host code (timing, logging)
// includes. The simulator (a host C++ compiler) uses the real header; NVRTC has none, and
// device code needs nothing from it. The host code's functions are blanked, but a host
// class keeps its data members (cuda-samples' StopWatchLinux holds a `struct timeval`),
// whose types NVRTC must know.
#pragma once
#ifdef KERNEL_LAB_SIM
#include_next <sys/time.h>
#else
struct timeval {
    long tv_sec;
    long tv_usec;
};
struct timezone {
    int tz_minuteswest;
    int tz_dsttime;
};
#endif
