// Stand-in for <ctype.h> in a user's kernel file. The simulator (a host C++ compiler) uses the real
// header; NVRTC has none, and device code needs nothing from it. No include guard: the C library
// includes the real one several times, asking each time for other names.
#ifdef KERNEL_LAB_SIM
#include_next <ctype.h>
#else
// Host-only: what it declares lives in host functions.
#endif
