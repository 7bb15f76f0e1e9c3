// sim_traffic.h: counts the global-memory traffic a kernel issues, for the roofline's x axis,
// and hands every other plain access to the race checker (sim_race_access, sim_runtime.h).
//
// In an instrumented build the kernel's translation unit is compiled with gcc's
// ThreadSanitizer instrumentation (`-fsanitize=thread`), which calls a hook before every
// load, store and atomic it cannot prove local. This file is those hooks, compiled as a
// translation unit of its own without the instrumentation and linked without the sanitizer's
// runtime: each hook adds the access's size to the traffic when its address lies in one of
// the launch's device buffers (shared memory, locals and the emulation's own state are not
// traffic), and hands plain accesses to shared memory to the race checker.
// What is counted is what the SMs ask of the memory system (loads that the compiler keeps in
// registers are not asked twice; cache hits are not subtracted).
//
// The emulation's own copies of a variable size (cp.async, TMA), which the instrumentation
// cannot see, report themselves through __tsan_read_range (SIM_GLOBAL_READ in sim_runtime.h).
#pragma once

#include <stddef.h>
#include <stdint.h>

// One launch's counting: its device buffers as [start, end) pairs, set by the host, and the
// totals the blocks add to. Owned by the host and passed with the launch (SimLaunch::traffic),
// so that launches of one module on several devices at once count apart. Mirrored in
// kernel/src/sim/ffi.rs.
constexpr int kMaxRanges = 64;
struct SimTraffic {
    uint64_t pairs[2 * kMaxRanges];
    int32_t ranges;
    uint64_t lowest, highest;
    uint64_t loads, stores;
};

extern "C" void sim_race_access(const void *p, unsigned long n, int write);  // sim_runtime.h

// The fibers' stacks, one [start, end) per worker, registered by the runtime when it maps
// them (sim_stacks_add). Most instrumented accesses of a kernel are to its locals there
// (WMMA fragments are arrays of 256 elements in every lane): they are neither shared nor
// global, and these plain globals reject them before the thread-local lookup, which in a
// dlopen'ed module is a call.
constexpr int kMaxStackRanges = 64;
static uintptr_t stack_ranges[2 * kMaxStackRanges];
static int stack_count;

extern "C" void sim_stacks_add(const void *start, size_t bytes) {
    int n = __atomic_load_n(&stack_count, __ATOMIC_RELAXED);  // callers hold the pool's lock
    if (n == kMaxStackRanges) return;                          // the slow path still decides right
    stack_ranges[2 * n] = (uintptr_t)start;
    stack_ranges[2 * n + 1] = (uintptr_t)start + bytes;
    __atomic_store_n(&stack_count, n + 1, __ATOMIC_RELEASE);
}

namespace sim_traffic {

inline bool on_a_stack(uintptr_t a) {
    int n = __atomic_load_n(&stack_count, __ATOMIC_ACQUIRE);
    for (int i = 0; i < n; ++i)
        if (a - stack_ranges[2 * i] < stack_ranges[2 * i + 1] - stack_ranges[2 * i]) return true;
    return false;
}

// What the hooks need of the block this OS thread runs, in one thread-local (one TLS lookup
// per hook): its launch's counts, its shared memory (static, then dynamic), and the bytes it
// loaded and stored. This state lies in the module's TLS block, which the runtime fills with
// NaN bytes at each block start (it holds the `__shared__` arrays): sim_traffic_begin sets it
// after that.
struct Block {
    SimTraffic *traffic;
    uintptr_t static_lo, static_bytes, dynamic_lo, dynamic_bytes;
    uint64_t loads, stores;
};
thread_local Block block;

inline bool global(const Block &b, uintptr_t a) {
    const SimTraffic *t = b.traffic;
    if (!t || a < t->lowest || a >= t->highest) return false;
    for (int i = 0; i < t->ranges; ++i)
        if (a >= t->pairs[2 * i] && a < t->pairs[2 * i + 1]) return true;
    return false;
}

// An access of `bytes` at `p`: shared memory goes to the race checker (unless atomic),
// global memory is counted, anything else (the fibers' stacks first, the runtime's state) is
// left.
inline void access(const void *p, uint64_t bytes, bool write, bool atomic) {
    uintptr_t a = (uintptr_t)p;
    if (on_a_stack(a)) return;
    Block &b = block;
    if (a - b.static_lo < b.static_bytes || a - b.dynamic_lo < b.dynamic_bytes) {
        if (!atomic) sim_race_access(p, bytes, write);
    } else if (global(b, a)) {
        (write ? b.stores : b.loads) += bytes;
    }
}

// Atomic accesses (counted, never race-checked), then plain ones.
inline void load(const void *p, uint64_t bytes) { access(p, bytes, false, true); }
inline void store(const void *p, uint64_t bytes) { access(p, bytes, true, true); }
inline void read(const void *p, uint64_t bytes) { access(p, bytes, false, false); }
inline void write(const void *p, uint64_t bytes) { access(p, bytes, true, false); }

}  // namespace sim_traffic

// ---- Called by the runtime ----

// A block starts on the calling OS thread: its launch counts into `t` (null: not counted), its
// shared memory is [static_lo, +static_bytes) and [dynamic_lo, +dynamic_bytes).
extern "C" void sim_traffic_begin(SimTraffic *t, const void *static_lo, size_t static_bytes,
                                  const void *dynamic_lo, size_t dynamic_bytes) {
    sim_traffic::block = sim_traffic::Block{t, (uintptr_t)static_lo, static_bytes, (uintptr_t)dynamic_lo,
                                            dynamic_bytes, 0, 0};
}

// The block has finished: what it counted goes to its launch's totals.
extern "C" void sim_traffic_flush() {
    sim_traffic::Block &b = sim_traffic::block;
    if (b.traffic) {
        __atomic_fetch_add(&b.traffic->loads, b.loads, __ATOMIC_RELAXED);
        __atomic_fetch_add(&b.traffic->stores, b.stores, __ATOMIC_RELAXED);
    }
    b = sim_traffic::Block{};
}

// ---- The instrumentation's hooks (the names and signatures gcc calls) ----

extern "C" {

void __tsan_init() {}
void __tsan_func_entry(void *) {}
void __tsan_func_exit() {}
void __tsan_vptr_update(void **, void *) {}
void __tsan_vptr_read(void **) {}
void __tsan_read_range(void *p, unsigned long n) { sim_traffic::read(p, n); }
void __tsan_write_range(void *p, unsigned long n) { sim_traffic::write(p, n); }

#define SIM_TRAFFIC_ACCESS(N)                                                       \
    void __tsan_read##N(void *p) { sim_traffic::read(p, N); }                       \
    void __tsan_write##N(void *p) { sim_traffic::write(p, N); }                     \
    void __tsan_unaligned_read##N(void *p) { sim_traffic::read(p, N); }             \
    void __tsan_unaligned_write##N(void *p) { sim_traffic::write(p, N); }           \
    void __tsan_volatile_read##N(void *p) { sim_traffic::read(p, N); }              \
    void __tsan_volatile_write##N(void *p) { sim_traffic::write(p, N); }            \
    void __tsan_unaligned_volatile_read##N(void *p) { sim_traffic::read(p, N); }    \
    void __tsan_unaligned_volatile_write##N(void *p) { sim_traffic::write(p, N); }
SIM_TRAFFIC_ACCESS(1)
SIM_TRAFFIC_ACCESS(2)
SIM_TRAFFIC_ACCESS(4)
SIM_TRAFFIC_ACCESS(8)
SIM_TRAFFIC_ACCESS(16)
#undef SIM_TRAFFIC_ACCESS

// Atomics: the instrumentation replaces each atomic builtin by one of these, which must also
// perform it. A read-modify-write counts as a load and a store. A compare-exchange counts as
// a store when it succeeds and as a load when it fails: the emulation's atomics (atomicAdd on
// floats, ...) load the old value first, so one that succeeds at once counts a load and a
// store, as a GPU's atomic does. The memory order is always sequentially consistent: stronger
// than asked, never weaker.
#define SIM_TRAFFIC_RMW(N, T, OP)                                                   \
    T __tsan_atomic##N##_##OP(volatile T *a, T v, int) {                            \
        sim_traffic::load((const void *)a, sizeof(T));                              \
        sim_traffic::store((const void *)a, sizeof(T));                             \
        return __atomic_##OP((T *)a, v, __ATOMIC_SEQ_CST);                          \
    }
#define SIM_TRAFFIC_ATOMICS(N, T)                                                   \
    T __tsan_atomic##N##_load(const volatile T *a, int) {                           \
        sim_traffic::load((const void *)a, sizeof(T));                              \
        return __atomic_load_n((T *)a, __ATOMIC_SEQ_CST);                           \
    }                                                                               \
    void __tsan_atomic##N##_store(volatile T *a, T v, int) {                        \
        sim_traffic::store((const void *)a, sizeof(T));                             \
        __atomic_store_n((T *)a, v, __ATOMIC_SEQ_CST);                              \
    }                                                                               \
    T __tsan_atomic##N##_exchange(volatile T *a, T v, int) {                        \
        sim_traffic::load((const void *)a, sizeof(T));                              \
        sim_traffic::store((const void *)a, sizeof(T));                             \
        return __atomic_exchange_n((T *)a, v, __ATOMIC_SEQ_CST);                    \
    }                                                                               \
    SIM_TRAFFIC_RMW(N, T, fetch_add)                                                \
    SIM_TRAFFIC_RMW(N, T, fetch_sub)                                                \
    SIM_TRAFFIC_RMW(N, T, fetch_and)                                                \
    SIM_TRAFFIC_RMW(N, T, fetch_or)                                                 \
    SIM_TRAFFIC_RMW(N, T, fetch_xor)                                                \
    SIM_TRAFFIC_RMW(N, T, fetch_nand)                                               \
    int __tsan_atomic##N##_compare_exchange_strong(volatile T *a, T *c, T v, int, int) { \
        bool done = __atomic_compare_exchange_n((T *)a, c, v, false, __ATOMIC_SEQ_CST, \
                                                __ATOMIC_SEQ_CST);                  \
        if (done) sim_traffic::store((const void *)a, sizeof(T));                   \
        else sim_traffic::load((const void *)a, sizeof(T));                         \
        return done;                                                                \
    }                                                                               \
    int __tsan_atomic##N##_compare_exchange_weak(volatile T *a, T *c, T v, int, int) { \
        return __tsan_atomic##N##_compare_exchange_strong(a, c, v, 0, 0);           \
    }                                                                               \
    T __tsan_atomic##N##_compare_exchange_val(volatile T *a, T c, T v, int, int) {  \
        __tsan_atomic##N##_compare_exchange_strong(a, &c, v, 0, 0);                 \
        return c;                                                                   \
    }
SIM_TRAFFIC_ATOMICS(8, uint8_t)
SIM_TRAFFIC_ATOMICS(16, uint16_t)
SIM_TRAFFIC_ATOMICS(32, uint32_t)
SIM_TRAFFIC_ATOMICS(64, uint64_t)
#undef SIM_TRAFFIC_ATOMICS
#undef SIM_TRAFFIC_RMW

void __tsan_atomic_thread_fence(int) { __atomic_thread_fence(__ATOMIC_SEQ_CST); }
void __tsan_atomic_signal_fence(int) { __atomic_signal_fence(__ATOMIC_SEQ_CST); }

}  // extern "C"
