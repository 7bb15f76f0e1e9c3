// Included before a user's kernel file (the lab adds the line; it is not in the file). Names
// that CUDA code takes for granted because nvcc's host headers bring them in: the <cstdint>
// types, std::min and std::max, uint and friends, INFINITY and NAN, <math.h>'s M_PI and
// M_SQRT2, <cmath>'s std::exp (nvcc's cuda_runtime.h includes both) and CUDART_VERSION.
// NVRTC has no host headers; the <cstdint>, <algorithm>, <math.h> and <cmath> found here are
// the lab's stand-ins (the real ones in the simulator, which is a host compiler).
#pragma once
#include <cstdint>
#include <algorithm>
#include <math.h>
// nvcc's cuda_runtime.h includes <cmath> too: `std::exp` needs no include of its own.
#include <cmath>
// The runtime's version, which cuda_runtime_api.h defines for every file nvcc compiles: the
// compiler's (NVRTC's, or the toolkit the simulator's headers follow).
#ifndef CUDART_VERSION
#define CUDART_VERSION (__CUDACC_VER_MAJOR__ * 1000 + __CUDACC_VER_MINOR__ * 10)
#endif
typedef unsigned int uint;
typedef unsigned short ushort;
typedef unsigned long ulong;
#ifndef KERNEL_LAB_SIM
// gcc's `__extension__` (before an anonymous struct or union in a C header shared with CUDA),
// which nvcc's host compiler and the simulator's take and NVRTC does not.
#define __extension__
// cuda.h's tensor map (128 opaque bytes, 64-byte aligned), which a TMA kernel takes as a
// `const __grid_constant__ CUtensorMap` parameter; NVRTC has no cuda.h, and its guard keeps
// a file's own copy of this definition out. (The simulator's headers define their own.)
#ifndef __cuda_cuda_h__
#define __cuda_cuda_h__
typedef struct alignas(64) CUtensorMap_st {
    unsigned long long opaque[16];
} CUtensorMap;
#endif

// Whether a kernel with parameters P... can be called with the lab's arguments A...: an
// unevaluated call, so a kernel whose parameter list does not take them fails to compile at
// the lab's line, naming both lists, and nothing is generated.
namespace kernel_lab {
// `take` is no template of its own: a function template given P... explicitly would deduce
// more parameters from extra arguments, and accept a list longer than the kernel's.
template <class... P> struct params {
    static __host__ __device__ void take(P...);
};
template <class... P> __host__ __device__ params<P...> params_of(void (*)(P...));
template <class... P, class... A>
__host__ __device__ auto accepts(params<P...>, A... a) -> decltype(params<P...>::take(a...), true);
} // namespace kernel_lab
#endif

// `abs` in a static_assert's condition: nvcc's front end folds the host's abs() in a constant
// expression, where NVRTC's abs() is a device function, no constexpr. The lab reads such an
// `abs(` as this function (the file is otherwise compiled as written).
namespace kernel_lab {
template <class T> __host__ __device__ constexpr T constant_abs(T v) { return v < 0 ? -v : v; }
} // namespace kernel_lab

// A zero-filled workspace an args= list passes (`zeros(BYTES)`): the lab allocates bytes, not
// elements of a type, so it hands the kernel whichever pointer type its parameter declares.
namespace kernel_lab {
struct workspace {
    void *p;
    template <class T> __host__ __device__ operator T *() const { return static_cast<T *>(p); }
};
} // namespace kernel_lab

// A buffer of elements E, as the lab passes it to a kernel's pointer parameter: it converts
// to what a pointer to E converts to (`const E *`, `void *`) and, as host code's
// reinterpret_cast gives, to a pointer to a vector of E (`float4 *` for floats, `half2 *` for
// halves, `int4 *` for ints), to an FP8 element's storage (`__nv_fp8_storage_t *`) or to a
// type of the same bits (`c10::Half *` for halves). Nothing else: a buffer of floats taken as
// `half *` is the wrong buffer.
namespace kernel_lab {
template <class T> struct bare { using type = T; };
template <class T> struct bare<const T> { using type = T; };
template <class T> struct bare<volatile T> { using type = T; };
template <class T> struct bare<const volatile T> { using type = T; };
template <class E, class V, class = void> struct holds { static constexpr bool value = false; };
template <class E> struct holds<E, E, void> { static constexpr bool value = true; };
template <class E> struct holds<E, void, void> { static constexpr bool value = true; };
template <class E, class V> struct holds<E, V, decltype(void(static_cast<E V::*>(&V::x)))> {
    static constexpr bool value = true;
};
template <class E, class V> struct holds<E, V, decltype(void(static_cast<V E::*>(&E::__x)))> {
    static constexpr bool value = true;
};
// A type that declares itself the same bits as E (PyTorch's c10::Half for __half).
template <class A, class B> struct same_type {};
template <class A> struct same_type<A, A> { using type = void; };
template <class E, class V> struct holds<E, V, typename same_type<E, typename V::kernel_lab_bits>::type> {
    static constexpr bool value = true;
};
template <bool> struct only_if {};
template <> struct only_if<true> {
    using type = int;
};
template <class E> struct elements {
    E *p;
    template <class T, typename only_if<holds<E, typename bare<T>::type>::value>::type = 0>
    __host__ __device__ operator T *() const { return reinterpret_cast<T *>(p); }
};
} // namespace kernel_lab

// A struct a kernel takes by value (a `Params` of pointers and sizes), which an args= list
// gives as `{A, B, M, ...}`: the wrapper builds it from its fields in order, as aggregate
// initialization does. `loose` lets a number take its field's type as a call's argument
// would (an int into a size_t), where braces would refuse the narrowing; a pointer converts
// only as a pointer argument would (float * to const float *, not to half *).
namespace kernel_lab {
template <class T> __host__ __device__ T value_of();
template <class T> struct loose {
    T v;
    template <class U, class = decltype(static_cast<U>(value_of<T>()))>
    __host__ __device__ operator U() const {
        return static_cast<U>(v);
    }
};
template <class T> struct loose<T *> {
    T *v;
    __host__ __device__ operator T *() const { return v; }
};
// For the check that the kernel takes the list: converts to any struct these fields
// initialize, in order, every one of them (a field left out would be zero).
struct any_field {
    template <class U> __host__ __device__ operator U() const;
};
struct yes {
    char c[2];
};
// (In default template arguments: NVRTC's front end fails `U{F{}...}` in a trailing return
// type, and a sizeof in a conversion's own template arguments.)
template <class U, class... F, class = decltype(U{F{}...})> __host__ __device__ yes initializes(int);
template <class U, class... F> __host__ __device__ char initializes(...);
template <class U, class... F> struct built_from {
    static constexpr bool value =
        sizeof(initializes<U, F...>(0)) == 2 && sizeof(initializes<U, F..., any_field>(0)) == 1;
};
template <class... F> struct fields {
    template <class U, class = typename only_if<built_from<U, F...>::value>::type>
    __host__ __device__ operator U() const;
};
} // namespace kernel_lab
