// cuda_fp8.h (simulator stand-in): the FP8 formats of sm_89 and later, E4M3 and E5M2, as
// storage types with their conversions.
//
// E4M3: 4 exponent bits (bias 7), 3 mantissa bits, no infinity, 0x7F/0xFF NaN, largest 448.
// E5M2: 5 exponent bits (bias 15), 2 mantissa bits, IEEE-like infinity and NaN, largest 57344.
// Conversions from float round to nearest even; past the largest finite value they give it
// (__NV_SATFINITE, what the types' constructors ask for) or NaN for E4M3 and infinity for
// E5M2 (__NV_NOSAT), as the toolkit's header does.
#pragma once

#include <cmath>
#include <cstring>

#include "cuda_bf16.h"
#include "cuda_fp16.h"
#include "sim_fp8_value.h"

typedef unsigned char __nv_fp8_storage_t;
typedef unsigned short __nv_fp8x2_storage_t;
typedef unsigned int __nv_fp8x4_storage_t;

typedef enum __nv_saturation_t { __NV_NOSAT, __NV_SATFINITE } __nv_saturation_t;
typedef enum __nv_fp8_interpretation_t { __NV_E4M3, __NV_E5M2 } __nv_fp8_interpretation_t;

namespace sim_fp8 {
struct Format {
    int mant, bias;
    double largest;
};
inline Format format(__nv_fp8_interpretation_t f) {
    return f == __NV_E4M3 ? Format{3, 7, 448.0} : Format{2, 15, 57344.0};
}

inline __nv_fp8_storage_t encode(double x, __nv_saturation_t sat, __nv_fp8_interpretation_t f) {
    const Format t = format(f);
    const unsigned sign = std::signbit(x) ? 0x80u : 0u;
    if (std::isnan(x)) return (__nv_fp8_storage_t)0x7F;  // the canonical NaN of both
    double a = std::fabs(x);
    const int emin = 1 - t.bias;  // the smallest normal exponent; subnormals share its quantum
    int e;
    std::frexp(a, &e);
    e -= 1;  // a = 1.m * 2^e
    const double quantum = std::ldexp(1.0, (e < emin ? emin : e) - t.mant);
    double q = std::nearbyint(a / quantum) * quantum;  // to nearest, ties to even
    if (q > t.largest) {
        if (sat == __NV_SATFINITE) {
            q = t.largest;
        } else {
            return (__nv_fp8_storage_t)(sign | (f == __NV_E4M3 ? 0x7Fu : 0x7Cu));
        }
    }
    unsigned bits;
    if (q < std::ldexp(1.0, emin)) {
        bits = (unsigned)std::ldexp(q, t.mant - emin);  // subnormal (or zero)
    } else {
        std::frexp(q, &e);
        e -= 1;
        const unsigned m = (unsigned)(std::ldexp(q, t.mant - e) - std::ldexp(1.0, t.mant));
        bits = ((unsigned)(e + t.bias) << t.mant) | m;
    }
    return (__nv_fp8_storage_t)(sign | bits);
}

inline float decode(__nv_fp8_storage_t b, __nv_fp8_interpretation_t f) { return sim::fp8_value(b, f == __NV_E5M2); }
}  // namespace sim_fp8

inline __nv_fp8_storage_t __nv_cvt_float_to_fp8(float x, __nv_saturation_t sat,
                                               __nv_fp8_interpretation_t f) {
    return sim_fp8::encode(x, sat, f);
}
inline __nv_fp8_storage_t __nv_cvt_double_to_fp8(double x, __nv_saturation_t sat,
                                                __nv_fp8_interpretation_t f) {
    return sim_fp8::encode(x, sat, f);
}
inline __nv_fp8x2_storage_t __nv_cvt_float2_to_fp8x2(float2 x, __nv_saturation_t sat,
                                                    __nv_fp8_interpretation_t f) {
    return (__nv_fp8x2_storage_t)(sim_fp8::encode(x.x, sat, f) |
                                  (sim_fp8::encode(x.y, sat, f) << 8));
}
inline __nv_fp8_storage_t __nv_cvt_halfraw_to_fp8(__half_raw x, __nv_saturation_t sat,
                                                 __nv_fp8_interpretation_t f) {
    __half h;
    memcpy(&h, &x, 2);
    return sim_fp8::encode(__half2float(h), sat, f);
}
inline __half_raw __nv_cvt_fp8_to_halfraw(__nv_fp8_storage_t x, __nv_fp8_interpretation_t f) {
    const __half h = __float2half(sim_fp8::decode(x, f));  // exact: FP16 holds every FP8 value
    __half_raw r;
    memcpy(&r, &h, 2);
    return r;
}

inline __nv_fp8x2_storage_t __nv_cvt_double2_to_fp8x2(double2 x, __nv_saturation_t sat,
                                                     __nv_fp8_interpretation_t f) {
    return (__nv_fp8x2_storage_t)(sim_fp8::encode(x.x, sat, f) | (sim_fp8::encode(x.y, sat, f) << 8));
}
inline __nv_fp8x2_storage_t __nv_cvt_halfraw2_to_fp8x2(__half2_raw x, __nv_saturation_t sat,
                                                      __nv_fp8_interpretation_t f) {
    return (__nv_fp8x2_storage_t)(__nv_cvt_halfraw_to_fp8(__half_raw{x.x}, sat, f) |
                                  (__nv_cvt_halfraw_to_fp8(__half_raw{x.y}, sat, f) << 8));
}
inline __half2_raw __nv_cvt_fp8x2_to_halfraw2(__nv_fp8x2_storage_t x, __nv_fp8_interpretation_t f) {
    return {__nv_cvt_fp8_to_halfraw((__nv_fp8_storage_t)(x & 0xFF), f).x,
            __nv_cvt_fp8_to_halfraw((__nv_fp8_storage_t)(x >> 8), f).x};
}
inline __nv_fp8_storage_t __nv_cvt_bfloat16raw_to_fp8(__nv_bfloat16_raw x, __nv_saturation_t sat,
                                                     __nv_fp8_interpretation_t f) {
    return sim_fp8::encode(__nv_bfloat16(x).to_float(), sat, f);
}
inline __nv_fp8x2_storage_t __nv_cvt_bfloat16raw2_to_fp8x2(__nv_bfloat162_raw x, __nv_saturation_t sat,
                                                          __nv_fp8_interpretation_t f) {
    return (__nv_fp8x2_storage_t)(__nv_cvt_bfloat16raw_to_fp8({x.x}, sat, f) |
                                  (__nv_cvt_bfloat16raw_to_fp8({x.y}, sat, f) << 8));
}

// E8M0, the scale of the MX formats: a power of two 2^(code - 127), 0xFF NaN. A value becomes
// the power of two its magnitude rounds to in the mode given (toward zero or down: the one at
// or below it; up: at or above it; to nearest: the nearer), past 2^127 the largest or NaN.
namespace sim_fp8 {
inline __nv_fp8_storage_t e8m0(double x, __nv_saturation_t sat, cudaRoundMode mode) {
    if (std::isnan(x)) return 0xFF;
    const double a = std::fabs(x);
    if (a == 0) return 0;
    int e;
    const double m = std::frexp(a, &e);  // a = m 2^e, m in [0.5, 1)
    int p = e - 1;                       // 2^p <= a < 2^(p+1)
    if (m != 0.5 && (mode == cudaRoundPosInf || (mode == cudaRoundNearest && m >= 0.75))) p += 1;
    if (p > 127) return sat == __NV_SATFINITE ? 0xFE : 0xFF;
    return (__nv_fp8_storage_t)(p < -127 ? 0 : p + 127);
}
}  // namespace sim_fp8
inline __nv_fp8_storage_t __nv_cvt_double_to_e8m0(double x, __nv_saturation_t sat, cudaRoundMode r) {
    return sim_fp8::e8m0(x, sat, r);
}
inline __nv_fp8_storage_t __nv_cvt_float_to_e8m0(float x, __nv_saturation_t sat, cudaRoundMode r) {
    return sim_fp8::e8m0(x, sat, r);
}
inline __nv_fp8_storage_t __nv_cvt_bfloat16raw_to_e8m0(__nv_bfloat16_raw x, __nv_saturation_t sat, cudaRoundMode r) {
    return sim_fp8::e8m0(__nv_bfloat16(x).to_float(), sat, r);
}
inline __nv_fp8x2_storage_t __nv_cvt_double2_to_e8m0x2(double2 x, __nv_saturation_t sat, cudaRoundMode r) {
    return (__nv_fp8x2_storage_t)(sim_fp8::e8m0(x.x, sat, r) | (sim_fp8::e8m0(x.y, sat, r) << 8));
}
inline __nv_fp8x2_storage_t __nv_cvt_float2_to_e8m0x2(float2 x, __nv_saturation_t sat, cudaRoundMode r) {
    return (__nv_fp8x2_storage_t)(sim_fp8::e8m0(x.x, sat, r) | (sim_fp8::e8m0(x.y, sat, r) << 8));
}
inline __nv_fp8x2_storage_t __nv_cvt_bfloat162raw_to_e8m0x2(__nv_bfloat162_raw x, __nv_saturation_t sat,
                                                           cudaRoundMode r) {
    return (__nv_fp8x2_storage_t)(__nv_cvt_bfloat16raw_to_e8m0({x.x}, sat, r) |
                                  (__nv_cvt_bfloat16raw_to_e8m0({x.y}, sat, r) << 8));
}
// 2^(code - 127) in BF16, which holds every one (2^-127 as a subnormal); 0xFF its NaN.
inline __nv_bfloat16_raw __nv_cvt_e8m0_to_bf16raw(__nv_fp8_storage_t x) {
    if (x == 0xFF) return {0x7FFF};
    return {(unsigned short)(x == 0 ? 0x0040 : (unsigned)x << 7)};
}
inline __nv_bfloat162_raw __nv_cvt_e8m0x2_to_bf162raw(__nv_fp8x2_storage_t x) {
    return {__nv_cvt_e8m0_to_bf16raw((__nv_fp8_storage_t)(x & 0xFF)).x,
            __nv_cvt_e8m0_to_bf16raw((__nv_fp8_storage_t)(x >> 8)).x};
}

// The types: a constructor saturates to the largest finite value, as the toolkit's does.
#define SIM_FP8_TYPE(NAME, X2, X4, INTERP)                                                        \
    struct NAME {                                                                                 \
        __nv_fp8_storage_t __x;                                                                   \
        NAME() = default;                                                                         \
        NAME(float f) : __x(sim_fp8::encode(f, __NV_SATFINITE, INTERP)) {}                        \
        NAME(double d) : __x(sim_fp8::encode(d, __NV_SATFINITE, INTERP)) {}                       \
        NAME(int i) : __x(sim_fp8::encode((double)i, __NV_SATFINITE, INTERP)) {}                  \
        NAME(__half h) : __x(sim_fp8::encode(__half2float(h), __NV_SATFINITE, INTERP)) {}         \
        NAME(__nv_bfloat16 h)                                                                     \
            : __x(sim_fp8::encode(__bfloat162float(h), __NV_SATFINITE, INTERP)) {}                \
        operator float() const { return sim_fp8::decode(__x, INTERP); }                           \
        operator __half() const { return __float2half(sim_fp8::decode(__x, INTERP)); }            \
    };                                                                                            \
    struct X2 {                                                                                   \
        __nv_fp8x2_storage_t __x;                                                                 \
        X2() = default;                                                                           \
        X2(float2 f) : __x(__nv_cvt_float2_to_fp8x2(f, __NV_SATFINITE, INTERP)) {}                \
        operator float2() const {                                                                 \
            return make_float2(sim_fp8::decode((__nv_fp8_storage_t)(__x & 0xFF), INTERP),         \
                               sim_fp8::decode((__nv_fp8_storage_t)(__x >> 8), INTERP));          \
        }                                                                                         \
    };                                                                                            \
    struct X4 {                                                                                   \
        __nv_fp8x4_storage_t __x;                                                                 \
        X4() = default;                                                                           \
        X4(float4 f)                                                                              \
            : __x((__nv_fp8x4_storage_t)sim_fp8::encode(f.x, __NV_SATFINITE, INTERP) |            \
                  (__nv_fp8x4_storage_t)sim_fp8::encode(f.y, __NV_SATFINITE, INTERP) << 8 |       \
                  (__nv_fp8x4_storage_t)sim_fp8::encode(f.z, __NV_SATFINITE, INTERP) << 16 |      \
                  (__nv_fp8x4_storage_t)sim_fp8::encode(f.w, __NV_SATFINITE, INTERP) << 24) {}    \
        operator float4() const {                                                                 \
            return make_float4(sim_fp8::decode((__nv_fp8_storage_t)(__x), INTERP),                \
                               sim_fp8::decode((__nv_fp8_storage_t)(__x >> 8), INTERP),           \
                               sim_fp8::decode((__nv_fp8_storage_t)(__x >> 16), INTERP),          \
                               sim_fp8::decode((__nv_fp8_storage_t)(__x >> 24), INTERP));         \
        }                                                                                         \
    };

SIM_FP8_TYPE(__nv_fp8_e4m3, __nv_fp8x2_e4m3, __nv_fp8x4_e4m3, __NV_E4M3)
SIM_FP8_TYPE(__nv_fp8_e5m2, __nv_fp8x2_e5m2, __nv_fp8x4_e5m2, __NV_E5M2)
#undef SIM_FP8_TYPE
