// cuda_bf16.h (simulator stand-in): __nv_bfloat16 and __nv_bfloat162.
//
// BF16 keeps FP32's 8 exponent bits and 7 stored mantissa bits. Conversions round to nearest
// even, as __float2bfloat16 does. Arithmetic is computed exactly in double and rounded once
// (double -> float with round-to-odd, then float -> bf16 to nearest even, which equals one
// direct rounding), so __hfma rounds once like the GPU's fused instruction.
#pragma once

#include "cuda_fp16.h"

struct __nv_bfloat16_raw { unsigned short x; };

struct __nv_bfloat16 {
    unsigned short __x;
    __nv_bfloat16() = default;  // trivial: `__shared__ __nv_bfloat16` needs no initialiser
    __nv_bfloat16(const __nv_bfloat16_raw &r) : __x(r.x) {}
    __nv_bfloat16(float f) { *this = from(f); }
    __nv_bfloat16(double d) { *this = from_double(d); }
    __nv_bfloat16(int i) { *this = from_double((double)i); }
    operator float() const { return to_float(); }

    static __nv_bfloat16 from(float f) {
        unsigned u;
        memcpy(&u, &f, 4);
        __nv_bfloat16 r;
        if ((u & 0x7FFFFFFFu) > 0x7F800000u) {
            r.__x = (unsigned short)((u >> 16) | 0x40);  // NaN stays (quiet) NaN
        } else {
            u += 0x7FFFu + ((u >> 16) & 1u);
            r.__x = (unsigned short)(u >> 16);
        }
        return r;
    }
    static __nv_bfloat16 from_double(double d) {
        float f = (float)d;
        if (d == d && (double)f != d && f - f == 0.0f) {  // inexact and finite: round to odd
            unsigned u;
            memcpy(&u, &f, 4);
            if (fabs((double)f) > fabs(d)) u -= 1;
            u |= 1u;
            memcpy(&f, &u, 4);
        }
        return from(f);
    }
    float to_float() const {
        unsigned u = (unsigned)__x << 16;
        float f;
        memcpy(&f, &u, 4);
        return f;
    }
};
typedef __nv_bfloat16 nv_bfloat16;

struct __align__(4) __nv_bfloat162 {
    __nv_bfloat16 x, y;
};
typedef __nv_bfloat162 nv_bfloat162;

inline double __sim_d(__nv_bfloat16 h) { return (double)h.to_float(); }

// ---- Conversions ----
inline __nv_bfloat16 __float2bfloat16(float f) { return __nv_bfloat16::from(f); }
inline __nv_bfloat16 __float2bfloat16_rn(float f) { return __nv_bfloat16::from(f); }
inline __nv_bfloat16 __double2bfloat16(double d) { return __nv_bfloat16::from_double(d); }
inline float __bfloat162float(__nv_bfloat16 h) { return h.to_float(); }
inline __nv_bfloat16 __ushort_as_bfloat16(unsigned short u) { __nv_bfloat16 h; h.__x = u; return h; }
inline unsigned short __bfloat16_as_ushort(__nv_bfloat16 h) { return h.__x; }
inline __nv_bfloat162 __floats2bfloat162_rn(float a, float b) { return {__float2bfloat16(a), __float2bfloat16(b)}; }
inline __nv_bfloat162 __float2bfloat162_rn(float a) { return {__float2bfloat16(a), __float2bfloat16(a)}; }
inline __nv_bfloat162 __float22bfloat162_rn(float2 f) { return __floats2bfloat162_rn(f.x, f.y); }
inline float2 __bfloat1622float2(__nv_bfloat162 h) { return {h.x.to_float(), h.y.to_float()}; }
inline __nv_bfloat162 __halves2bfloat162(__nv_bfloat16 a, __nv_bfloat16 b) { return {a, b}; }
inline float __low2float(__nv_bfloat162 h) { return h.x.to_float(); }
inline float __high2float(__nv_bfloat162 h) { return h.y.to_float(); }

// ---- Arithmetic, one rounding each (CUDA overloads the half names for bf16) ----
inline __nv_bfloat16 __hadd(__nv_bfloat16 a, __nv_bfloat16 b) { return __nv_bfloat16::from_double(__sim_d(a) + __sim_d(b)); }
inline __nv_bfloat16 __hsub(__nv_bfloat16 a, __nv_bfloat16 b) { return __nv_bfloat16::from_double(__sim_d(a) - __sim_d(b)); }
inline __nv_bfloat16 __hmul(__nv_bfloat16 a, __nv_bfloat16 b) { return __nv_bfloat16::from_double(__sim_d(a) * __sim_d(b)); }
inline __nv_bfloat16 __hdiv(__nv_bfloat16 a, __nv_bfloat16 b) { return __nv_bfloat16::from(a.to_float() / b.to_float()); }
inline __nv_bfloat16 __hfma(__nv_bfloat16 a, __nv_bfloat16 b, __nv_bfloat16 c) {
    return __nv_bfloat16::from_double(__sim_d(a) * __sim_d(b) + __sim_d(c));
}
inline __nv_bfloat16 __hneg(__nv_bfloat16 a) { return __ushort_as_bfloat16(a.__x ^ 0x8000); }
inline __nv_bfloat16 __habs(__nv_bfloat16 a) { return __ushort_as_bfloat16(a.__x & 0x7FFF); }
inline __nv_bfloat16 __hmax(__nv_bfloat16 a, __nv_bfloat16 b) { return a.to_float() >= b.to_float() ? a : b; }
inline __nv_bfloat16 __hmin(__nv_bfloat16 a, __nv_bfloat16 b) { return a.to_float() <= b.to_float() ? a : b; }
inline bool __hisnan(__nv_bfloat16 a) { return (a.__x & 0x7FFF) > 0x7F80; }
inline __nv_bfloat16 hexp(__nv_bfloat16 a) { return __nv_bfloat16::from(expf(a.to_float())); }
inline __nv_bfloat162 __hadd2(__nv_bfloat162 a, __nv_bfloat162 b) { return {__hadd(a.x, b.x), __hadd(a.y, b.y)}; }
inline __nv_bfloat162 __hmul2(__nv_bfloat162 a, __nv_bfloat162 b) { return {__hmul(a.x, b.x), __hmul(a.y, b.y)}; }
inline __nv_bfloat162 __hfma2(__nv_bfloat162 a, __nv_bfloat162 b, __nv_bfloat162 c) {
    return {__hfma(a.x, b.x, c.x), __hfma(a.y, b.y, c.y)};
}

inline __nv_bfloat16 operator+(const __nv_bfloat16 &a, const __nv_bfloat16 &b) { return __hadd(a, b); }
inline __nv_bfloat16 operator-(const __nv_bfloat16 &a, const __nv_bfloat16 &b) { return __hsub(a, b); }
inline __nv_bfloat16 operator*(const __nv_bfloat16 &a, const __nv_bfloat16 &b) { return __hmul(a, b); }
inline __nv_bfloat16 operator/(const __nv_bfloat16 &a, const __nv_bfloat16 &b) { return __hdiv(a, b); }
inline __nv_bfloat16 operator-(const __nv_bfloat16 &a) { return __hneg(a); }
inline __nv_bfloat16 &operator+=(__nv_bfloat16 &a, const __nv_bfloat16 &b) { return a = __hadd(a, b); }
inline __nv_bfloat16 &operator-=(__nv_bfloat16 &a, const __nv_bfloat16 &b) { return a = __hsub(a, b); }
inline __nv_bfloat16 &operator*=(__nv_bfloat16 &a, const __nv_bfloat16 &b) { return a = __hmul(a, b); }
inline __nv_bfloat16 &operator/=(__nv_bfloat16 &a, const __nv_bfloat16 &b) { return a = __hdiv(a, b); }
