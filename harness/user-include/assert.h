// Stand-in for <assert.h> in a user's kernel file: assertions are compiled out, as in a release
// build (-DNDEBUG), on NVRTC and in the simulator alike (a failing assert would abort the
// whole harness; the lab's own checks judge the output instead).
#pragma once
#ifdef KERNEL_LAB_SIM
#include_next <assert.h>
#endif
#undef assert
#define assert(e) ((void)0)
