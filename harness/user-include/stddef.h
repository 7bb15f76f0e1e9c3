// Stand-in for <stddef.h> in a user's kernel file. The simulator (a host C++ compiler) uses the
// real header; NVRTC has none, and has size_t and ptrdiff_t built in. No include guard: the C
// library includes the real one several times, asking each time for other names.
#ifdef KERNEL_LAB_SIM
#include_next <stddef.h>
#endif
