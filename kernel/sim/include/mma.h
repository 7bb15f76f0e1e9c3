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
template <class Use, int M_, int N_, int K_> struct dims;
template <int M_, int N_, int K_> struct dims<matrix_a, M_, N_, K_> { static constexpr int rows = M_, cols = K_; };
template <int M_, int N_, int K_> struct dims<matrix_b, M_, N_, K_> { static constexpr int rows = K_, cols = N_; };
template <int M_, int N_, int K_> struct dims<accumulator, M_, N_, K_> { static constexpr int rows = M_, cols = N_; };
template <class T_> struct storage { using type = T_; };
template <> struct storage<precision::tf32> { using type = float; };
template <class T_> inline float widen(T_ v) { return (float)v; }
}  // namespace detail

template <class Use, int M_, int N_, int K_, class T_, class Layout = void>
struct fragment {
    static_assert((M_ == 16 && N_ == 16 && (K_ == 16 || K_ == 8)) || (M_ == 32 && N_ == 8 && K_ == 16) ||
                      (M_ == 8 && N_ == 32 && K_ == 16),
                  "unsupported WMMA shape");
    using element_type = T_;
    using storage_element_type = typename detail::storage<T_>::type;
    static constexpr int rows = detail::dims<Use, M_, N_, K_>::rows;
    static constexpr int cols = detail::dims<Use, M_, N_, K_>::cols;
    static constexpr int num_elements = rows * cols;
    storage_element_type x[num_elements];
};

template <class Use, int M_, int N_, int K_, class T_, class L_, class V_>
inline void fill_fragment(fragment<Use, M_, N_, K_, T_, L_> &f, const V_ &v) {
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

// The warp's arrival at a load or store, with what the guide asks of its arguments: every lane
// passes the same pointer, ldm and layout (the warp moves one tile; here each lane would move
// the tile its own arguments name, where a GPU takes one lane's), and the rows start on 16-byte
// boundaries (ldm a multiple of 16 bytes, the tile's address too): from sm_75 on, ptxas loads
// an FP16 tile from shared memory with ldmatrix (LDSM), whose rows are 16-byte pieces. The
// guide asks for a 32-byte aligned address; padded layouts with 16-byte rows run, so only 16
// is enforced.
struct TileArgs {
    const void *p;
    unsigned ldm;
    int layout;
};
struct FirstOdd {  // lane 0's ldm, and the first lane whose arguments differ (0: none)
    unsigned ldm, lane;
};
inline void arrive(const char *what, const void *p, unsigned ldm, int layout, size_t elem) {
    const FirstOdd odd = ::sim::warp_collective<FirstOdd>(what, TileArgs{p, ldm, layout},
                                                           [](const TileArgs *in, FirstOdd *out) {
        FirstOdd o{in[0].ldm, 0};
        for (unsigned l = 1; l < 32 && !o.lane; ++l)
            if (in[l].p != in[0].p || in[l].ldm != in[0].ldm || in[l].layout != in[0].layout) o.lane = l;
        for (unsigned l = 0; l < 32; ++l) out[l] = o;
    });
    if (odd.lane)
        ::sim::fail("%s: the lanes of the warp pass different tiles: lane %u another pointer, ldm or layout than "
                    "lane 0 (ldm %u); every lane must pass the same (a GPU moves one tile for the warp): compute "
                    "them from warp-uniform values (the warp's index, not the lane's)",
                    what, odd.lane, odd.ldm);
    if ((size_t)ldm * elem % 16) {
        const bool shared = ::sim::is_shared(p, 1);
        ::sim::fail("%s: ldm %u elements of %zu bytes is %zu bytes between rows, not a multiple of 16 (the WMMA API "
                    "asks for a multiple of 8 __half or 4 float elements; a GPU may load each row in 16-byte "
                    "pieces, as ldmatrix does an FP16 tile in shared memory): %s",
                    what, ldm, elem, (size_t)ldm * elem,
                    shared ? "pad the rows to a multiple of 16 bytes"
                           : "the tile is not in shared memory, so ldm is the length of the matrix's rows: "
                             "the kernel needs that length to be a multiple of 16 bytes, or to stage the tile "
                             "through shared memory with padded rows");
    }
    if ((uintptr_t)p % 16) {
        char where[200] = "global memory";
        size_t cell;
        ::sim::Worker &w = ::sim::worker();
        if (::sim::race_cell(w, p, cell)) ::sim::describe_shared(w, cell, where, sizeof where);
        ::sim::fail("%s: the tile's address (%s) lies %zu bytes past a 16-byte boundary (the WMMA API asks for "
                    "32-byte aligned tiles): start the tile on an aligned row and column",
                    what, where, (size_t)((uintptr_t)p % 16));
    }
}
}  // namespace detail

// matrix_a / matrix_b: the layout is part of the type.
// Loads and stores: every lane moves the whole tile, but the warp's first lane alone counts
// the traffic and marks the race checker's record (a GPU moves the tile once, split among the
// lanes): uninstrumented, with the lines or columns reported one by one.
template <class P_>
inline void warp_tile_access(const P_ *p, unsigned ldm, int lines, int line_len, bool write) {
    for (int i = 0; i < lines; ++i) {
        if (write) SIM_WARP_WRITE(p + (size_t)i * ldm, line_len * sizeof(P_));
        else SIM_WARP_READ(p + (size_t)i * ldm, line_len * sizeof(P_));
    }
}

template <class Use, int M_, int N_, int K_, class T_, class L_, class P_>
SIM_UNINSTRUMENTED inline void load_matrix_sync(fragment<Use, M_, N_, K_, T_, L_> &f, const P_ *p, unsigned ldm,
                                                const char *file = __builtin_FILE(),
                                                unsigned line = __builtin_LINE()) {
    const ::sim::SourceSite site(file, line);
    static_assert(!std::is_same_v<L_, void>, "an operand fragment needs row_major or col_major");
    using F_ = fragment<Use, M_, N_, K_, T_, L_>;
    constexpr bool row = std::is_same_v<L_, row_major>;
    detail::arrive("wmma::load_matrix_sync", p, ldm, row, sizeof(P_));
    for (int r = 0; r < F_::rows; ++r)
        for (int c = 0; c < F_::cols; ++c)
            f.x[r * F_::cols + c] = row ? p[(size_t)r * ldm + c] : p[(size_t)c * ldm + r];
    warp_tile_access(p, ldm, row ? F_::rows : F_::cols, row ? F_::cols : F_::rows, false);
    detail::converge();
}

// The accumulator: the layout is an argument.
template <int M_, int N_, int K_, class T_, class P_>
SIM_UNINSTRUMENTED inline void load_matrix_sync(fragment<accumulator, M_, N_, K_, T_> &f, const P_ *p, unsigned ldm,
                                                layout_t l, const char *file = __builtin_FILE(),
                                                unsigned line = __builtin_LINE()) {
    const ::sim::SourceSite site(file, line);
    detail::arrive("wmma::load_matrix_sync", p, ldm, l, sizeof(P_));
    for (int r = 0; r < M_; ++r)
        for (int c = 0; c < N_; ++c)
            f.x[r * N_ + c] = l == mem_row_major ? p[(size_t)r * ldm + c] : p[(size_t)c * ldm + r];
    warp_tile_access(p, ldm, l == mem_row_major ? M_ : N_, l == mem_row_major ? N_ : M_, false);
    detail::converge();
}

template <int M_, int N_, int K_, class T_, class P_>
SIM_UNINSTRUMENTED inline void store_matrix_sync(P_ *p, const fragment<accumulator, M_, N_, K_, T_> &f, unsigned ldm,
                                                 layout_t l, const char *file = __builtin_FILE(),
                                                 unsigned line = __builtin_LINE()) {
    const ::sim::SourceSite site(file, line);
    detail::arrive("wmma::store_matrix_sync", p, ldm, l, sizeof(P_));
    for (int r = 0; r < M_; ++r)
        for (int c = 0; c < N_; ++c) {
            P_ v = f.x[r * N_ + c];
            if (l == mem_row_major) p[(size_t)r * ldm + c] = v;
            else p[(size_t)c * ldm + r] = v;
        }
    warp_tile_access(p, ldm, l == mem_row_major ? M_ : N_, l == mem_row_major ? N_ : M_, true);
    detail::converge();
}

// D = A * B + C with fp32 accumulation; TF32 operands are rounded to TF32 first.
// Arithmetic on fragments only (registers on a GPU): never traced. Every lane holds the whole
// tiles, so the first of the warp's lanes to get here computes the product and the others,
// finding the same input bytes in the warp's memo, copy it: one product per warp, not 32.
template <int M_, int N_, int K_, class TA, class LA, class TB, class LB, class TC, class TD>
SIM_UNINSTRUMENTED inline void mma_sync(fragment<accumulator, M_, N_, K_, TD> &d, const fragment<matrix_a, M_, N_, K_, TA, LA> &a,
                     const fragment<matrix_b, M_, N_, K_, TB, LB> &b, const fragment<accumulator, M_, N_, K_, TC> &c) {
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
    float out[M_ * N_];
    for (int i = 0; i < M_; ++i)
        for (int j = 0; j < N_; ++j) {
            float acc = detail::widen(c.x[i * N_ + j]);
            for (int k = 0; k < K_; ++k) {
                float av = detail::widen(a.x[i * K_ + k]), bv = detail::widen(b.x[k * N_ + j]);
                if constexpr (tf32) {
                    av = __float_to_tf32(av);
                    bv = __float_to_tf32(bv);
                }
                acc += av * bv;
            }
            out[i * N_ + j] = acc;
        }
    if (memo) {  // before d is written: d may be c
        unsigned char *m = memo;
        memcpy(m, &tag, sizeof tag);
        memcpy(m += sizeof tag, a.x, ka);
        memcpy(m += ka, b.x, kb);
        memcpy(m += kb, c.x, kc);
        for (int i = 0; i < M_ * N_; ++i) d.x[i] = out[i];
        memcpy(m + kc, d.x, kd);
        return;
    }
    for (int i = 0; i < M_ * N_; ++i) d.x[i] = out[i];
}

}  // namespace wmma
}  // namespace nvcuda
