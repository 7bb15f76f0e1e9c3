// cuda_fp16.h (simulator stand-in): half and half2 on gcc's _Float16.
//
// Conversions to half round to nearest even (gcc's _Float16 conversions do, bit for bit).
// Arithmetic is computed in double, where the sum, product or fused multiply-add of halves is
// exact (or exact enough to round the same way), then rounded once: __hfma rounds once like
// the GPU's fused instruction, never twice.
#pragma once

#include "sim_builtins.h"

// The bits of a half, as conversion functions (__nv_cvt_fp8_to_halfraw) return them; a __half
// is built from one implicitly, as CUDA's is (`h += __nv_cvt_fp8_to_halfraw(...)`).
struct __half_raw { unsigned short x; };

struct __half {
    unsigned short __x;
    __half() = default;  // trivial: `__shared__ __half` must need no dynamic initialisation
    __half(const __half_raw &r) : __x(r.x) {}
    __half(float f) { *this = from(f); }
    __half(double d) { *this = from(d); }
    __half(int i) { *this = from((double)i); }
    operator float() const { return to_float(); }

    static __half from(double d) {
        _Float16 h = (_Float16)d;  // a single correctly rounded conversion
        __half r;
        memcpy(&r.__x, &h, 2);
        return r;
    }
    float to_float() const {
        _Float16 h;
        memcpy(&h, &__x, 2);
        return (float)h;
    }
    __half &operator+=(const __half &o);
    __half &operator-=(const __half &o);
    __half &operator*=(const __half &o);
    __half &operator/=(const __half &o);
};
typedef __half half;

struct __align__(4) __half2 {
    __half x, y;
};
typedef __half2 half2;

inline double __sim_d(__half h) { return (double)h.to_float(); }

// ---- Conversions ----
inline __half __float2half(float f) { return __half::from(f); }
inline __half __float2half_rn(float f) { return __half::from(f); }
inline __half __double2half(double d) { return __half::from(d); }
inline float __half2float(__half h) { return h.to_float(); }
inline __half __int2half_rn(int i) { return __half::from((double)i); }
inline int __half2int_rn(__half h) { return (int)nearbyintf(h.to_float()); }
inline int __half2int_rz(__half h) { return (int)h.to_float(); }
inline unsigned short __half_as_ushort(__half h) { return h.__x; }
inline short __half_as_short(__half h) { return (short)h.__x; }
inline __half __ushort_as_half(unsigned short u) { __half h; h.__x = u; return h; }
inline __half __short_as_half(short s) { __half h; h.__x = (unsigned short)s; return h; }
inline __half2 __floats2half2_rn(float a, float b) { return {__float2half(a), __float2half(b)}; }
inline __half2 __float2half2_rn(float a) { return {__float2half(a), __float2half(a)}; }
inline __half2 __halves2half2(__half a, __half b) { return {a, b}; }
inline __half2 __half2half2(__half a) { return {a, a}; }
inline float2 __half22float2(__half2 h) { return {h.x.to_float(), h.y.to_float()}; }
inline __half2 __float22half2_rn(float2 f) { return __floats2half2_rn(f.x, f.y); }
inline float __low2float(__half2 h) { return h.x.to_float(); }
inline float __high2float(__half2 h) { return h.y.to_float(); }
inline __half __low2half(__half2 h) { return h.x; }
inline __half __high2half(__half2 h) { return h.y; }
inline __half2 __lows2half2(__half2 a, __half2 b) { return {a.x, b.x}; }
inline __half2 __highs2half2(__half2 a, __half2 b) { return {a.y, b.y}; }
inline __half2 __low2half2(__half2 h) { return {h.x, h.x}; }
inline __half2 __high2half2(__half2 h) { return {h.y, h.y}; }

// ---- Arithmetic, one rounding each ----
inline __half __hadd(__half a, __half b) { return __half::from(__sim_d(a) + __sim_d(b)); }
inline __half __hsub(__half a, __half b) { return __half::from(__sim_d(a) - __sim_d(b)); }
inline __half __hmul(__half a, __half b) { return __half::from(__sim_d(a) * __sim_d(b)); }
inline __half __hdiv(__half a, __half b) { return __half::from((double)(a.to_float() / b.to_float())); }
inline __half __hfma(__half a, __half b, __half c) {
    return __half::from(__sim_d(a) * __sim_d(b) + __sim_d(c));
}
inline __half __hneg(__half a) { return __ushort_as_half(a.__x ^ 0x8000); }
inline __half __habs(__half a) { return __ushort_as_half(a.__x & 0x7FFF); }
inline __half __hmax(__half a, __half b) { return a.to_float() >= b.to_float() ? a : b; }
inline __half __hmin(__half a, __half b) { return a.to_float() <= b.to_float() ? a : b; }
inline bool __hisnan(__half a) { return (a.__x & 0x7FFF) > 0x7C00; }
inline bool __hisinf(__half a) { return (a.__x & 0x7FFF) == 0x7C00; }
inline bool __heq(__half a, __half b) { return a.to_float() == b.to_float(); }
inline bool __hne(__half a, __half b) { return a.to_float() != b.to_float(); }
inline bool __hlt(__half a, __half b) { return a.to_float() < b.to_float(); }
inline bool __hle(__half a, __half b) { return a.to_float() <= b.to_float(); }
inline bool __hgt(__half a, __half b) { return a.to_float() > b.to_float(); }
inline bool __hge(__half a, __half b) { return a.to_float() >= b.to_float(); }
inline __half hexp(__half a) { return __half::from((double)expf(a.to_float())); }
inline __half hsqrt(__half a) { return __half::from(sqrt(__sim_d(a))); }
inline __half hrsqrt(__half a) { return __half::from((double)(1.0f / sqrtf(a.to_float()))); }

inline __half2 __hadd2(__half2 a, __half2 b) { return {__hadd(a.x, b.x), __hadd(a.y, b.y)}; }
inline __half2 __hsub2(__half2 a, __half2 b) { return {__hsub(a.x, b.x), __hsub(a.y, b.y)}; }
inline __half2 __hmul2(__half2 a, __half2 b) { return {__hmul(a.x, b.x), __hmul(a.y, b.y)}; }
inline __half2 __h2div(__half2 a, __half2 b) { return {__hdiv(a.x, b.x), __hdiv(a.y, b.y)}; }
inline __half2 __hfma2(__half2 a, __half2 b, __half2 c) {
    return {__hfma(a.x, b.x, c.x), __hfma(a.y, b.y, c.y)};
}
inline __half2 __hneg2(__half2 a) { return {__hneg(a.x), __hneg(a.y)}; }
inline __half2 __hmax2(__half2 a, __half2 b) { return {__hmax(a.x, b.x), __hmax(a.y, b.y)}; }
inline __half2 __hmin2(__half2 a, __half2 b) { return {__hmin(a.x, b.x), __hmin(a.y, b.y)}; }

// Operators as cuda_fp16.hpp defines them for device code (half with half only).
inline __half operator+(const __half &a, const __half &b) { return __hadd(a, b); }
inline __half operator-(const __half &a, const __half &b) { return __hsub(a, b); }
inline __half operator*(const __half &a, const __half &b) { return __hmul(a, b); }
inline __half operator/(const __half &a, const __half &b) { return __hdiv(a, b); }
inline __half operator-(const __half &a) { return __hneg(a); }
inline __half &__half::operator+=(const __half &o) { return *this = __hadd(*this, o); }
inline __half &__half::operator-=(const __half &o) { return *this = __hsub(*this, o); }
inline __half &__half::operator*=(const __half &o) { return *this = __hmul(*this, o); }
inline __half &__half::operator/=(const __half &o) { return *this = __hdiv(*this, o); }
inline bool operator==(const __half &a, const __half &b) { return __heq(a, b); }
inline bool operator!=(const __half &a, const __half &b) { return __hne(a, b); }
inline bool operator<(const __half &a, const __half &b) { return __hlt(a, b); }
inline bool operator<=(const __half &a, const __half &b) { return __hle(a, b); }
inline bool operator>(const __half &a, const __half &b) { return __hgt(a, b); }
inline bool operator>=(const __half &a, const __half &b) { return __hge(a, b); }
inline __half2 operator+(const __half2 &a, const __half2 &b) { return __hadd2(a, b); }
inline __half2 operator-(const __half2 &a, const __half2 &b) { return __hsub2(a, b); }
inline __half2 operator*(const __half2 &a, const __half2 &b) { return __hmul2(a, b); }

// Warp shuffles of half2 go through the generic templates (4 bytes).
