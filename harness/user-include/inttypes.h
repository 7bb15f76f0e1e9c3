// Stand-in for <inttypes.h> in a user's kernel file. The simulator (a host C++ compiler) uses the real
// header; NVRTC has none, and device code needs nothing from it. No include guard: the C library
// includes the real one several times, asking each time for other names.
#ifdef KERNEL_LAB_SIM
#include_next <inttypes.h>
#else
// Device printf may print a 64-bit integer with "%" PRId64; the rest is host-only.
#include <cstdint>
#ifndef PRId64
#define PRId8 "d"
#define PRId16 "d"
#define PRId32 "d"
#define PRId64 "ld"
#define PRIi32 "i"
#define PRIi64 "li"
#define PRIu8 "u"
#define PRIu16 "u"
#define PRIu32 "u"
#define PRIu64 "lu"
#define PRIx32 "x"
#define PRIx64 "lx"
#define PRIX32 "X"
#define PRIX64 "lX"
#endif
#endif
