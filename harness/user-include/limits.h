// Stand-in for <limits.h> in a user's kernel file. The simulator (a host C++ compiler) uses the real
// header, included as often as asked: gcc's own <limits.h> includes itself again to reach
// glibc's, which <thread> and <semaphore> need (_POSIX_SEM_VALUE_MAX). NVRTC has none, and
// device code needs at most what follows.
#ifdef KERNEL_LAB_SIM
#include_next <limits.h>
#else
#pragma once
#include <climits>
#endif
