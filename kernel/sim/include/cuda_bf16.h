// cuda_bf16.h (simulator stand-in): __nv_bfloat16 and __nv_bfloat162.
//
// BF16 keeps FP32's 8 exponent bits and 7 stored mantissa bits. Conversions round to nearest
// even, as __float2bfloat16 does. Arithmetic is computed exactly in double and rounded once
// (double -> float with round-to-odd, then float -> bf16 to nearest even, which equals one
// direct rounding), so __hfma rounds once like the GPU's fused instruction. The functions
// and operators are sim_half_api.h's, shared with cuda_fp16.h.
#pragma once

#include "cuda_fp16.h"

struct __nv_bfloat16_raw { unsigned short x; };
struct __nv_bfloat162_raw { unsigned short x, y; };

struct __nv_bfloat16 {
    unsigned short __x;
    __nv_bfloat16() = default;  // trivial: `__shared__ __nv_bfloat16` needs no initialiser
    __nv_bfloat16(const __nv_bfloat16_raw &r) : __x(r.x) {}
    __nv_bfloat16 &operator=(const __nv_bfloat16_raw &r) {
        __x = r.x;
        return *this;
    }
    operator __nv_bfloat16_raw() const { return {__x}; }
    __nv_bfloat16(float f) { *this = from(f); }
    __nv_bfloat16(double d) { *this = from_double(d); }
    __nv_bfloat16(int i) { *this = from_double((double)i); }
    operator float() const { return to_float(); }

    static constexpr unsigned short kInf = 0x7F80;  // the bits of +inf
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

// Its constructors and conversions are the toolkit's: from two halves, from and to the raw bits.
struct __align__(4) __nv_bfloat162 {
    __nv_bfloat16 x, y;
    __nv_bfloat162() = default;  // trivial, as __nv_bfloat16's
    __nv_bfloat162(const __nv_bfloat16 &a, const __nv_bfloat16 &b) : x(a), y(b) {}
    __nv_bfloat162(const __nv_bfloat162_raw &r) : x(__nv_bfloat16_raw{r.x}), y(__nv_bfloat16_raw{r.y}) {}
    __nv_bfloat162 &operator=(const __nv_bfloat162_raw &r) {
        x = __nv_bfloat16_raw{r.x};
        y = __nv_bfloat16_raw{r.y};
        return *this;
    }
    operator __nv_bfloat162_raw() const { return {x.__x, y.__x}; }
};
typedef __nv_bfloat162 nv_bfloat162;

inline double __sim_d(__nv_bfloat16 h) { return (double)h.to_float(); }

#define SIM_H __nv_bfloat16
#define SIM_H2 __nv_bfloat162
#define SIM_HN bfloat16
#define SIM_H2N bfloat162
#include "sim_half_api.h"
#undef SIM_H
#undef SIM_H2
#undef SIM_HN
#undef SIM_H2N

#define CUDART_INF_BF16 __ushort_as_bfloat16((unsigned short)0x7F80U)
#define CUDART_NAN_BF16 __ushort_as_bfloat16((unsigned short)0x7FFFU)
#define CUDART_MIN_DENORM_BF16 __ushort_as_bfloat16((unsigned short)0x0001U)
#define CUDART_MAX_NORMAL_BF16 __ushort_as_bfloat16((unsigned short)0x7F7FU)
#define CUDART_NEG_ZERO_BF16 __ushort_as_bfloat16((unsigned short)0x8000U)
#define CUDART_ZERO_BF16 __ushort_as_bfloat16((unsigned short)0x0000U)
#define CUDART_ONE_BF16 __ushort_as_bfloat16((unsigned short)0x3F80U)
