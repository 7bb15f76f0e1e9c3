// sim_builtins.h: what CUDA C device code sees: keywords, thread indices, barriers, warp
// intrinsics, atomics, vector types and math functions, mapped onto sim_runtime.h.
#pragma once

#include <math.h>
#include <time.h>

#include <atomic>
// Before `__noinline__` is defined below: libstdc++'s shared_ptr (in <memory>, <regex>,
// <future>, which a user's host code may include) spells the attribute
// `__attribute__((__noinline__))`, which the macro would break.
#include <memory>
#include <type_traits>

#include "sim_runtime.h"

// ---- Keywords ----
#define __global__
#define __device__
#define __host__
#define __noinline__ __attribute__((noinline))
#define __forceinline__ inline __attribute__((always_inline))
#define __restrict__ __restrict
#define __launch_bounds__(...)
// The host reads a kernel's cluster dims from its declaration (compile.rs, sim_launch.h).
#define __cluster_dims__(...)
#define __align__(n) __attribute__((aligned(n)))
// Exported so that the host can find the array and copy a plan's data into it
// (`Step::Constant`); a module is loaded with its symbols local to it.
#define __constant__ __attribute__((visibility("default")))
// One block per OS thread at a time, so an OS-thread-local variable is a per-block variable.
// extern __shared__ arrays are rewritten by the host before compiling (see compile.rs).
// Each starts at a 16-byte boundary at least, as nvcc places the arrays it reads with vector
// loads, whatever else the module's thread-local block holds: the bank model (sim_banks.h)
// counts contiguous accesses within an aligned 16 bytes as one.
#define __shared__ static thread_local __attribute__((aligned(16)))
#define warpSize 32

namespace sim {
// The alignment the simulator gives a static __shared__ object whose type is aligned to
// `a` (kernel/src/sim/compile.rs adds it): a type aligned to 128 bytes or more holds tiles
// the TMA or wgmma may swizzle, which need a 1024-byte boundary, where a GPU's packing from
// its 1024-byte-aligned base puts a kernel's first such object.
constexpr unsigned long placed_align(unsigned long a) { return a >= 128 ? 1024 : a; }
}  // namespace sim

// ---- Thread indices ----
#define threadIdx (tl_fiber->tid)
#define blockIdx (tl_worker->block_idx)
#define blockDim (tl_worker->block_dim)
#define gridDim (tl_worker->grid_dim)

namespace sim {
inline void *dynamic_smem() { return tl_worker->dyn_smem; }
}  // namespace sim

// ---- Barriers and warp operations ----
// Each, like the warp operations below, names its line while it runs (a SourceSite), which a
// failure or a deadlock report gives.
inline void __syncthreads(sim::Caller at = {}) {
    const sim::SourceSite site(at.file, at.line);
    sim::syncthreads();
}
inline int __syncthreads_count(int pred, sim::Caller at = {}) {
    const sim::SourceSite site(at.file, at.line);
    sim::Worker &w = sim::worker();
    w.bar_count[sim::fiber().bar_parity ^ 1] += pred != 0;
    sim::syncthreads();
    return w.bar_count[sim::fiber().bar_parity];
}
// Over the threads that reached the barrier: those that exited before it are not waited for.
inline int __syncthreads_and(int pred, sim::Caller at = {}) {
    const int count = __syncthreads_count(pred, at);
    return count == (int)sim::worker().bar_threads[sim::fiber().bar_parity];
}
inline int __syncthreads_or(int pred, sim::Caller at = {}) { return __syncthreads_count(pred, at) != 0; }
inline void __syncwarp(unsigned mask = 0xFFFFFFFFu, sim::Caller at = {}) {
    const sim::SourceSite site(at.file, at.line);
    sim::Fiber &f = sim::fiber();
    f.parity ^= 1;
    sim::warp_wait(mask);
}
// Every lane the warp has: which lanes a GPU runs converged at this point, the simulator's
// schedule cannot tell (a shuffle with this mask waits only for lanes that have not exited).
inline unsigned __activemask() { return sim::worker().warps[sim::fiber().warp].present; }
// A fence at GPU (or system) scope can order one block's global accesses before another's
// (sim_global.h); one at block scope orders nothing between blocks.
inline void __threadfence() {
    std::atomic_thread_fence(std::memory_order_seq_cst);
    SIM_GLOBAL_FENCE();
}
inline void __threadfence_system() { __threadfence(); }
inline void __threadfence_block() { std::atomic_thread_fence(std::memory_order_seq_cst); }

template <class T_>
inline T_ __shfl_sync(unsigned mask, T_ v, int src, int width = 32, sim::Caller at = {}) {
    const sim::SourceSite site(at.file, at.line);
    int lane = (int)sim::fiber().lane;
    return sim::warp_exchange(mask, v, (lane & ~(width - 1)) + (src & (width - 1)));
}
template <class T_>
inline T_ __shfl_up_sync(unsigned mask, T_ v, unsigned delta, int width = 32, sim::Caller at = {}) {
    const sim::SourceSite site(at.file, at.line);
    int lane = (int)sim::fiber().lane;
    int src = (lane % width) < (int)delta ? -1 : lane - (int)delta;
    T_ got = sim::warp_exchange(mask, v, src);
    return src < 0 ? v : got;
}
template <class T_>
inline T_ __shfl_down_sync(unsigned mask, T_ v, unsigned delta, int width = 32, sim::Caller at = {}) {
    const sim::SourceSite site(at.file, at.line);
    int lane = (int)sim::fiber().lane;
    int src = (lane % width) + (int)delta >= width ? -1 : lane + (int)delta;
    T_ got = sim::warp_exchange(mask, v, src);
    return src < 0 ? v : got;
}
template <class T_>
inline T_ __shfl_xor_sync(unsigned mask, T_ v, int lane_mask, int width = 32, sim::Caller at = {}) {
    const sim::SourceSite site(at.file, at.line);
    int lane = (int)sim::fiber().lane;
    int src = lane ^ lane_mask;
    // Lanes may read earlier groups of `width`, never later ones.
    if (src >= (lane / width + 1) * width) src = -1;
    T_ got = sim::warp_exchange(mask, v, src);
    return src < 0 ? v : got;
}
inline unsigned __ballot_sync(unsigned mask, int pred, sim::Caller at = {}) {
    const sim::SourceSite site(at.file, at.line);
    return sim::ballot(mask, pred);
}
inline int __any_sync(unsigned mask, int pred, sim::Caller at = {}) { return __ballot_sync(mask, pred, at) != 0; }
inline int __all_sync(unsigned mask, int pred, sim::Caller at = {}) {
    const sim::SourceSite site(at.file, at.line);
    unsigned took_part;
    return sim::ballot(mask, pred, &took_part) == took_part;
}

// ---- Warp reductions (sm_80's redux.sync): each lane of `mask` gets the reduction of the
// values of all of them, combined in lane order (exact for integers, as on a GPU). ----
namespace sim {
template <class T_, class Op>
inline T_ warp_reduce(unsigned mask, T_ v, Op op) {
    T_ acc{};
    bool first = true;
    for (int src = 0; src < 32; ++src) {
        if (!((mask >> src) & 1u)) continue;
        const T_ got = warp_exchange(mask, v, src);
        acc = first ? got : op(acc, got);
        first = false;
    }
    return acc;
}
}  // namespace sim
#define SIM_WARP_REDUCE(name, T_, expr)                                        \
    inline T_ name(unsigned mask, T_ v, sim::Caller at = {}) {                  \
        const sim::SourceSite site(at.file, at.line);                         \
        return sim::warp_reduce(mask, v, [](T_ a, T_ b) -> T_ { return expr; }); \
    }
SIM_WARP_REDUCE(__reduce_add_sync, unsigned, a + b)
SIM_WARP_REDUCE(__reduce_add_sync, int, (int)((unsigned)a + (unsigned)b))
SIM_WARP_REDUCE(__reduce_min_sync, unsigned, a < b ? a : b)
SIM_WARP_REDUCE(__reduce_min_sync, int, a < b ? a : b)
SIM_WARP_REDUCE(__reduce_max_sync, unsigned, a > b ? a : b)
SIM_WARP_REDUCE(__reduce_max_sync, int, a > b ? a : b)
SIM_WARP_REDUCE(__reduce_and_sync, unsigned, a & b)
SIM_WARP_REDUCE(__reduce_or_sync, unsigned, a | b)
SIM_WARP_REDUCE(__reduce_xor_sync, unsigned, a ^ b)
#undef SIM_WARP_REDUCE

// ---- Atomics: blocks run in parallel on several OS threads, so these are real atomics. ----
namespace sim {
// The compare-exchange loop of an atomic a GPU does in one instruction (a float add, a
// maximum), uninstrumented: the tries that lose to another OS thread's are not traffic, so
// the caller counts the atomic once (SIM_ATOMIC_RMW), as a GPU's read-modify-write.
template <class T_, class Op>
SIM_UNINSTRUMENTED T_ compare_exchange_loop(T_ *p, Op op) {
    T_ old = __atomic_load_n(p, __ATOMIC_RELAXED);
    while (!__atomic_compare_exchange_n(p, &old, op(old), true, __ATOMIC_SEQ_CST, __ATOMIC_RELAXED)) {
    }
    return old;
}
template <class T_, class Op>
inline T_ atomic_update(T_ *p, Op op) {
    SIM_ATOMIC_RMW(p, sizeof(T_));
    return compare_exchange_loop(p, op);
}
template <class F_, class I_>
inline F_ atomic_float(F_ *p, F_ (*op)(F_, F_), F_ v) {
    static_assert(sizeof(F_) == sizeof(I_));
    auto bits = [](auto x, auto as) {
        memcpy(&as, &x, sizeof as);
        return as;
    };
    SIM_ATOMIC_RMW(p, sizeof(F_));
    I_ old = compare_exchange_loop(reinterpret_cast<I_ *>(p), [&](I_ o) { return bits(op(bits(o, F_{}), v), I_{}); });
    return bits(old, F_{});
}
inline float fadd(float a, float b) { return a + b; }
inline double dadd(double a, double b) { return a + b; }
}  // namespace sim

inline float atomicAdd(float *p, float v) { return sim::atomic_float<float, uint32_t>(p, sim::fadd, v); }
inline double atomicAdd(double *p, double v) { return sim::atomic_float<double, uint64_t>(p, sim::dadd, v); }
// No float atomicMax or atomicMin: CUDA has none, and files that need one define their own
// (through atomicCAS), which a definition here would collide with.

#define SIM_INT_ATOMICS(T_)                                                                           \
    inline T_ atomicAdd(T_ *p, T_ v) { return __atomic_fetch_add(p, v, __ATOMIC_SEQ_CST); }             \
    inline T_ atomicSub(T_ *p, T_ v) { return __atomic_fetch_sub(p, v, __ATOMIC_SEQ_CST); }             \
    inline T_ atomicAnd(T_ *p, T_ v) { return __atomic_fetch_and(p, v, __ATOMIC_SEQ_CST); }             \
    inline T_ atomicOr(T_ *p, T_ v) { return __atomic_fetch_or(p, v, __ATOMIC_SEQ_CST); }               \
    inline T_ atomicXor(T_ *p, T_ v) { return __atomic_fetch_xor(p, v, __ATOMIC_SEQ_CST); }             \
    inline T_ atomicExch(T_ *p, T_ v) { return __atomic_exchange_n(p, v, __ATOMIC_SEQ_CST); }           \
    inline T_ atomicMax(T_ *p, T_ v) { return sim::atomic_update(p, [v](T_ o) { return o > v ? o : v; }); } \
    inline T_ atomicMin(T_ *p, T_ v) { return sim::atomic_update(p, [v](T_ o) { return o < v ? o : v; }); } \
    inline T_ atomicCAS(T_ *p, T_ cmp, T_ v) {                                                           \
        __atomic_compare_exchange_n(p, &cmp, v, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);          \
        return cmp;                                                                                  \
    }
SIM_INT_ATOMICS(int)
SIM_INT_ATOMICS(unsigned int)
SIM_INT_ATOMICS(unsigned long long)
#undef SIM_INT_ATOMICS
inline float atomicExch(float *p, float v) {
    float old;
    __atomic_exchange(p, &v, &old, __ATOMIC_SEQ_CST);
    return old;
}
inline unsigned atomicInc(unsigned *p, unsigned limit) {
    return sim::atomic_update(p, [limit](unsigned o) { return o >= limit ? 0u : o + 1; });
}

// ---- Waiting, time, aborting ----
// A thread that sleeps is waiting for another one: the block's other threads run first, and
// the spinning is noticed as polls are (sim_runtime.h).
inline void __nanosleep(unsigned) { sim::spin_yield(); }
// The SM's cycle counters, as a clock of 1 GHz: what a timeout measured with them needs.
inline long long clock64() {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (long long)t.tv_sec * 1000000000ll + t.tv_nsec;
}
[[noreturn]] inline void __trap() { sim::fail("__trap(): the kernel aborted the launch"); }

// ---- Vector types (vector_types.h): aligned like CUDA's, so float4 loads need 16-byte
// alignment; each with its make_ function (vector_functions.h). uint3 is sim_runtime.h's. ----
#define SIM_VEC1(T_, N_, A_)                                  \
    struct __attribute__((aligned(A_))) N_ { T_ x; };          \
    inline N_ make_##N_(T_ x) { return {x}; }
#define SIM_VEC2(T_, N_, A_)                                  \
    struct __attribute__((aligned(A_))) N_ { T_ x, y; };       \
    inline N_ make_##N_(T_ x, T_ y) { return {x, y}; }
#define SIM_VEC3(T_, N_, A_)                                  \
    struct __attribute__((aligned(A_))) N_ { T_ x, y, z; };    \
    inline N_ make_##N_(T_ x, T_ y, T_ z) { return {x, y, z}; }
#define SIM_VEC4(T_, N_, A_)                                  \
    struct __attribute__((aligned(A_))) N_ { T_ x, y, z, w; }; \
    inline N_ make_##N_(T_ x, T_ y, T_ z, T_ w) { return {x, y, z, w}; }
#define SIM_VECS(T_, N_, A1, A2, A3, A4) \
    SIM_VEC1(T_, N_##1, A1)              \
    SIM_VEC2(T_, N_##2, A2)              \
    SIM_VEC3(T_, N_##3, A3)              \
    SIM_VEC4(T_, N_##4, A4)
SIM_VECS(signed char, char, 1, 2, 1, 4)
SIM_VECS(unsigned char, uchar, 1, 2, 1, 4)
SIM_VECS(short, short, 2, 4, 2, 8)
SIM_VECS(unsigned short, ushort, 2, 4, 2, 8)
SIM_VECS(int, int, 4, 8, 4, 16)
SIM_VEC1(unsigned int, uint1, 4)
SIM_VEC2(unsigned int, uint2, 8)
SIM_VEC4(unsigned int, uint4, 16)
SIM_VECS(long, long, 8, 16, 8, 16)
SIM_VECS(unsigned long, ulong, 8, 16, 8, 16)
SIM_VECS(long long, longlong, 8, 16, 8, 16)
SIM_VECS(unsigned long long, ulonglong, 8, 16, 8, 16)
SIM_VECS(float, float, 4, 8, 4, 16)
SIM_VECS(double, double, 8, 16, 8, 16)
// CUDA 13's 4-vectors of 8-byte elements with an explicit alignment.
SIM_VEC4(long, long4_16a, 16)
SIM_VEC4(long, long4_32a, 32)
SIM_VEC4(unsigned long, ulong4_16a, 16)
SIM_VEC4(unsigned long, ulong4_32a, 32)
SIM_VEC4(long long, longlong4_16a, 16)
SIM_VEC4(long long, longlong4_32a, 32)
SIM_VEC4(unsigned long long, ulonglong4_16a, 16)
SIM_VEC4(unsigned long long, ulonglong4_32a, 32)
SIM_VEC4(double, double4_16a, 16)
SIM_VEC4(double, double4_32a, 32)
#undef SIM_VECS
#undef SIM_VEC1
#undef SIM_VEC2
#undef SIM_VEC3
#undef SIM_VEC4
inline uint3 make_uint3(unsigned x, unsigned y, unsigned z) { return {x, y, z}; }

// ---- Loads through the read-only cache and with cache hints (__ldcs, __stcs...): plain loads
// and stores here. ----
template <class T_>
inline T_ __ldg(const T_ *p) { return *p; }
template <class T_>
inline T_ __ldca(const T_ *p) { return *p; }
template <class T_>
inline T_ __ldcg(const T_ *p) { return *p; }
template <class T_>
inline T_ __ldcs(const T_ *p) { return *p; }
template <class T_>
inline T_ __ldlu(const T_ *p) { return *p; }
template <class T_>
inline T_ __ldcv(const T_ *p) { return *p; }
// The value converts to the pointer's type, as it does to the parameter of CUDA's overload
// for that type (`__stwt(&bf16_out[i], acc)` with a float acc).
template <class T_>
inline void __stwb(T_ *p, std::type_identity_t<T_> v) { *p = v; }
template <class T_>
inline void __stcg(T_ *p, std::type_identity_t<T_> v) { *p = v; }
template <class T_>
inline void __stcs(T_ *p, std::type_identity_t<T_> v) { *p = v; }
template <class T_>
inline void __stwt(T_ *p, std::type_identity_t<T_> v) { *p = v; }

// ---- Math: CUDA's global overloads and intrinsics. The fast intrinsics use the accurate
// functions; results may differ from the GPU in the last bits, never in meaning. ----
inline int min(int a, int b) { return a < b ? a : b; }
inline int max(int a, int b) { return a > b ? a : b; }
inline unsigned min(unsigned a, unsigned b) { return a < b ? a : b; }
inline unsigned max(unsigned a, unsigned b) { return a > b ? a : b; }
inline long long min(long long a, long long b) { return a < b ? a : b; }
inline long long max(long long a, long long b) { return a > b ? a : b; }
// The mixed-sign and mixed-width overloads of CUDA's math_functions.hpp: the unsigned or the
// wider type wins, as there.
inline unsigned min(int a, unsigned b) { return min((unsigned)a, b); }
inline unsigned min(unsigned a, int b) { return min(a, (unsigned)b); }
inline unsigned max(int a, unsigned b) { return max((unsigned)a, b); }
inline unsigned max(unsigned a, int b) { return max(a, (unsigned)b); }
inline long min(long a, long b) { return a < b ? a : b; }
inline long max(long a, long b) { return a > b ? a : b; }
inline unsigned long min(unsigned long a, unsigned long b) { return a < b ? a : b; }
inline unsigned long max(unsigned long a, unsigned long b) { return a > b ? a : b; }
inline unsigned long min(long a, unsigned long b) { return min((unsigned long)a, b); }
inline unsigned long min(unsigned long a, long b) { return min(a, (unsigned long)b); }
inline unsigned long max(long a, unsigned long b) { return max((unsigned long)a, b); }
inline unsigned long max(unsigned long a, long b) { return max(a, (unsigned long)b); }
inline unsigned long long min(unsigned long long a, unsigned long long b) { return a < b ? a : b; }
inline unsigned long long max(unsigned long long a, unsigned long long b) { return a > b ? a : b; }
inline unsigned long long min(long long a, unsigned long long b) { return min((unsigned long long)a, b); }
inline unsigned long long min(unsigned long long a, long long b) { return min(a, (unsigned long long)b); }
inline unsigned long long max(long long a, unsigned long long b) { return max((unsigned long long)a, b); }
inline unsigned long long max(unsigned long long a, long long b) { return max(a, (unsigned long long)b); }
inline float min(float a, float b) { return fminf(a, b); }
inline float max(float a, float b) { return fmaxf(a, b); }
inline double min(double a, double b) { return fmin(a, b); }
inline double max(double a, double b) { return fmax(a, b); }
inline double min(float a, double b) { return fmin((double)a, b); }
inline double min(double a, float b) { return fmin(a, (double)b); }
inline double max(float a, double b) { return fmax((double)a, b); }
inline double max(double a, float b) { return fmax(a, (double)b); }
inline float __expf(float x) { return expf(x); }
inline float __exp10f(float x) { return exp10f(x); }
inline float __logf(float x) { return logf(x); }
inline float __log2f(float x) { return log2f(x); }
inline float __sinf(float x) { return sinf(x); }
inline float __cosf(float x) { return cosf(x); }
inline float __tanf(float x) { return tanf(x); }
inline float __powf(float x, float y) { return powf(x, y); }
inline float __tanhf(float x) { return tanhf(x); }
inline float __fdividef(float a, float b) { return a / b; }
inline float rsqrtf(float x) { return 1.0f / sqrtf(x); }
inline double rsqrt(double x) { return 1.0 / sqrt(x); }
inline float __frsqrt_rn(float x) { return 1.0f / sqrtf(x); }
inline float __saturatef(float x) { return x > 0.0f ? (x > 1.0f ? 1.0f : x) : 0.0f; }  // NaN: 0
inline void sincosf_(float x, float *s, float *c) { *s = sinf(x); *c = cosf(x); }
inline void __sincosf(float x, float *s, float *c) { sincosf_(x, s, c); }

// CUDA's math functions that C's library lacks (glibc 2.41 declares the pi forms itself, as
// C23 does). The pi forms take their argument in half periods: whole periods come off exactly
// before pi multiplies, and the zeros fall on exact zeros, as on the GPU.
#if !(defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 41)))
inline double sinpi(double x) {
    const double r = fmod(x, 2.0);
    return r == floor(r) ? copysign(0.0, x) : sin(3.14159265358979323846 * r);
}
inline double cospi(double x) {
    const double r = fabs(fmod(x, 2.0));
    return r == 0.5 || r == 1.5 ? 0.0 : cos(3.14159265358979323846 * r);
}
inline float sinpif(float x) { return (float)sinpi((double)x); }
inline float cospif(float x) { return (float)cospi((double)x); }
#endif
inline void sincospi(double x, double *s, double *c) { *s = sinpi(x); *c = cospi(x); }
inline void sincospif(float x, float *s, float *c) { *s = sinpif(x); *c = cospif(x); }
inline float rcbrtf(float x) { return 1.0f / cbrtf(x); }
inline double rcbrt(double x) { return 1.0 / cbrt(x); }
inline float rhypotf(float x, float y) { return 1.0f / hypotf(x, y); }
inline double rhypot(double x, double y) { return 1.0 / hypot(x, y); }
inline float norm3df(float a, float b, float c) { return (float)sqrt((double)a * a + (double)b * b + (double)c * c); }
inline float rnorm3df(float a, float b, float c) { return 1.0f / norm3df(a, b, c); }
inline double norm3d(double a, double b, double c) { return sqrt(a * a + b * b + c * c); }
inline double rnorm3d(double a, double b, double c) { return 1.0 / norm3d(a, b, c); }
inline float normcdff(float x) { return 0.5f * erfcf(-x * 0.70710678118654752f); }
inline double normcdf(double x) { return 0.5 * erfc(-x * 0.70710678118654752); }

// ---- Bit intrinsics ----
inline int __popc(unsigned x) { return __builtin_popcount(x); }
inline int __popcll(unsigned long long x) { return __builtin_popcountll(x); }
inline int __clz(int x) { return x ? __builtin_clz((unsigned)x) : 32; }
inline int __clzll(long long x) { return x ? __builtin_clzll((unsigned long long)x) : 64; }
inline int __ffs(int x) { return __builtin_ffs(x); }
inline int __ffsll(long long x) { return __builtin_ffsll(x); }
inline unsigned __brev(unsigned x) {
    x = ((x >> 1) & 0x55555555u) | ((x & 0x55555555u) << 1);
    x = ((x >> 2) & 0x33333333u) | ((x & 0x33333333u) << 2);
    x = ((x >> 4) & 0x0F0F0F0Fu) | ((x & 0x0F0F0F0Fu) << 4);
    return __builtin_bswap32(x);
}
inline unsigned long long __brevll(unsigned long long x) {
    return (unsigned long long)__brev((unsigned)x) << 32 | __brev((unsigned)(x >> 32));
}
inline unsigned __umulhi(unsigned a, unsigned b) { return (unsigned)(((unsigned long long)a * b) >> 32); }
inline int __mulhi(int a, int b) { return (int)(((long long)a * b) >> 32); }
inline int __float_as_int(float x) { int i; memcpy(&i, &x, 4); return i; }
inline unsigned __float_as_uint(float x) { unsigned i; memcpy(&i, &x, 4); return i; }
inline float __int_as_float(int i) { float x; memcpy(&x, &i, 4); return x; }
inline float __uint_as_float(unsigned i) { float x; memcpy(&x, &i, 4); return x; }
inline long long __double_as_longlong(double x) { long long i; memcpy(&i, &x, 8); return i; }
inline double __longlong_as_double(long long i) { double x; memcpy(&x, &i, 8); return x; }
