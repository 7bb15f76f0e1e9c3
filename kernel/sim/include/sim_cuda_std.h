// sim_cuda_std.h: what the simulator's stand-ins for libcu++'s headers (cuda/barrier,
// cuda/pipeline, cuda/atomic) share: the cuda::std names code written for them uses, and the
// thread scopes.
#pragma once

#include <stddef.h>
#include <stdint.h>

#include <algorithm>
#include <utility>

namespace cuda {

// What code written for these headers takes from libcu++'s cuda::std (the Programming Guide's
// examples declare sizes as cuda::std::size_t).
namespace std {
using ::ptrdiff_t;
using ::size_t;
using ::int32_t;
using ::int64_t;
using ::uint32_t;
using ::uint64_t;
using ::uint8_t;
using ::std::forward;
using ::std::max;
using ::std::min;
using ::std::move;
// The rest as the host's standard library has it, for the stand-ins of <cuda/std/limits>,
// <cuda/std/type_traits>, ...: a name this namespace declares itself (atomic) is found first.
using namespace ::std;
}  // namespace std

enum thread_scope { thread_scope_system = 0, thread_scope_device = 1, thread_scope_block = 2, thread_scope_thread = 3 };

}  // namespace cuda
