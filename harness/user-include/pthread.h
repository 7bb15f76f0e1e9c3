// Stand-in for <pthread.h> in a user's kernel file. The simulator (a host C++ compiler) uses the
// real header; NVRTC has none, and device code needs nothing from it. Its types, which a host
// typedef or data member at file scope names (`typedef pthread_t CUTThread;`), are declared: they
// have the size of nothing real and are never used.
#pragma once
#ifdef KERNEL_LAB_SIM
#include_next <pthread.h>
#else
typedef unsigned long pthread_t;
typedef struct { void *impl_[5]; } pthread_mutex_t;
typedef struct { void *impl_[6]; } pthread_cond_t;
typedef struct { void *impl_[7]; } pthread_attr_t;
typedef struct { void *impl_[7]; } pthread_rwlock_t;
typedef struct { void *impl_[4]; } pthread_barrier_t;
typedef unsigned int pthread_key_t;
typedef int pthread_once_t;
#define PTHREAD_MUTEX_INITIALIZER {}
#define PTHREAD_COND_INITIALIZER {}
#define PTHREAD_ONCE_INIT 0
#endif
