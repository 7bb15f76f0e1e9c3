// PyTorch's 16-bit floats, c10::Half and c10::BFloat16, for the stand-ins of c10/util/Half.h and
// c10/util/BFloat16.h: 16 bits that compute in float, as PyTorch's Half-inl.h has them. Two of
// them, or one and an integer, give the type back; one and a float or a double give that type;
// comparisons and max() go through float. Each converts from and to CUDA's type of the same
// format, whose bits it holds (the lab passes its f16 and bf16 buffers to a kernel taking them).
// Its operators are its own, exact matches, so that CUDA's operators of __half (which a
// PyTorch extension's build turns off, and the lab does not) leave no call ambiguous.
#pragma once
#include <cuda_fp16.h>
#include <cuda_bf16.h>

#define KERNEL_LAB_FLOAT16_BINARY(T, R, OP, A, B, VIA_A, VIA_B)                                   \
    __host__ __device__ inline R operator OP(A a, B b) { return R(VIA_A(a) OP VIA_B(b)); }
#define KERNEL_LAB_FLOAT16_COMPARE(T, OP, A, B, VIA_A, VIA_B)                                     \
    __host__ __device__ inline bool operator OP(A a, B b) { return VIA_A(a) OP VIA_B(b); }
#define KERNEL_LAB_AS_FLOAT(v) static_cast<float>(v)
#define KERNEL_LAB_AS_DOUBLE(v) static_cast<double>(static_cast<float>(v))
#define KERNEL_LAB_AS_IS(v) (v)
// Each operator between T and T, float, double and int, both ways.
#define KERNEL_LAB_FLOAT16_OPERATOR(T, OP)                                                        \
    KERNEL_LAB_FLOAT16_BINARY(T, T, OP, const T &, const T &, KERNEL_LAB_AS_FLOAT, KERNEL_LAB_AS_FLOAT) \
    KERNEL_LAB_FLOAT16_BINARY(T, float, OP, const T &, float, KERNEL_LAB_AS_FLOAT, KERNEL_LAB_AS_IS) \
    KERNEL_LAB_FLOAT16_BINARY(T, float, OP, float, const T &, KERNEL_LAB_AS_IS, KERNEL_LAB_AS_FLOAT) \
    KERNEL_LAB_FLOAT16_BINARY(T, double, OP, const T &, double, KERNEL_LAB_AS_DOUBLE, KERNEL_LAB_AS_IS) \
    KERNEL_LAB_FLOAT16_BINARY(T, double, OP, double, const T &, KERNEL_LAB_AS_IS, KERNEL_LAB_AS_DOUBLE) \
    KERNEL_LAB_FLOAT16_BINARY(T, T, OP, const T &, int, KERNEL_LAB_AS_FLOAT, KERNEL_LAB_AS_FLOAT) \
    KERNEL_LAB_FLOAT16_BINARY(T, T, OP, int, const T &, KERNEL_LAB_AS_FLOAT, KERNEL_LAB_AS_FLOAT) \
    __host__ __device__ inline T &operator OP##=(T &a, const T &b) { return a = a OP b; }
#define KERNEL_LAB_FLOAT16_COMPARISON(T, OP)                                                      \
    KERNEL_LAB_FLOAT16_COMPARE(T, OP, const T &, const T &, KERNEL_LAB_AS_FLOAT, KERNEL_LAB_AS_FLOAT) \
    KERNEL_LAB_FLOAT16_COMPARE(T, OP, const T &, float, KERNEL_LAB_AS_FLOAT, KERNEL_LAB_AS_IS) \
    KERNEL_LAB_FLOAT16_COMPARE(T, OP, float, const T &, KERNEL_LAB_AS_IS, KERNEL_LAB_AS_FLOAT) \
    KERNEL_LAB_FLOAT16_COMPARE(T, OP, const T &, double, KERNEL_LAB_AS_DOUBLE, KERNEL_LAB_AS_IS) \
    KERNEL_LAB_FLOAT16_COMPARE(T, OP, double, const T &, KERNEL_LAB_AS_IS, KERNEL_LAB_AS_DOUBLE) \
    KERNEL_LAB_FLOAT16_COMPARE(T, OP, const T &, int, KERNEL_LAB_AS_FLOAT, KERNEL_LAB_AS_FLOAT) \
    KERNEL_LAB_FLOAT16_COMPARE(T, OP, int, const T &, KERNEL_LAB_AS_FLOAT, KERNEL_LAB_AS_FLOAT)

#define KERNEL_LAB_FLOAT16(T, CUDA, RAW)                                                          \
    struct alignas(2) T {                                                                         \
        unsigned short x;                                                                         \
        /* The CUDA type whose buffers a kernel taking T is given. */                             \
        using kernel_lab_bits = CUDA;                                                             \
        struct from_bits_t {};                                                                    \
        static constexpr __host__ __device__ from_bits_t from_bits() { return from_bits_t(); }    \
        T() = default;                                                                            \
        constexpr __host__ __device__ T(unsigned short bits, from_bits_t) : x(bits) {}            \
        __host__ __device__ T(float v) : T(CUDA(v)) {}                                            \
        __host__ __device__ T(const CUDA &v) : x(static_cast<RAW>(v).x) {}                        \
        __host__ __device__ operator float() const { return static_cast<float>(CUDA(raw())); }    \
        __host__ __device__ operator CUDA() const { return CUDA(raw()); }                         \
        __host__ __device__ RAW raw() const {                                                     \
            RAW r;                                                                                \
            r.x = x;                                                                              \
            return r;                                                                             \
        }                                                                                         \
    };                                                                                            \
    __host__ __device__ inline T operator-(const T &a) { return T(-static_cast<float>(a)); }      \
    KERNEL_LAB_FLOAT16_OPERATOR(T, +)                                                             \
    KERNEL_LAB_FLOAT16_OPERATOR(T, -)                                                             \
    KERNEL_LAB_FLOAT16_OPERATOR(T, *)                                                             \
    KERNEL_LAB_FLOAT16_OPERATOR(T, /)                                                             \
    KERNEL_LAB_FLOAT16_COMPARISON(T, ==)                                                          \
    KERNEL_LAB_FLOAT16_COMPARISON(T, !=)                                                          \
    KERNEL_LAB_FLOAT16_COMPARISON(T, <)                                                           \
    KERNEL_LAB_FLOAT16_COMPARISON(T, <=)                                                          \
    KERNEL_LAB_FLOAT16_COMPARISON(T, >)                                                           \
    KERNEL_LAB_FLOAT16_COMPARISON(T, >=)
