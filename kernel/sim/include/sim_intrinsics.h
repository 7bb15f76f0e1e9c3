// sim_intrinsics.h (simulator): the device intrinsics of the toolkit's crt/device_functions.h,
// device_double_functions.h, sm_*_intrinsics.h, sm_*_atomic_functions.h and sm_*_rt.h that
// sim_builtins.h does not define, as the toolkit documents them: directed rounding,
// conversions, integer and SIMD (per-byte, per-halfword) arithmetic, Hopper's DPX, the
// address-space tests, the cluster runtime and the scoped atomics.
#pragma once

#include <fenv.h>

#include <cmath>
#include <limits>

#include "sim_hopper.h"

namespace sim {
// `op()` computed in `mode` (FE_DOWNWARD...): its operands are read and its result written
// through volatiles, which keeps the operation between the two fesetround calls.
template <class T_, class Op>
inline T_ rounded(int mode, Op op) {
    if (mode == FE_TONEAREST) return op();
    fesetround(mode);
    volatile T_ r = op();
    fesetround(FE_TONEAREST);
    return r;
}
template <class T_>
inline T_ fp_add(T_ a, T_ b, int mode) {
    volatile T_ x = a, y = b;
    return rounded<T_>(mode, [&] { return x + y; });
}
template <class T_>
inline T_ fp_sub(T_ a, T_ b, int mode) {
    volatile T_ x = a, y = b;
    return rounded<T_>(mode, [&] { return x - y; });
}
template <class T_>
inline T_ fp_mul(T_ a, T_ b, int mode) {
    volatile T_ x = a, y = b;
    return rounded<T_>(mode, [&] { return x * y; });
}
template <class T_>
inline T_ fp_div(T_ a, T_ b, int mode) {
    volatile T_ x = a, y = b;
    return rounded<T_>(mode, [&] { return x / y; });
}
template <class T_>
inline T_ fp_sqrt(T_ a, int mode) {
    volatile T_ x = a;
    return rounded<T_>(mode, [&] { return (T_)std::sqrt(x); });
}
template <class T_>
inline T_ fp_fma(T_ a, T_ b, T_ c, int mode) {
    volatile T_ x = a, y = b, z = c;
    return rounded<T_>(mode, [&] { return (T_)std::fma(x, y, z); });
}
// An integer or double converted to T in `mode`.
template <class T_, class S_>
inline T_ fp_convert(S_ v, int mode) {
    volatile S_ x = v;
    return rounded<T_>(mode, [&] { return (T_)x; });
}
// A float or double to integer T in `mode`, saturating; `nan` for NaN.
template <class T_, class F_>
inline T_ to_int(F_ v, int mode, T_ nan) {
    if (v != v) return nan;
    const long double x = v;
    const long double i = mode == FE_TONEAREST ? nearbyintl(x) : mode == FE_TOWARDZERO ? truncl(x)
                          : mode == FE_DOWNWARD  ? floorl(x)
                                                 : ceill(x);
    if (i <= (long double)std::numeric_limits<T_>::min()) return std::numeric_limits<T_>::min();
    if (i >= (long double)std::numeric_limits<T_>::max()) return std::numeric_limits<T_>::max();
    return (T_)i;
}

// Lanes of a 32-bit word: `n` of `bits` each, signed or not.
inline long long lane(unsigned v, unsigned i, unsigned bits, bool is_signed) {
    const unsigned long long u = (v >> (i * bits)) & ((1ull << bits) - 1);
    return is_signed && (u >> (bits - 1)) ? (long long)u - (1ll << bits) : (long long)u;
}
template <class Op>
inline unsigned lanes(unsigned a, unsigned b, unsigned bits, bool is_signed, Op op) {
    unsigned r = 0;
    for (unsigned i = 0; i < 32 / bits; ++i) {
        const long long v = op(lane(a, i, bits, is_signed), lane(b, i, bits, is_signed));
        r |= (unsigned)((unsigned long long)v & ((1ull << bits) - 1)) << (i * bits);
    }
    return r;
}
inline long long clamp_lane(long long v, unsigned bits, bool is_signed) {
    const long long lo = is_signed ? -(1ll << (bits - 1)) : 0;
    const long long hi = is_signed ? (1ll << (bits - 1)) - 1 : (1ll << bits) - 1;
    return v < lo ? lo : v > hi ? hi : v;
}
}  // namespace sim

// ---- Directed rounding (crt/device_functions.h, device_double_functions.h) ----
#define SIM_ROUNDED(suffix, mode)                                                                            \
    inline float __fadd##suffix(float a, float b) { return sim::fp_add(a, b, mode); }                       \
    inline float __fsub##suffix(float a, float b) { return sim::fp_sub(a, b, mode); }                       \
    inline float __fmul##suffix(float a, float b) { return sim::fp_mul(a, b, mode); }                       \
    inline float __fdiv##suffix(float a, float b) { return sim::fp_div(a, b, mode); }                       \
    inline float __frcp##suffix(float a) { return sim::fp_div(1.0f, a, mode); }                             \
    inline float __fsqrt##suffix(float a) { return sim::fp_sqrt(a, mode); }                                 \
    inline float __fmaf##suffix(float a, float b, float c) { return sim::fp_fma(a, b, c, mode); }           \
    inline float __fmaf_ieee##suffix(float a, float b, float c) { return sim::fp_fma(a, b, c, mode); }      \
    inline double __dadd##suffix(double a, double b) { return sim::fp_add(a, b, mode); }                    \
    inline double __dsub##suffix(double a, double b) { return sim::fp_sub(a, b, mode); }                    \
    inline double __dmul##suffix(double a, double b) { return sim::fp_mul(a, b, mode); }                    \
    inline double __ddiv##suffix(double a, double b) { return sim::fp_div(a, b, mode); }                    \
    inline double __drcp##suffix(double a) { return sim::fp_div(1.0, a, mode); }                            \
    inline double __dsqrt##suffix(double a) { return sim::fp_sqrt(a, mode); }                               \
    inline double __fma##suffix(double a, double b, double c) { return sim::fp_fma(a, b, c, mode); }        \
    inline float __double2float##suffix(double a) { return sim::fp_convert<float>(a, mode); }               \
    inline float __int2float##suffix(int a) { return sim::fp_convert<float>(a, mode); }                     \
    inline float __uint2float##suffix(unsigned int a) { return sim::fp_convert<float>(a, mode); }           \
    inline float __ll2float##suffix(long long int a) { return sim::fp_convert<float>(a, mode); }            \
    inline float __ull2float##suffix(unsigned long long int a) { return sim::fp_convert<float>(a, mode); }  \
    inline double __ll2double##suffix(long long int a) { return sim::fp_convert<double>(a, mode); }         \
    inline double __ull2double##suffix(unsigned long long int a) { return sim::fp_convert<double>(a, mode); } \
    inline int __double2int##suffix(double a) { return sim::to_int<int>(a, mode, 0); }                      \
    inline unsigned int __double2uint##suffix(double a) { return sim::to_int<unsigned>(a, mode, 0u); }      \
    inline long long int __double2ll##suffix(double a) {                                                     \
        return sim::to_int<long long>(a, mode, (long long)0x8000000000000000ull);                            \
    }                                                                                                        \
    inline unsigned long long int __double2ull##suffix(double a) {                                          \
        return sim::to_int<unsigned long long>(a, mode, 0x8000000000000000ull);                             \
    }                                                                                                        \
    inline int __float2int##suffix(float a) { return sim::to_int<int>(a, mode, 0); }                        \
    inline unsigned int __float2uint##suffix(float a) { return sim::to_int<unsigned>(a, mode, 0u); }        \
    inline long long int __float2ll##suffix(float a) {                                                       \
        return sim::to_int<long long>(a, mode, (long long)0x8000000000000000ull);                            \
    }                                                                                                        \
    inline unsigned long long int __float2ull##suffix(float a) {                                            \
        return sim::to_int<unsigned long long>(a, mode, 0x8000000000000000ull);                             \
    }
SIM_ROUNDED(_rn, FE_TONEAREST)
SIM_ROUNDED(_rz, FE_TOWARDZERO)
SIM_ROUNDED(_rd, FE_DOWNWARD)
SIM_ROUNDED(_ru, FE_UPWARD)
#undef SIM_ROUNDED
inline double __int2double_rn(int a) { return a; }
inline double __uint2double_rn(unsigned int a) { return a; }
inline int __double2hiint(double a) { return (int)(__double_as_longlong(a) >> 32); }
inline int __double2loint(double a) { return (int)__double_as_longlong(a); }
inline double __hiloint2double(int hi, int lo) {
    return __longlong_as_double((long long)((unsigned long long)(unsigned)hi << 32 | (unsigned)lo));
}

// ---- Integers ----
inline int __mul24(int a, int b) { return (int)((long long)(a << 8 >> 8) * (long long)(b << 8 >> 8)); }
inline unsigned __umul24(unsigned a, unsigned b) { return (a & 0xFFFFFFu) * (b & 0xFFFFFFu); }
inline long long __mul64hi(long long a, long long b) { return (long long)(((__int128)a * b) >> 64); }
inline unsigned long long __umul64hi(unsigned long long a, unsigned long long b) {
    return (unsigned long long)(((unsigned __int128)a * b) >> 64);
}
inline int __hadd(int a, int b) { return (int)(((long long)a + b) >> 1); }
inline int __rhadd(int a, int b) { return (int)(((long long)a + b + 1) >> 1); }
inline unsigned __uhadd(unsigned a, unsigned b) { return (unsigned)(((unsigned long long)a + b) >> 1); }
inline unsigned __urhadd(unsigned a, unsigned b) { return (unsigned)(((unsigned long long)a + b + 1) >> 1); }
inline unsigned __sad(int a, int b, unsigned c) { return (unsigned)(a > b ? (long long)a - b : (long long)b - a) + c; }
inline unsigned __usad(unsigned a, unsigned b, unsigned c) { return (a > b ? a - b : b - a) + c; }
// Bytes of y:x picked by the selector's four nibbles (the low 3 bits of each).
inline unsigned __byte_perm(unsigned x, unsigned y, unsigned s) {
    const unsigned long long both = (unsigned long long)y << 32 | x;
    unsigned r = 0;
    for (int i = 0; i < 4; ++i) r |= (unsigned)((both >> (8 * ((s >> (4 * i)) & 7))) & 0xFF) << (8 * i);
    return r;
}
// The 64 bits hi:lo shifted left (the high word kept) or right (the low word kept), by the
// shift masked to 5 bits (the `c` forms: clamped to 32).
inline unsigned __funnelshift_l(unsigned lo, unsigned hi, unsigned s) {
    return (unsigned)((((unsigned long long)hi << 32 | lo) << (s & 31)) >> 32);
}
inline unsigned __funnelshift_lc(unsigned lo, unsigned hi, unsigned s) {
    return (unsigned)((((unsigned long long)hi << 32 | lo) << (s < 32 ? s : 32)) >> 32);
}
inline unsigned __funnelshift_r(unsigned lo, unsigned hi, unsigned s) {
    return (unsigned)(((unsigned long long)hi << 32 | lo) >> (s & 31));
}
inline unsigned __funnelshift_rc(unsigned lo, unsigned hi, unsigned s) {
    return (unsigned)(((unsigned long long)hi << 32 | lo) >> (s < 32 ? s : 32));
}
inline unsigned short __nv_bswap16(unsigned short x) { return __builtin_bswap16(x); }
inline unsigned int __nv_bswap32(unsigned int x) { return __builtin_bswap32(x); }
inline unsigned long long __nv_bswap64(unsigned long long x) { return __builtin_bswap64(x); }
// The n-th set bit of mask from bit base: upward for a positive offset, downward for a
// negative one, base itself for 0; 0xFFFFFFFF when there is none.
inline unsigned __fns(unsigned mask, unsigned base, int offset) {
    if (offset == 0) return (mask >> base) & 1 ? base : 0xFFFFFFFFu;
    const int step = offset > 0 ? 1 : -1;
    int left = offset > 0 ? offset : -offset;
    for (int i = (int)base; i >= 0 && i < 32; i += step)
        if ((mask >> i) & 1 && --left == 0) return (unsigned)i;
    return 0xFFFFFFFFu;
}

// Dot products of 8-bit (and 16-bit) lanes, accumulated into c: __dp4a sums four byte
// products, __dp2a two halfword-by-byte products of the low (lo) or high (hi) bytes of b.
inline int __dp4a(int a, int b, int c) {
    for (unsigned i = 0; i < 4; ++i) c += (int)(sim::lane(a, i, 8, true) * sim::lane(b, i, 8, true));
    return c;
}
inline unsigned __dp4a(unsigned a, unsigned b, unsigned c) {
    for (unsigned i = 0; i < 4; ++i) c += (unsigned)(sim::lane(a, i, 8, false) * sim::lane(b, i, 8, false));
    return c;
}
inline int __dp4a(char4 a, char4 b, int c) { return __dp4a(*(const int *)&a, *(const int *)&b, c); }
inline unsigned __dp4a(uchar4 a, uchar4 b, unsigned c) { return __dp4a(*(const unsigned *)&a, *(const unsigned *)&b, c); }
#define SIM_DP2A(half, first)                                                                                  \
    inline int __dp2a_##half(int a, int b, int c) {                                                           \
        for (unsigned i = 0; i < 2; ++i) c += (int)(sim::lane(a, i, 16, true) * sim::lane(b, first + i, 8, true)); \
        return c;                                                                                             \
    }                                                                                                         \
    inline unsigned __dp2a_##half(unsigned a, unsigned b, unsigned c) {                                       \
        for (unsigned i = 0; i < 2; ++i)                                                                      \
            c += (unsigned)(sim::lane(a, i, 16, false) * sim::lane(b, first + i, 8, false));                 \
        return c;                                                                                             \
    }                                                                                                         \
    inline int __dp2a_##half(short2 a, char4 b, int c) { return __dp2a_##half(*(const int *)&a, *(const int *)&b, c); } \
    inline unsigned __dp2a_##half(ushort2 a, uchar4 b, unsigned c) {                                          \
        return __dp2a_##half(*(const unsigned *)&a, *(const unsigned *)&b, c);                               \
    }
SIM_DP2A(lo, 0)
SIM_DP2A(hi, 2)
#undef SIM_DP2A

// ---- SIMD: per-halfword (2) and per-byte (4) lanes of 32-bit words ----
#define SIM_SIMD(name, is_signed, expr)                                                                        \
    inline unsigned name##2(unsigned a, unsigned b) {                                                          \
        return sim::lanes(a, b, 16, is_signed, [](long long x, long long y) { (void)y; constexpr unsigned bits = 16; (void)bits; return (long long)(expr); }); \
    }                                                                                                          \
    inline unsigned name##4(unsigned a, unsigned b) {                                                          \
        return sim::lanes(a, b, 8, is_signed, [](long long x, long long y) { (void)y; constexpr unsigned bits = 8; (void)bits; return (long long)(expr); }); \
    }
#define SIM_SIMD1(name, is_signed, expr)                                                                       \
    inline unsigned name##2(unsigned a) {                                                                      \
        return sim::lanes(a, 0, 16, is_signed, [](long long x, long long) { constexpr unsigned bits = 16; (void)bits; return (long long)(expr); }); \
    }                                                                                                          \
    inline unsigned name##4(unsigned a) {                                                                      \
        return sim::lanes(a, 0, 8, is_signed, [](long long x, long long) { constexpr unsigned bits = 8; (void)bits; return (long long)(expr); }); \
    }
SIM_SIMD1(__vabs, true, x < 0 ? -x : x)
SIM_SIMD1(__vabsss, true, sim::clamp_lane(x < 0 ? -x : x, bits, true))
SIM_SIMD1(__vneg, true, -x)
SIM_SIMD1(__vnegss, true, sim::clamp_lane(-x, bits, true))
SIM_SIMD(__vabsdiffs, true, x > y ? x - y : y - x)
SIM_SIMD(__vabsdiffu, false, x > y ? x - y : y - x)
SIM_SIMD(__vadd, false, x + y)
SIM_SIMD(__vaddss, true, sim::clamp_lane(x + y, bits, true))
SIM_SIMD(__vaddus, false, sim::clamp_lane(x + y, bits, false))
SIM_SIMD(__vsub, false, x - y)
SIM_SIMD(__vsubss, true, sim::clamp_lane(x - y, bits, true))
SIM_SIMD(__vsubus, false, sim::clamp_lane(x - y, bits, false))
SIM_SIMD(__vavgs, true, (x + y + 1) >> 1)
SIM_SIMD(__vavgu, false, (x + y + 1) >> 1)
SIM_SIMD(__vhaddu, false, (x + y) >> 1)
SIM_SIMD(__vmaxs, true, x > y ? x : y)
SIM_SIMD(__vmaxu, false, x > y ? x : y)
SIM_SIMD(__vmins, true, x < y ? x : y)
SIM_SIMD(__vminu, false, x < y ? x : y)
#define SIM_SIMD_COMPARE(suffix, is_signed, op)                   \
    SIM_SIMD(__vcmp##suffix, is_signed, (x op y) ? -1 : 0)       \
    SIM_SIMD(__vset##suffix, is_signed, (x op y) ? 1 : 0)
SIM_SIMD_COMPARE(eq, false, ==)
SIM_SIMD_COMPARE(ne, false, !=)
SIM_SIMD_COMPARE(ges, true, >=)
SIM_SIMD_COMPARE(geu, false, >=)
SIM_SIMD_COMPARE(gts, true, >)
SIM_SIMD_COMPARE(gtu, false, >)
SIM_SIMD_COMPARE(les, true, <=)
SIM_SIMD_COMPARE(leu, false, <=)
SIM_SIMD_COMPARE(lts, true, <)
SIM_SIMD_COMPARE(ltu, false, <)
#undef SIM_SIMD_COMPARE
#undef SIM_SIMD
#undef SIM_SIMD1
// Sums of the lanes' absolute differences.
#define SIM_SAD(name, bits, is_signed)                                                          \
    inline unsigned name(unsigned a, unsigned b) {                                              \
        unsigned long long sum = 0;                                                             \
        for (unsigned i = 0; i < 32 / bits; ++i) {                                              \
            const long long x = sim::lane(a, i, bits, is_signed), y = sim::lane(b, i, bits, is_signed); \
            sum += (unsigned long long)(x > y ? x - y : y - x);                                 \
        }                                                                                       \
        return (unsigned)sum;                                                                   \
    }
SIM_SAD(__vsads2, 16, true)
SIM_SAD(__vsads4, 8, true)
SIM_SAD(__vsadu2, 16, false)
SIM_SAD(__vsadu4, 8, false)
#undef SIM_SAD

// ---- DPX (Hopper): fused add, max and min, of 32-bit integers or halfword lanes; a sum
// wraps as the add's width does before the max or min ----
namespace sim {
inline long long wrap(long long v, unsigned bits, bool is_signed) {
    const unsigned long long u = (unsigned long long)v & (bits == 32 ? 0xFFFFFFFFull : (1ull << bits) - 1);
    return is_signed && (u >> (bits - 1)) ? (long long)u - (1ll << bits) : (long long)u;
}
template <class Op>
inline unsigned dpx(unsigned a, unsigned b, unsigned c, bool is_signed, Op op) {
    unsigned r = 0;
    for (unsigned i = 0; i < 2; ++i) {
        const long long v = op(lane(a, i, 16, is_signed), lane(b, i, 16, is_signed), lane(c, i, 16, is_signed));
        r |= (unsigned)((unsigned long long)v & 0xFFFF) << (16 * i);
    }
    return r;
}
inline long long mx(long long a, long long b) { return a > b ? a : b; }
inline long long mn(long long a, long long b) { return a < b ? a : b; }
}  // namespace sim
// `expr` of x, y, z, with W(v) the wrap of a sum to the lane's width.
#define SIM_DPX_BODY(bits, is_signed, expr) \
    [](long long x, long long y, long long z) { \
        auto W_ = [](long long v) { return sim::wrap(v, bits, is_signed); }; \
        (void)W_, (void)y, (void)z; \
        return (long long)(expr); \
    }
#define SIM_DPX3(name, expr) \
    inline int name##_s32(int a, int b, int c) { return (int)SIM_DPX_BODY(32, true, expr)(a, b, c); } \
    inline unsigned name##_u32(unsigned a, unsigned b, unsigned c) { \
        return (unsigned)SIM_DPX_BODY(32, false, expr)(a, b, c); \
    } \
    inline unsigned name##_s16x2(unsigned a, unsigned b, unsigned c) { \
        return sim::dpx(a, b, c, true, SIM_DPX_BODY(16, true, expr)); \
    } \
    inline unsigned name##_u16x2(unsigned a, unsigned b, unsigned c) { \
        return sim::dpx(a, b, c, false, SIM_DPX_BODY(16, false, expr)); \
    } \
    inline int name##_s32_relu(int a, int b, int c) { return (int)SIM_DPX_BODY(32, true, sim::mx(expr, 0))(a, b, c); } \
    inline unsigned name##_s16x2_relu(unsigned a, unsigned b, unsigned c) { \
        return sim::dpx(a, b, c, true, SIM_DPX_BODY(16, true, sim::mx(expr, 0))); \
    }
SIM_DPX3(__viaddmax, sim::mx(W_(x + y), z))
SIM_DPX3(__viaddmin, sim::mn(W_(x + y), z))
SIM_DPX3(__vimax3, sim::mx(sim::mx(x, y), z))
SIM_DPX3(__vimin3, sim::mn(sim::mn(x, y), z))
#undef SIM_DPX3
#undef SIM_DPX_BODY
inline int __vimax_s32_relu(int a, int b) { return (int)sim::mx(sim::mx(a, b), 0); }
inline int __vimin_s32_relu(int a, int b) { return (int)sim::mx(sim::mn(a, b), 0); }
inline unsigned __vimax_s16x2_relu(unsigned a, unsigned b) {
    return sim::dpx(a, b, 0, true, [](long long x, long long y, long long) { return sim::mx(sim::mx(x, y), 0); });
}
inline unsigned __vimin_s16x2_relu(unsigned a, unsigned b) {
    return sim::dpx(a, b, 0, true, [](long long x, long long y, long long) { return sim::mx(sim::mn(x, y), 0); });
}
// max (min) of a and b, with whether a >= b (a <= b): per lane for the 16x2 forms.
inline int __vibmax_s32(int a, int b, bool *pred) { return *pred = a >= b, a >= b ? a : b; }
inline unsigned __vibmax_u32(unsigned a, unsigned b, bool *pred) { return *pred = a >= b, a >= b ? a : b; }
inline int __vibmin_s32(int a, int b, bool *pred) { return *pred = a <= b, a <= b ? a : b; }
inline unsigned __vibmin_u32(unsigned a, unsigned b, bool *pred) { return *pred = a <= b, a <= b ? a : b; }
#define SIM_VIB(name, is_signed, op)                                                                  \
    inline unsigned name(unsigned a, unsigned b, bool *hi, bool *lo) {                                \
        const long long a0 = sim::lane(a, 0, 16, is_signed), b0 = sim::lane(b, 0, 16, is_signed);     \
        const long long a1 = sim::lane(a, 1, 16, is_signed), b1 = sim::lane(b, 1, 16, is_signed);     \
        *lo = a0 op b0;                                                                               \
        *hi = a1 op b1;                                                                               \
        return (unsigned)((*lo ? a0 : b0) & 0xFFFF) | (unsigned)((*hi ? a1 : b1) & 0xFFFF) << 16;   \
    }
SIM_VIB(__vibmax_s16x2, true, >=)
SIM_VIB(__vibmax_u16x2, false, >=)
SIM_VIB(__vibmin_s16x2, true, <=)
SIM_VIB(__vibmin_u16x2, false, <=)
#undef SIM_VIB

// ---- Address spaces: the block's shared memory (its own, or its cluster's), a thread's stack
// (local memory), and everything else global. Constant memory is not told apart from global:
// its tests and conversions stop the launch, saying so. ----
namespace sim {
inline bool is_local(const void *p) {
    const Worker &w = worker();
    const char *c = (const char *)p;
    return w.stacks && c >= w.stacks && c < w.stacks + (size_t)kMaxThreads * (kStackBytes + kGuardBytes);
}
[[noreturn]] inline void no_constant_space(const char *what) {
    fail("%s: the simulator does not tell constant memory apart from global memory", what);
}
}  // namespace sim
inline unsigned int __isShared(const void *p) { return sim::is_shared(p, 1); }
inline unsigned int __isCtaShared(const void *p) { return sim::is_shared(p, 1); }
inline unsigned int __isClusterShared(const void *p) { return sim::shared_owner(p, 1) != nullptr; }
inline unsigned int __isLocal(const void *p) { return sim::is_local(p); }
inline unsigned int __isGlobal(const void *p) { return !sim::shared_owner(p, 1) && !sim::is_local(p); }
inline unsigned int __isConstant(const void *) { sim::no_constant_space("__isConstant"); }
inline unsigned int __isGridConstant(const void *) { sim::no_constant_space("__isGridConstant"); }
inline size_t __cvta_generic_to_global(const void *p) { return (size_t)p; }
inline void *__cvta_global_to_generic(size_t a) { return (void *)a; }
inline size_t __cvta_generic_to_local(const void *p) { return (size_t)p; }
inline void *__cvta_local_to_generic(size_t a) { return (void *)a; }
inline size_t __cvta_generic_to_constant(const void *) { sim::no_constant_space("__cvta_generic_to_constant"); }
inline void *__cvta_constant_to_generic(size_t) { sim::no_constant_space("__cvta_constant_to_generic"); }
inline size_t __cvta_generic_to_grid_constant(const void *) {
    sim::no_constant_space("__cvta_generic_to_grid_constant");
}
inline void *__cvta_grid_constant_to_generic(size_t) { sim::no_constant_space("__cvta_grid_constant_to_generic"); }

// ---- The cluster runtime (sm_90_rt.h) ----
inline unsigned __clusterDimIsSpecified() {
    const unsigned *d = sim::worker().launch->cluster;
    return d[0] * d[1] * d[2] > 1;
}
inline dim3 __clusterDim() {
    const unsigned *d = sim::worker().launch->cluster;
    return dim3(d[0], d[1], d[2]);
}
inline dim3 __clusterRelativeBlockIdx() {
    const sim::Worker &w = sim::worker();
    const unsigned *d = w.launch->cluster;
    return dim3(w.rank % d[0], w.rank / d[0] % d[1], w.rank / d[0] / d[1]);
}
inline dim3 __clusterGridDimInClusters() {
    const sim::Worker &w = sim::worker();
    const unsigned *d = w.launch->cluster;
    return dim3(w.grid_dim.x / d[0], w.grid_dim.y / d[1], w.grid_dim.z / d[2]);
}
inline dim3 __clusterIdx() {
    const sim::Worker &w = sim::worker();
    const unsigned *d = w.launch->cluster;
    return dim3(w.block_idx.x / d[0], w.block_idx.y / d[1], w.block_idx.z / d[2]);
}
inline unsigned __clusterRelativeBlockRank() { return sim::worker().rank; }
inline unsigned __clusterSizeInBlocks() { return sim::worker().cluster->size; }
inline void __cluster_barrier_arrive(sim::Caller at = {}) {
    const sim::SourceSite site(at.file, at.line);
    sim::cluster_arrive();
}
inline void __cluster_barrier_arrive_relaxed(sim::Caller at = {}) { __cluster_barrier_arrive(at); }
inline void __cluster_barrier_wait(sim::Caller at = {}) {
    const sim::SourceSite site(at.file, at.line);
    sim::cluster_wait();
}
inline void *__cluster_map_shared_rank(const void *p, unsigned rank) {
    return sim::cluster_map(p, rank, "__cluster_map_shared_rank");
}
inline unsigned __cluster_query_shared_rank(const void *p) {
    const sim::Worker *w = sim::shared_owner(p, 1);
    if (!w) sim::fail("__cluster_query_shared_rank: %p is in no shared memory of the cluster", p);
    return w->rank;
}
inline uint2 __cluster_map_shared_multicast(const void *, unsigned) {
    sim::fail("__cluster_map_shared_multicast: not emulated");
}
inline void __threadfence_cluster() { __threadfence(); }

// ---- Atomics ----
inline unsigned atomicDec(unsigned *p, unsigned limit) {
    return sim::atomic_update(p, [limit](unsigned o) { return o == 0 || o > limit ? limit : o - 1; });
}
inline unsigned short atomicCAS(unsigned short *p, unsigned short cmp, unsigned short v) {
    __atomic_compare_exchange_n(p, &cmp, v, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
    return cmp;
}
#define SIM_LL_ATOMIC(name, expr) \
    inline long long name(long long *p, long long v) { return sim::atomic_update(p, [v](long long o) { return expr; }); }
SIM_LL_ATOMIC(atomicMin, o < v ? o : v)
SIM_LL_ATOMIC(atomicMax, o > v ? o : v)
SIM_LL_ATOMIC(atomicAnd, o & v)
SIM_LL_ATOMIC(atomicOr, o | v)
SIM_LL_ATOMIC(atomicXor, o ^ v)
#undef SIM_LL_ATOMIC
// Hopper's vector adds: atomic element by element, as the GPU's are.
inline float2 atomicAdd(float2 *p, float2 v) { return {atomicAdd(&p->x, v.x), atomicAdd(&p->y, v.y)}; }
inline float4 atomicAdd(float4 *p, float4 v) {
    return {atomicAdd(&p->x, v.x), atomicAdd(&p->y, v.y), atomicAdd(&p->z, v.z), atomicAdd(&p->w, v.w)};
}
// The block- and system-scoped forms: every OS thread of the simulator sees every atomic.
#define SIM_SCOPED(name)                                                         \
    template <class... A_>                                                        \
    inline auto name##_block(A_... a) -> decltype(name(a...)) { return name(a...); } \
    template <class... A_>                                                        \
    inline auto name##_system(A_... a) -> decltype(name(a...)) { return name(a...); }
SIM_SCOPED(atomicAdd)
SIM_SCOPED(atomicSub)
SIM_SCOPED(atomicExch)
SIM_SCOPED(atomicMin)
SIM_SCOPED(atomicMax)
SIM_SCOPED(atomicInc)
SIM_SCOPED(atomicDec)
SIM_SCOPED(atomicAnd)
SIM_SCOPED(atomicOr)
SIM_SCOPED(atomicXor)
SIM_SCOPED(atomicCAS)
#undef SIM_SCOPED

// ---- Warps: matching values, uniform predicates, named barriers ----
// The lanes of `mask` whose value equals the calling lane's.
template <class T_>
inline unsigned __match_any_sync(unsigned mask, T_ value, sim::Caller at = {}) {
    unsigned same = 0;
    for (int l = 0; l < 32; ++l)
        if ((mask >> l) & 1 && __shfl_sync(mask, value, l, 32, at) == value) same |= 1u << l;
    return same;
}
// `mask` when every lane of it holds the same value (and *pred 1), else 0 (and *pred 0).
template <class T_>
inline unsigned __match_all_sync(unsigned mask, T_ value, int *pred, sim::Caller at = {}) {
    const bool all = __match_any_sync(mask, value, at) == mask;
    *pred = all;
    return all ? mask : 0;
}
inline int __uni_sync(unsigned mask, int pred, sim::Caller at = {}) {
    const unsigned b = __ballot_sync(mask, pred, at);
    return b == 0 || b == mask;
}
inline void __barrier_sync(unsigned id) { sim::named_barrier(id, 0, true, "__barrier_sync"); }
inline void __barrier_sync_count(unsigned id, unsigned count) {
    sim::named_barrier(id, count, true, "__barrier_sync_count");
}
inline bool syncthreads_and(bool p) { return __syncthreads_and(p); }
inline bool syncthreads_or(bool p) { return __syncthreads_or(p); }
inline int syncthreads_count(bool p) { return __syncthreads_count(p); }

// ---- Profiling and debugging: the counters read 0, a trigger or breakpoint does nothing ----
inline unsigned int __pm0() { return 0; }
inline unsigned int __pm1() { return 0; }
inline unsigned int __pm2() { return 0; }
inline unsigned int __pm3() { return 0; }
inline void __prof_trigger(int) {}
inline void __brkpt() {}

// ---- The legacy forms that take a rounding mode (device_double_functions.h) ----
enum cudaRoundMode { cudaRoundNearest, cudaRoundZero, cudaRoundPosInf, cudaRoundMinInf };
namespace sim {
inline int fe_mode(cudaRoundMode m) {
    return m == cudaRoundZero ? FE_TOWARDZERO : m == cudaRoundPosInf ? FE_UPWARD : m == cudaRoundMinInf ? FE_DOWNWARD : FE_TONEAREST;
}
}  // namespace sim
inline double fma(double a, double b, double c, enum cudaRoundMode m) { return sim::fp_fma(a, b, c, sim::fe_mode(m)); }
inline double dmul(double a, double b, enum cudaRoundMode m = cudaRoundNearest) { return sim::fp_mul(a, b, sim::fe_mode(m)); }
inline double dadd(double a, double b, enum cudaRoundMode m = cudaRoundNearest) { return sim::fp_add(a, b, sim::fe_mode(m)); }
inline double dsub(double a, double b, enum cudaRoundMode m = cudaRoundNearest) { return sim::fp_sub(a, b, sim::fe_mode(m)); }
inline int double2int(double a, enum cudaRoundMode m = cudaRoundZero) { return sim::to_int<int>(a, sim::fe_mode(m), 0); }
inline unsigned int double2uint(double a, enum cudaRoundMode m = cudaRoundZero) {
    return sim::to_int<unsigned>(a, sim::fe_mode(m), 0u);
}
inline long long int double2ll(double a, enum cudaRoundMode m = cudaRoundZero) {
    return sim::to_int<long long>(a, sim::fe_mode(m), (long long)0x8000000000000000ull);
}
inline unsigned long long int double2ull(double a, enum cudaRoundMode m = cudaRoundZero) {
    return sim::to_int<unsigned long long>(a, sim::fe_mode(m), 0x8000000000000000ull);
}
inline double ll2double(long long int a, enum cudaRoundMode m = cudaRoundNearest) {
    return sim::fp_convert<double>(a, sim::fe_mode(m));
}
inline double ull2double(unsigned long long int a, enum cudaRoundMode m = cudaRoundNearest) {
    return sim::fp_convert<double>(a, sim::fe_mode(m));
}
inline double int2double(int a, enum cudaRoundMode = cudaRoundNearest) { return a; }
inline double uint2double(unsigned int a, enum cudaRoundMode = cudaRoundNearest) { return a; }
inline double float2double(float a, enum cudaRoundMode = cudaRoundNearest) { return a; }
inline float fdividef(float a, float b) { return a / b; }
inline double fdivide(double a, double b) { return a / b; }

// ---- Math functions C's library lacks (crt/math_functions.h) ----
namespace sim {
// erfc(x) = y for y in (0, 2), by bisection to a bracket then Newton's steps (erfc is
// monotonic); erfc from the C library, accurate far into its tail.
inline double erfc_inverse(double y) {
    if (y != y || y < 0 || y > 2) return NAN;
    if (y == 0) return INFINITY;
    if (y == 2) return -INFINITY;
    double lo = -27, hi = 27;  // erfc(-27) rounds to 2, erfc(27) to a subnormal
    for (int i = 0; i < 60; ++i) {
        const double mid = 0.5 * (lo + hi);
        (erfc(mid) > y ? lo : hi) = mid;
    }
    double x = 0.5 * (lo + hi);
    for (int i = 0; i < 3; ++i) {
        const double slope = -1.1283791670955126 * exp(-x * x);
        if (slope == 0) break;
        x -= (erfc(x) - y) / slope;
    }
    return x;
}
// exp(x^2) erfc(x): in long double, whose range holds both factors up to x = 100; beyond,
// its asymptotic series.
inline double erfc_scaled(double x) {
    if (x < 100) return (double)(expl((long double)x * x) * erfcl((long double)x));
    const double t = 1 / (2 * x * x);
    return 0.5641895835477563 / x * (1 - t * (1 - 3 * t * (1 - 5 * t)));
}
inline double norm_of(int n, const double *a) {
    long double s = 0;
    for (int i = 0; i < n; ++i) s += (long double)a[i] * a[i];
    return (double)sqrtl(s);
}
inline float norm_of(int n, const float *a) {
    double s = 0;
    for (int i = 0; i < n; ++i) s += (double)a[i] * a[i];
    return (float)sqrt(s);
}
}  // namespace sim
inline double erfcinv(double y) { return sim::erfc_inverse(y); }
inline float erfcinvf(float y) { return (float)sim::erfc_inverse(y); }
inline double erfinv(double y) { return y == 0 ? y : sim::erfc_inverse(1 - y); }
inline float erfinvf(float y) { return y == 0 ? y : (float)sim::erfc_inverse(1.0 - y); }
inline double erfcx(double x) { return sim::erfc_scaled(x); }
inline float erfcxf(float x) { return (float)sim::erfc_scaled(x); }
inline double normcdfinv(double p) { return -1.4142135623730951 * sim::erfc_inverse(2 * p); }
inline float normcdfinvf(float p) { return (float)(-1.4142135623730951 * sim::erfc_inverse(2.0 * p)); }
inline double norm(int n, const double *a) { return sim::norm_of(n, a); }
inline float normf(int n, const float *a) { return sim::norm_of(n, a); }
inline double rnorm(int n, const double *a) { return 1.0 / sim::norm_of(n, a); }
inline float rnormf(int n, const float *a) { return (float)(1.0 / sim::norm_of(n, a)); }
inline double norm4d(double a, double b, double c, double d) {
    const double v[4] = {a, b, c, d};
    return sim::norm_of(4, v);
}
inline float norm4df(float a, float b, float c, float d) {
    const float v[4] = {a, b, c, d};
    return sim::norm_of(4, v);
}
inline double rnorm4d(double a, double b, double c, double d) { return 1.0 / norm4d(a, b, c, d); }
inline float rnorm4df(float a, float b, float c, float d) { return (float)(1.0 / (double)norm4df(a, b, c, d)); }
// The modified Bessel functions of the first kind: I0 even, I1 odd.
inline double cyl_bessel_i0(double x) { return std::cyl_bessel_i(0.0, fabs(x)); }
inline float cyl_bessel_i0f(float x) { return (float)cyl_bessel_i0(x); }
inline double cyl_bessel_i1(double x) { return copysign(std::cyl_bessel_i(1.0, fabs(x)), x); }
inline float cyl_bessel_i1f(float x) { return (float)cyl_bessel_i1(x); }
inline unsigned umin(unsigned a, unsigned b) { return a < b ? a : b; }
inline unsigned umax(unsigned a, unsigned b) { return a > b ? a : b; }
inline long long llmin(long long a, long long b) { return a < b ? a : b; }
inline long long llmax(long long a, long long b) { return a > b ? a : b; }
inline unsigned long long ullmin(unsigned long long a, unsigned long long b) { return a < b ? a : b; }
inline unsigned long long ullmax(unsigned long long a, unsigned long long b) { return a > b ? a : b; }
// The float overloads math_functions.h gives C++ code, beside C's double functions.
inline float rsqrt(float a) { return rsqrtf(a); }
inline float rcbrt(float a) { return rcbrtf(a); }
inline float sinpi(float a) { return sinpif(a); }
inline float cospi(float a) { return cospif(a); }
inline float exp10(float a) { return exp10f(a); }
inline float normcdf(float a) { return normcdff(a); }
inline float normcdfinv(float a) { return normcdfinvf(a); }
inline float erfinv(float a) { return erfinvf(a); }
inline float erfcinv(float a) { return erfcinvf(a); }
inline float erfcx(float a) { return erfcxf(a); }
inline float j0(float a) { return j0f(a); }
inline float j1(float a) { return j1f(a); }
inline float jn(int n, float a) { return jnf(n, a); }
inline float y0(float a) { return y0f(a); }
inline float y1(float a) { return y1f(a); }
inline float yn(int n, float a) { return ynf(n, a); }
inline void sincos(float a, float *s, float *c) { sincosf(a, s, c); }
inline void sincospi(float a, float *s, float *c) { sincospif(a, s, c); }
