// sim_half_api.h (simulator): the functions and operators cuda_fp16.h and cuda_bf16.h both
// declare, written once. Each of those headers defines its type and includes this file with
// SIM_H (the type), SIM_H2 (its pair), and SIM_HN and SIM_H2N, the names its conversions carry
// (half and half2, bfloat16 and bfloat162).
//
// Results follow the toolkit's documentation of each function: computed exactly (in double for
// the math functions) and rounded once, to nearest even or in the mode the name gives (_rz,
// _rd, _ru); comparisons are ordered, false on NaN, unless unordered (a `u` in the name: true
// on NaN); _sat clamps to [0, 1] and makes NaN +0; _relu makes a negative +0 and NaN the
// canonical NaN; max and min give the number when one input is NaN and +0 over -0, their _nan
// forms NaN; conversions to integers saturate and give 0 for NaN (0x8000000000000000 for
// the 64-bit ones).

#ifndef SIM_HALF_API_ONCE
#define SIM_HALF_API_ONCE
#include <limits>

namespace sim {
enum Rounding { kRn, kRz, kRd, kRu };

template <class H_>
inline H_ h_bits(unsigned short b) {
    H_ h;
    h.__x = b;
    return h;
}
template <class H_>
inline bool h_isnan(H_ a) { return (a.__x & 0x7FFF) > H_::kInf; }
template <class H_>
inline H_ h_nan() { return h_bits<H_>(0x7FFF); }
template <class H_>
inline long double h_value(H_ a) { return (long double)a.to_float(); }

// The next value up (toward +inf) or down.
template <class H_>
inline H_ h_step(H_ a, bool up) {
    const unsigned short x = a.__x, mag = x & 0x7FFF;
    const bool neg = x & 0x8000;
    if (mag == 0) return h_bits<H_>(up ? 0x0001 : 0x8001);
    return h_bits<H_>(up != neg ? x + 1 : x - 1);
}

// `v` rounded once in `mode` (long double holds every 64-bit integer exactly).
template <class H_>
inline H_ h_round(long double v, Rounding mode) {
    if (v != v) return h_nan<H_>();
    const H_ r = H_::from_double((double)v);  // within a step of the result
    const long double rv = h_value(r);
    if (rv == v) return r;
    const H_ a = rv < v ? r : h_step(r, false), b = rv < v ? h_step(r, true) : r;  // a < v < b
    switch (mode) {
    case kRz: return v > 0 ? a : b;
    case kRd: return a;
    case kRu: return b;
    case kRn: break;
    }
    long double va = h_value(a), vb = h_value(b);
    // Past the largest finite value, the step it would have decides (IEEE's overflow rule).
    if (vb == std::numeric_limits<long double>::infinity()) vb = 2 * va - h_value(h_step(a, false));
    if (va == -std::numeric_limits<long double>::infinity()) va = 2 * vb - h_value(h_step(b, true));
    if (v - va != vb - v) return v - va < vb - v ? a : b;
    return (a.__x & 1) ? b : a;  // a tie: the even one
}

// `a` rounded to an integer in `mode`, saturated to T's range; `nan` for NaN.
template <class T_, class H_>
inline T_ h_to_int(H_ a, Rounding mode, T_ nan) {
    if (h_isnan(a)) return nan;
    const long double v = h_value(a);
    const long double i = mode == kRn ? nearbyintl(v) : mode == kRz ? truncl(v) : mode == kRd ? floorl(v) : ceill(v);
    if (i <= (long double)std::numeric_limits<T_>::min()) return std::numeric_limits<T_>::min();
    if (i >= (long double)std::numeric_limits<T_>::max()) return std::numeric_limits<T_>::max();
    return (T_)i;
}

// _sat: clamped to [0, 1], NaN to +0. _relu: a negative to +0, NaN canonical.
template <class H_>
inline H_ h_sat(H_ r) {
    if (h_isnan(r) || r.to_float() <= 0.0f) return h_bits<H_>(0);
    return r.to_float() > 1.0f ? H_::from_double(1.0) : r;
}
template <class H_>
inline H_ h_relu(H_ r) {
    if (h_isnan(r)) return h_nan<H_>();
    return (r.__x & 0x8000) ? h_bits<H_>(0) : r;
}

// max and min: the number when one is NaN (canonical NaN when both are, or with `nan` when
// either is), +0 above -0.
template <class H_>
inline H_ h_max(H_ a, H_ b, bool nan) {
    const bool na = h_isnan(a), nb = h_isnan(b);
    if ((na && nb) || (nan && (na || nb))) return h_nan<H_>();
    if (na || nb) return na ? b : a;
    if (a.to_float() == 0.0f && b.to_float() == 0.0f) return (a.__x & 0x8000) ? b : a;
    return a.to_float() > b.to_float() ? a : b;
}
template <class H_>
inline H_ h_min(H_ a, H_ b, bool nan) {
    const bool na = h_isnan(a), nb = h_isnan(b);
    if ((na && nb) || (nan && (na || nb))) return h_nan<H_>();
    if (na || nb) return na ? b : a;
    if (a.to_float() == 0.0f && b.to_float() == 0.0f) return (a.__x & 0x8000) ? a : b;
    return a.to_float() < b.to_float() ? a : b;
}
}  // namespace sim

#define SIM_HC_(a, b, c) a##b##c
#define SIM_HC(a, b, c) SIM_HC_(a, b, c)
#endif  // SIM_HALF_API_ONCE

// ---- Conversions ----
inline SIM_H SIM_HC(__float2, SIM_HN, )(float f) { return SIM_H::from_double(f); }
inline SIM_H SIM_HC(__float2, SIM_HN, _rn)(float f) { return SIM_H::from_double(f); }
inline SIM_H SIM_HC(__float2, SIM_HN, _rz)(float f) { return sim::h_round<SIM_H>(f, sim::kRz); }
inline SIM_H SIM_HC(__float2, SIM_HN, _rd)(float f) { return sim::h_round<SIM_H>(f, sim::kRd); }
inline SIM_H SIM_HC(__float2, SIM_HN, _ru)(float f) { return sim::h_round<SIM_H>(f, sim::kRu); }
inline SIM_H SIM_HC(__double2, SIM_HN, )(double d) { return sim::h_round<SIM_H>(d, sim::kRn); }
inline float SIM_HC(__, SIM_HN, 2float)(SIM_H h) { return h.to_float(); }

// Integers to the type, in each rounding mode.
#define SIM_FROM_INT(name, T_)                                                                            \
    inline SIM_H SIM_HC(__##name##2, SIM_HN, _rn)(T_ i) { return sim::h_round<SIM_H>(i, sim::kRn); } \
    inline SIM_H SIM_HC(__##name##2, SIM_HN, _rz)(T_ i) { return sim::h_round<SIM_H>(i, sim::kRz); } \
    inline SIM_H SIM_HC(__##name##2, SIM_HN, _rd)(T_ i) { return sim::h_round<SIM_H>(i, sim::kRd); } \
    inline SIM_H SIM_HC(__##name##2, SIM_HN, _ru)(T_ i) { return sim::h_round<SIM_H>(i, sim::kRu); }
SIM_FROM_INT(int, int)
SIM_FROM_INT(uint, unsigned int)
SIM_FROM_INT(short, short)
SIM_FROM_INT(ushort, unsigned short)
SIM_FROM_INT(ll, long long)
SIM_FROM_INT(ull, unsigned long long)
#undef SIM_FROM_INT

// The type to integers, in each rounding mode.
#define SIM_TO_INT(name, T_, nan)                                                                    \
    inline T_ SIM_HC(__, SIM_HN, 2##name##_rn)(SIM_H h) { return sim::h_to_int<T_>(h, sim::kRn, (T_)nan); } \
    inline T_ SIM_HC(__, SIM_HN, 2##name##_rz)(SIM_H h) { return sim::h_to_int<T_>(h, sim::kRz, (T_)nan); } \
    inline T_ SIM_HC(__, SIM_HN, 2##name##_rd)(SIM_H h) { return sim::h_to_int<T_>(h, sim::kRd, (T_)nan); } \
    inline T_ SIM_HC(__, SIM_HN, 2##name##_ru)(SIM_H h) { return sim::h_to_int<T_>(h, sim::kRu, (T_)nan); }
SIM_TO_INT(int, int, 0)
SIM_TO_INT(uint, unsigned int, 0)
SIM_TO_INT(short, short, 0)
SIM_TO_INT(ushort, unsigned short, 0)
SIM_TO_INT(ll, long long, 0x8000000000000000ull)
SIM_TO_INT(ull, unsigned long long, 0x8000000000000000ull)
#undef SIM_TO_INT
inline signed char SIM_HC(__, SIM_HN, 2char_rz)(SIM_H h) { return sim::h_to_int<signed char>(h, sim::kRz, 0); }
inline unsigned char SIM_HC(__, SIM_HN, 2uchar_rz)(SIM_H h) {
    return sim::h_to_int<unsigned char>(h, sim::kRz, 0);
}

// The bits.
inline short SIM_HC(__, SIM_HN, _as_short)(SIM_H h) { return (short)h.__x; }
inline unsigned short SIM_HC(__, SIM_HN, _as_ushort)(SIM_H h) { return h.__x; }
inline SIM_H SIM_HC(__short_as_, SIM_HN, )(short s) { return sim::h_bits<SIM_H>((unsigned short)s); }
inline SIM_H SIM_HC(__ushort_as_, SIM_HN, )(unsigned short u) { return sim::h_bits<SIM_H>(u); }

// Pairs.
inline SIM_H2 SIM_HC(make_, SIM_H2N, )(SIM_H x, SIM_H y) { return {x, y}; }
inline SIM_H2 SIM_HC(__halves2, SIM_H2N, )(SIM_H a, SIM_H b) { return {a, b}; }
inline SIM_H2 SIM_HC(__, SIM_HN, SIM_HC(2, SIM_H2N, ))(SIM_H a) { return {a, a}; }
inline SIM_H2 SIM_HC(__float2, SIM_H2N, _rn)(float a) { return {SIM_H::from_double(a), SIM_H::from_double(a)}; }
inline SIM_H2 SIM_HC(__floats2, SIM_H2N, _rn)(float a, float b) { return {SIM_H::from_double(a), SIM_H::from_double(b)}; }
inline SIM_H2 SIM_HC(__float22, SIM_H2N, _rn)(float2 f) { return {SIM_H::from_double(f.x), SIM_H::from_double(f.y)}; }
inline float2 SIM_HC(__, SIM_H2N, 2float2)(SIM_H2 h) { return {h.x.to_float(), h.y.to_float()}; }
inline float __low2float(SIM_H2 h) { return h.x.to_float(); }
inline float __high2float(SIM_H2 h) { return h.y.to_float(); }
inline SIM_H SIM_HC(__low2, SIM_HN, )(SIM_H2 h) { return h.x; }
inline SIM_H SIM_HC(__high2, SIM_HN, )(SIM_H2 h) { return h.y; }
inline SIM_H2 SIM_HC(__low2, SIM_H2N, )(SIM_H2 h) { return {h.x, h.x}; }
inline SIM_H2 SIM_HC(__high2, SIM_H2N, )(SIM_H2 h) { return {h.y, h.y}; }
inline SIM_H2 SIM_HC(__lows2, SIM_H2N, )(SIM_H2 a, SIM_H2 b) { return {a.x, b.x}; }
inline SIM_H2 SIM_HC(__highs2, SIM_H2N, )(SIM_H2 a, SIM_H2 b) { return {a.y, b.y}; }
inline SIM_H2 __lowhigh2highlow(SIM_H2 a) { return {a.y, a.x}; }

// ---- Arithmetic: exact in double (a quotient: in float, where it rounds the same), rounded
// once ----
inline SIM_H __hadd(SIM_H a, SIM_H b) { return SIM_H::from_double(__sim_d(a) + __sim_d(b)); }
inline SIM_H __hsub(SIM_H a, SIM_H b) { return SIM_H::from_double(__sim_d(a) - __sim_d(b)); }
inline SIM_H __hmul(SIM_H a, SIM_H b) { return SIM_H::from_double(__sim_d(a) * __sim_d(b)); }
inline SIM_H __hdiv(SIM_H a, SIM_H b) { return SIM_H::from_double(a.to_float() / b.to_float()); }
inline SIM_H __hfma(SIM_H a, SIM_H b, SIM_H c) { return SIM_H::from_double(__sim_d(a) * __sim_d(b) + __sim_d(c)); }
// _rn: never contracted into a fused multiply-add, which these never are.
inline SIM_H __hadd_rn(SIM_H a, SIM_H b) { return __hadd(a, b); }
inline SIM_H __hsub_rn(SIM_H a, SIM_H b) { return __hsub(a, b); }
inline SIM_H __hmul_rn(SIM_H a, SIM_H b) { return __hmul(a, b); }
inline SIM_H __hadd_sat(SIM_H a, SIM_H b) { return sim::h_sat(__hadd(a, b)); }
inline SIM_H __hsub_sat(SIM_H a, SIM_H b) { return sim::h_sat(__hsub(a, b)); }
inline SIM_H __hmul_sat(SIM_H a, SIM_H b) { return sim::h_sat(__hmul(a, b)); }
inline SIM_H __hfma_sat(SIM_H a, SIM_H b, SIM_H c) { return sim::h_sat(__hfma(a, b, c)); }
inline SIM_H __hfma_relu(SIM_H a, SIM_H b, SIM_H c) { return sim::h_relu(__hfma(a, b, c)); }
inline SIM_H __hneg(SIM_H a) { return sim::h_bits<SIM_H>(a.__x ^ 0x8000); }
inline SIM_H __habs(SIM_H a) { return sim::h_bits<SIM_H>(a.__x & 0x7FFF); }
inline SIM_H __hmax(SIM_H a, SIM_H b) { return sim::h_max(a, b, false); }
inline SIM_H __hmin(SIM_H a, SIM_H b) { return sim::h_min(a, b, false); }
inline SIM_H __hmax_nan(SIM_H a, SIM_H b) { return sim::h_max(a, b, true); }
inline SIM_H __hmin_nan(SIM_H a, SIM_H b) { return sim::h_min(a, b, true); }

// Element-wise on pairs.
#define SIM_PAIR1(name, one) \
    inline SIM_H2 name(SIM_H2 a) { return {one(a.x), one(a.y)}; }
#define SIM_PAIR2(name, one) \
    inline SIM_H2 name(SIM_H2 a, SIM_H2 b) { return {one(a.x, b.x), one(a.y, b.y)}; }
#define SIM_PAIR3(name, one) \
    inline SIM_H2 name(SIM_H2 a, SIM_H2 b, SIM_H2 c) { return {one(a.x, b.x, c.x), one(a.y, b.y, c.y)}; }
SIM_PAIR2(__hadd2, __hadd)
SIM_PAIR2(__hsub2, __hsub)
SIM_PAIR2(__hmul2, __hmul)
SIM_PAIR2(__h2div, __hdiv)
SIM_PAIR2(__hadd2_rn, __hadd)
SIM_PAIR2(__hsub2_rn, __hsub)
SIM_PAIR2(__hmul2_rn, __hmul)
SIM_PAIR2(__hadd2_sat, __hadd_sat)
SIM_PAIR2(__hsub2_sat, __hsub_sat)
SIM_PAIR2(__hmul2_sat, __hmul_sat)
SIM_PAIR3(__hfma2, __hfma)
SIM_PAIR3(__hfma2_sat, __hfma_sat)
SIM_PAIR3(__hfma2_relu, __hfma_relu)
SIM_PAIR1(__hneg2, __hneg)
SIM_PAIR1(__habs2, __habs)
SIM_PAIR2(__hmax2, __hmax)
SIM_PAIR2(__hmin2, __hmin)
SIM_PAIR2(__hmax2_nan, __hmax_nan)
SIM_PAIR2(__hmin2_nan, __hmin_nan)
// a * b + c of complex numbers (x real, y imaginary), as the toolkit documents it: two fused
// multiply-adds a part.
inline SIM_H2 __hcmadd(SIM_H2 a, SIM_H2 b, SIM_H2 c) {
    return {__hfma(__hneg(a.y), b.y, __hfma(a.x, b.x, c.x)), __hfma(a.y, b.x, __hfma(a.x, b.y, c.y))};
}

// ---- Comparisons: ordered (false with a NaN), or unordered (`u`: true with a NaN) ----
#define SIM_COMPARE(name, op)                                                                              \
    inline bool __h##name(SIM_H a, SIM_H b) {                                                              \
        return !sim::h_isnan(a) && !sim::h_isnan(b) && a.to_float() op b.to_float();                     \
    }                                                                                                      \
    inline bool __h##name##u(SIM_H a, SIM_H b) { return sim::h_isnan(a) || sim::h_isnan(b) || a.to_float() op b.to_float(); } \
    inline SIM_H2 __h##name##2(SIM_H2 a, SIM_H2 b) {                                                       \
        return {SIM_H::from_double(__h##name(a.x, b.x)), SIM_H::from_double(__h##name(a.y, b.y))};         \
    }                                                                                                      \
    inline SIM_H2 __h##name##u2(SIM_H2 a, SIM_H2 b) {                                                      \
        return {SIM_H::from_double(__h##name##u(a.x, b.x)), SIM_H::from_double(__h##name##u(a.y, b.y))};   \
    }                                                                                                      \
    inline unsigned __h##name##2_mask(SIM_H2 a, SIM_H2 b) {                                                \
        return (__h##name(a.x, b.x) ? 0xFFFFu : 0u) | (__h##name(a.y, b.y) ? 0xFFFF0000u : 0u);          \
    }                                                                                                      \
    inline unsigned __h##name##u2_mask(SIM_H2 a, SIM_H2 b) {                                               \
        return (__h##name##u(a.x, b.x) ? 0xFFFFu : 0u) | (__h##name##u(a.y, b.y) ? 0xFFFF0000u : 0u);    \
    }                                                                                                      \
    inline bool __hb##name##2(SIM_H2 a, SIM_H2 b) { return __h##name(a.x, b.x) && __h##name(a.y, b.y); } \
    inline bool __hb##name##u2(SIM_H2 a, SIM_H2 b) { return __h##name##u(a.x, b.x) && __h##name##u(a.y, b.y); }
SIM_COMPARE(eq, ==)
SIM_COMPARE(ne, !=)
SIM_COMPARE(lt, <)
SIM_COMPARE(le, <=)
SIM_COMPARE(gt, >)
SIM_COMPARE(ge, >=)
#undef SIM_COMPARE
inline bool __hisnan(SIM_H a) { return sim::h_isnan(a); }
inline SIM_H2 __hisnan2(SIM_H2 a) { return {SIM_H::from_double(__hisnan(a.x)), SIM_H::from_double(__hisnan(a.y))}; }
// -1 for -inf, 1 for +inf, 0 otherwise.
inline int __hisinf(SIM_H a) { return (a.__x & 0x7FFF) != SIM_H::kInf ? 0 : (a.__x & 0x8000) ? -1 : 1; }

// ---- Math: in double, rounded once (the GPU's are within their documented error of it) ----
#define SIM_MATH(name, pair, expr)          \
    inline SIM_H name(SIM_H a) {            \
        const double x = __sim_d(a);        \
        return SIM_H::from_double(expr);    \
    }                                       \
    SIM_PAIR1(pair, name)
SIM_MATH(hexp, h2exp, exp(x))
SIM_MATH(hexp2, h2exp2, exp2(x))
SIM_MATH(hexp10, h2exp10, exp(x * 2.302585092994045684))
SIM_MATH(hlog, h2log, log(x))
SIM_MATH(hlog2, h2log2, log2(x))
SIM_MATH(hlog10, h2log10, log10(x))
SIM_MATH(hsqrt, h2sqrt, sqrt(x))
SIM_MATH(hrsqrt, h2rsqrt, 1.0 / sqrt(x))
SIM_MATH(hrcp, h2rcp, 1.0 / x)
SIM_MATH(hsin, h2sin, sin(x))
SIM_MATH(hcos, h2cos, cos(x))
SIM_MATH(htanh, h2tanh, tanh(x))
SIM_MATH(htanh_approx, h2tanh_approx, tanh(x))
SIM_MATH(hceil, h2ceil, ceil(x))
SIM_MATH(hfloor, h2floor, floor(x))
SIM_MATH(hrint, h2rint, nearbyint(x))
SIM_MATH(htrunc, h2trunc, trunc(x))
#undef SIM_MATH
#undef SIM_PAIR1
#undef SIM_PAIR2
#undef SIM_PAIR3

// ---- Atomics: a compare-exchange loop, as the GPU's is one instruction ----
inline SIM_H atomicAdd(SIM_H *p, SIM_H v) { return sim::atomic_float<SIM_H, uint16_t>(p, __hadd, v); }
inline SIM_H2 atomicAdd(SIM_H2 *p, SIM_H2 v) { return sim::atomic_float<SIM_H2, uint32_t>(p, __hadd2, v); }

// ---- Operators, as the toolkit defines them ----
inline SIM_H operator+(const SIM_H &a, const SIM_H &b) { return __hadd(a, b); }
inline SIM_H operator-(const SIM_H &a, const SIM_H &b) { return __hsub(a, b); }
inline SIM_H operator*(const SIM_H &a, const SIM_H &b) { return __hmul(a, b); }
inline SIM_H operator/(const SIM_H &a, const SIM_H &b) { return __hdiv(a, b); }
inline SIM_H &operator+=(SIM_H &a, const SIM_H &b) { return a = __hadd(a, b); }
inline SIM_H &operator-=(SIM_H &a, const SIM_H &b) { return a = __hsub(a, b); }
inline SIM_H &operator*=(SIM_H &a, const SIM_H &b) { return a = __hmul(a, b); }
inline SIM_H &operator/=(SIM_H &a, const SIM_H &b) { return a = __hdiv(a, b); }
inline SIM_H &operator++(SIM_H &a) { return a = __hadd(a, SIM_H::from_double(1.0)); }
inline SIM_H &operator--(SIM_H &a) { return a = __hsub(a, SIM_H::from_double(1.0)); }
inline SIM_H operator++(SIM_H &a, int) {
    SIM_H old = a;
    ++a;
    return old;
}
inline SIM_H operator--(SIM_H &a, int) {
    SIM_H old = a;
    --a;
    return old;
}
inline SIM_H operator+(const SIM_H &a) { return a; }
inline SIM_H operator-(const SIM_H &a) { return __hneg(a); }
inline bool operator==(const SIM_H &a, const SIM_H &b) { return __heq(a, b); }
inline bool operator!=(const SIM_H &a, const SIM_H &b) { return __hneu(a, b); }
inline bool operator<(const SIM_H &a, const SIM_H &b) { return __hlt(a, b); }
inline bool operator<=(const SIM_H &a, const SIM_H &b) { return __hle(a, b); }
inline bool operator>(const SIM_H &a, const SIM_H &b) { return __hgt(a, b); }
inline bool operator>=(const SIM_H &a, const SIM_H &b) { return __hge(a, b); }
inline SIM_H2 operator+(const SIM_H2 &a, const SIM_H2 &b) { return __hadd2(a, b); }
inline SIM_H2 operator-(const SIM_H2 &a, const SIM_H2 &b) { return __hsub2(a, b); }
inline SIM_H2 operator*(const SIM_H2 &a, const SIM_H2 &b) { return __hmul2(a, b); }
inline SIM_H2 operator/(const SIM_H2 &a, const SIM_H2 &b) { return __h2div(a, b); }
inline SIM_H2 &operator+=(SIM_H2 &a, const SIM_H2 &b) { return a = __hadd2(a, b); }
inline SIM_H2 &operator-=(SIM_H2 &a, const SIM_H2 &b) { return a = __hsub2(a, b); }
inline SIM_H2 &operator*=(SIM_H2 &a, const SIM_H2 &b) { return a = __hmul2(a, b); }
inline SIM_H2 &operator/=(SIM_H2 &a, const SIM_H2 &b) { return a = __h2div(a, b); }
inline SIM_H2 operator+(const SIM_H2 &a) { return a; }
inline SIM_H2 operator-(const SIM_H2 &a) { return __hneg2(a); }
inline bool operator==(const SIM_H2 &a, const SIM_H2 &b) { return __hbeq2(a, b); }
inline bool operator!=(const SIM_H2 &a, const SIM_H2 &b) { return __hbneu2(a, b); }
inline bool operator<(const SIM_H2 &a, const SIM_H2 &b) { return __hblt2(a, b); }
inline bool operator<=(const SIM_H2 &a, const SIM_H2 &b) { return __hble2(a, b); }
inline bool operator>(const SIM_H2 &a, const SIM_H2 &b) { return __hbgt2(a, b); }
inline bool operator>=(const SIM_H2 &a, const SIM_H2 &b) { return __hbge2(a, b); }
