// Stand-in for <sys/types.h> in a user's kernel file. The simulator (a host C++ compiler) uses
// the real header; NVRTC has none, and device code needs nothing from it. Its types, which a
// host class's member may name, are declared. No include guard: the C library includes the real
// one several times.
#ifdef KERNEL_LAB_SIM
#include_next <sys/types.h>
#elif !defined(KERNEL_LAB_SYS_TYPES)
#define KERNEL_LAB_SYS_TYPES
typedef long ssize_t;
typedef long off_t;
typedef int pid_t;
typedef unsigned int uid_t;
typedef unsigned int gid_t;
typedef unsigned int mode_t;
#endif
