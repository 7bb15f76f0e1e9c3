// cuda_fp16.h (simulator stand-in): half and half2 on gcc's _Float16.
//
// Conversions to half round to nearest even (gcc's _Float16 conversions do, bit for bit).
// The functions and operators (sim_half_api.h, shared with cuda_bf16.h) round once, as the
// GPU's do: __hfma like the fused instruction, never twice.
#pragma once

#include "sim_builtins.h"

// The bits of a half, as conversion functions (__nv_cvt_fp8_to_halfraw) return them; a __half
// is built from one implicitly, as CUDA's is (`h += __nv_cvt_fp8_to_halfraw(...)`).
struct __half_raw { unsigned short x; };
struct __half2_raw { unsigned short x, y; };

struct __half {
    unsigned short __x;
    __half() = default;  // trivial: `__shared__ __half` must need no dynamic initialisation
    __half(const __half_raw &r) : __x(r.x) {}
    __half &operator=(const __half_raw &r) {
        __x = r.x;
        return *this;
    }
    operator __half_raw() const { return {__x}; }
    __half(float f) { *this = from_double(f); }
    __half(double d) { *this = from_double(d); }
    __half(int i) { *this = from_double((double)i); }
    operator float() const { return to_float(); }

    static constexpr unsigned short kInf = 0x7C00;  // the bits of +inf
    static __half from_double(double d) {
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
};
typedef __half half;

// Its constructors and conversions are the toolkit's: from two halves, from and to the raw bits.
struct __align__(4) __half2 {
    __half x, y;
    __half2() = default;  // trivial, as __half's
    __half2(const __half &a, const __half &b) : x(a), y(b) {}
    __half2(const __half2_raw &r) : x(__half_raw{r.x}), y(__half_raw{r.y}) {}
    __half2 &operator=(const __half2_raw &r) {
        x = __half_raw{r.x};
        y = __half_raw{r.y};
        return *this;
    }
    operator __half2_raw() const { return {x.__x, y.__x}; }
};
typedef __half2 half2;

inline double __sim_d(__half h) { return (double)h.to_float(); }

#define SIM_H __half
#define SIM_H2 __half2
#define SIM_HN half
#define SIM_H2N half2
#include "sim_half_api.h"
#undef SIM_H
#undef SIM_H2
#undef SIM_HN
#undef SIM_H2N

#define CUDART_INF_FP16 __ushort_as_half((unsigned short)0x7C00U)
#define CUDART_NAN_FP16 __ushort_as_half((unsigned short)0x7FFFU)
#define CUDART_MIN_DENORM_FP16 __ushort_as_half((unsigned short)0x0001U)
#define CUDART_MAX_NORMAL_FP16 __ushort_as_half((unsigned short)0x7BFFU)
#define CUDART_NEG_ZERO_FP16 __ushort_as_half((unsigned short)0x8000U)
#define CUDART_ZERO_FP16 __ushort_as_half((unsigned short)0x0000U)
#define CUDART_ONE_FP16 __ushort_as_half((unsigned short)0x3C00U)

// Warp shuffles and cache-hinted loads and stores of half and half2 go through the generic
// templates.
