// mma.h (simulator stand-in): nvcuda::wmma on whole tiles.
//
// Every lane holds the whole tile (so num_elements is M*K, K*N or M*N, not the GPU's per-lane
// share) and computes the whole product. Element-wise loops over x[] stay correct; code that
// depends on which lane holds which element is not portable CUDA and is not modelled.
// x[] holds the tile row-major whatever the fragment's layout.
#pragma once

#include "cuda_fp16.h"
#include "cuda_bf16.h"

namespace nvcuda {
namespace wmma {

struct matrix_a {};
struct matrix_b {};
struct accumulator {};
struct row_major {};
struct col_major {};
enum layout_t { mem_row_major, mem_col_major };
namespace precision {
struct tf32 {};
}  // namespace precision

// TF32: the fp32 mantissa rounded to 10 bits, to nearest with ties away from zero
// (cvt.rna.tf32.f32, what __float_to_tf32 and the tensor cores' inputs use).
inline float __float_to_tf32(float f) {
    unsigned u;
    memcpy(&u, &f, 4);
    if ((u & 0x7F800000u) != 0x7F800000u) u = (u + 0x1000u) & ~0x1FFFu;
    memcpy(&f, &u, 4);
    return f;
}

namespace detail {
template <class Use, int M, int N, int K> struct dims;
template <int M, int N, int K> struct dims<matrix_a, M, N, K> { static constexpr int rows = M, cols = K; };
template <int M, int N, int K> struct dims<matrix_b, M, N, K> { static constexpr int rows = K, cols = N; };
template <int M, int N, int K> struct dims<accumulator, M, N, K> { static constexpr int rows = M, cols = N; };
template <class T> struct storage { using type = T; };
template <> struct storage<precision::tf32> { using type = float; };
template <class T> inline float widen(T v) { return (float)v; }
}  // namespace detail

template <class Use, int M, int N, int K, class T, class Layout = void>
struct fragment {
    static_assert((M == 16 && N == 16 && (K == 16 || K == 8)) || (M == 32 && N == 8 && K == 16) ||
                      (M == 8 && N == 32 && K == 16),
                  "unsupported WMMA shape");
    using element_type = T;
    using storage_element_type = typename detail::storage<T>::type;
    static constexpr int rows = detail::dims<Use, M, N, K>::rows;
    static constexpr int cols = detail::dims<Use, M, N, K>::cols;
    static constexpr int num_elements = rows * cols;
    storage_element_type x[num_elements];
};

template <class Use, int M, int N, int K, class T, class L, class V>
inline void fill_fragment(fragment<Use, M, N, K, T, L> &f, const V &v) {
    for (int i = 0; i < f.num_elements; ++i) f.x[i] = v;
}

// load_matrix_sync and store_matrix_sync wait until every lane of the warp has arrived, then
// move the tile, all lanes together (CUDA C++ Programming Guide, WMMA). Here every lane moves
// the whole tile, one lane after another, so the warp meets again after the move too: no lane
// stores before every lane has loaded (C read, scaled by beta and written back in place).
namespace detail {
inline void converge() {
    sim::Fiber &f = sim::fiber();
    f.parity ^= 1;
    sim::warp_wait(0xFFFFFFFFu);
}
}  // namespace detail

// matrix_a / matrix_b: the layout is part of the type.
// Loads and stores: every lane moves the whole tile, but the warp's first lane alone counts
// the traffic and marks the race checker's record (a GPU moves the tile once, split among the
// lanes): uninstrumented, with the lines or columns reported one by one.
template <class P>
inline void warp_tile_access(const P *p, unsigned ldm, int lines, int line_len, bool write) {
    for (int i = 0; i < lines; ++i) {
        if (write) SIM_WARP_WRITE(p + (size_t)i * ldm, line_len * sizeof(P));
        else SIM_WARP_READ(p + (size_t)i * ldm, line_len * sizeof(P));
    }
}

template <class Use, int M, int N, int K, class T, class L, class P>
SIM_UNINSTRUMENTED inline void load_matrix_sync(fragment<Use, M, N, K, T, L> &f, const P *p, unsigned ldm,
                                                const char *file = __builtin_FILE(),
                                                unsigned line = __builtin_LINE()) {
    const ::sim::SourceSite site(file, line);
    static_assert(!std::is_same_v<L, void>, "an operand fragment needs row_major or col_major");
    using F = fragment<Use, M, N, K, T, L>;
    constexpr bool row = std::is_same_v<L, row_major>;
    detail::converge();
    for (int r = 0; r < F::rows; ++r)
        for (int c = 0; c < F::cols; ++c)
            f.x[r * F::cols + c] = row ? p[(size_t)r * ldm + c] : p[(size_t)c * ldm + r];
    warp_tile_access(p, ldm, row ? F::rows : F::cols, row ? F::cols : F::rows, false);
    detail::converge();
}

// The accumulator: the layout is an argument.
template <int M, int N, int K, class T, class P>
SIM_UNINSTRUMENTED inline void load_matrix_sync(fragment<accumulator, M, N, K, T> &f, const P *p, unsigned ldm,
                                                layout_t l, const char *file = __builtin_FILE(),
                                                unsigned line = __builtin_LINE()) {
    const ::sim::SourceSite site(file, line);
    detail::converge();
    for (int r = 0; r < M; ++r)
        for (int c = 0; c < N; ++c)
            f.x[r * N + c] = l == mem_row_major ? p[(size_t)r * ldm + c] : p[(size_t)c * ldm + r];
    warp_tile_access(p, ldm, l == mem_row_major ? M : N, l == mem_row_major ? N : M, false);
    detail::converge();
}

template <int M, int N, int K, class T, class P>
SIM_UNINSTRUMENTED inline void store_matrix_sync(P *p, const fragment<accumulator, M, N, K, T> &f, unsigned ldm,
                                                 layout_t l, const char *file = __builtin_FILE(),
                                                 unsigned line = __builtin_LINE()) {
    const ::sim::SourceSite site(file, line);
    detail::converge();
    for (int r = 0; r < M; ++r)
        for (int c = 0; c < N; ++c) {
            P v = f.x[r * N + c];
            if (l == mem_row_major) p[(size_t)r * ldm + c] = v;
            else p[(size_t)c * ldm + r] = v;
        }
    warp_tile_access(p, ldm, l == mem_row_major ? M : N, l == mem_row_major ? N : M, true);
    detail::converge();
}

// D = A * B + C with fp32 accumulation; TF32 operands are rounded to TF32 first.
// Arithmetic on fragments only (registers on a GPU): never traced. Every lane holds the whole
// tiles, so the first of the warp's lanes to get here computes the product and the others,
// finding the same input bytes in the warp's memo, copy it: one product per warp, not 32.
template <int M, int N, int K, class TA, class LA, class TB, class LB, class TC, class TD>
SIM_UNINSTRUMENTED inline void mma_sync(fragment<accumulator, M, N, K, TD> &d, const fragment<matrix_a, M, N, K, TA, LA> &a,
                     const fragment<matrix_b, M, N, K, TB, LB> &b, const fragment<accumulator, M, N, K, TC> &c) {
    constexpr bool tf32 = std::is_same_v<TA, precision::tf32>;
    constexpr size_t ka = sizeof a.x, kb = sizeof b.x, kc = sizeof c.x, kd = sizeof d.x;
    static const char kind = 0;  // tells this instantiation's memo entries from others'
    const void *tag = &kind;
    unsigned char *memo = sim::warp_memo(sizeof tag + ka + kb + kc + kd);
    if (memo) {
        unsigned char *m = memo;
        bool same = memcmp(m, &tag, sizeof tag) == 0 && memcmp(m += sizeof tag, a.x, ka) == 0 &&
                    memcmp(m += ka, b.x, kb) == 0 && memcmp(m += kb, c.x, kc) == 0;
        if (same) {
            memcpy(d.x, m + kc, kd);
            return;
        }
    }
    float out[M * N];
    for (int i = 0; i < M; ++i)
        for (int j = 0; j < N; ++j) {
            float acc = detail::widen(c.x[i * N + j]);
            for (int k = 0; k < K; ++k) {
                float av = detail::widen(a.x[i * K + k]), bv = detail::widen(b.x[k * N + j]);
                if constexpr (tf32) {
                    av = __float_to_tf32(av);
                    bv = __float_to_tf32(bv);
                }
                acc += av * bv;
            }
            out[i * N + j] = acc;
        }
    if (memo) {  // before d is written: d may be c
        unsigned char *m = memo;
        memcpy(m, &tag, sizeof tag);
        memcpy(m += sizeof tag, a.x, ka);
        memcpy(m += ka, b.x, kb);
        memcpy(m += kb, c.x, kc);
        for (int i = 0; i < M * N; ++i) d.x[i] = out[i];
        memcpy(m + kc, d.x, kd);
        return;
    }
    for (int i = 0; i < M * N; ++i) d.x[i] = out[i];
}

}  // namespace wmma
}  // namespace nvcuda
