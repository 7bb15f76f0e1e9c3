// sim_asm.h: what users' inline PTX becomes in the simulator. The host's front end
// (kernel/src/sim/inline_asm.rs) rewrites each recognised `asm` statement into calls of these
// functions, on operands held as PTX registers are: bit patterns of 16, 32 or 64 bits. The
// tensor-core instructions run the emulation lab/ptx.h runs (sim_mma.h), Hopper's mbarrier,
// TMA and wgmma that of lab/hopper.h (sim_hopper.h), cp.async the runtime's deferred copies;
// ld, st, atom and red access memory as C++ does, so the bank model and both race checkers see
// them. Shared-memory operands are addresses in the shared
// window (cvta.to.shared, __cvta_generic_to_shared), as on a GPU.
#pragma once

#include <cmath>
#include <initializer_list>
#include <limits>
#include <type_traits>

#include "sim_hopper.h"
#include "sim_mma.h"

namespace sim {
namespace inline_ptx {

// A statement the simulator does not run, reached: the launch fails with why, and the row is
// reported as not simulated (kernel/src/sim/inline_asm.rs, refused_at_run).
[[noreturn]] inline void not_simulated(const char *why) { ::sim::fail("not simulated: %s", why); }

// ---- Operands in and out: C++ values to register bits by their constraint ----

// By value: g++ will not bind a `const T &` to a `__restrict__` pointer's element address in a
// template (`"l"(&A[i])` with `const float *__restrict__ A`), which NVRTC compiles.
template <class B_, class T_>
inline B_ bits_of(T_ v, const char *constraint) {
    if constexpr (std::is_pointer_v<T_>) {
        static_assert(sizeof(B_) == 8, "a pointer in an inline-asm operand needs the 64-bit \"l\" constraint");
        return (B_)(uintptr_t)v;
    } else if constexpr (std::is_integral_v<T_> || std::is_enum_v<T_>) {
        return (B_)v;
    } else if constexpr (std::is_floating_point_v<T_>) {
        // "r"/"l"/"h" with a float: the value's bits (as a register move would give them).
        if constexpr (sizeof(T_) == sizeof(B_)) {
            B_ b;
            memcpy(&b, &v, sizeof b);
            return b;
        } else {
            static_assert(sizeof(T_) == sizeof(B_), "an operand's size must match its constraint");
            return 0;
        }
    } else {
        static_assert(std::is_trivially_copyable_v<T_> && sizeof(T_) == sizeof(B_),
                      "an operand's size must match its constraint (\"h\" 16, \"r\"/\"f\" 32, \"l\"/\"d\" 64 bits)");
        B_ b;
        memcpy(&b, &v, sizeof b);
        (void)constraint;
        return b;
    }
}

// "f" and "d": the value converted to float or double, then its bits.
template <class T_>
inline uint32_t f32_bits(const T_ &v) {
    float f = (float)v;
    uint32_t b;
    memcpy(&b, &f, 4);
    return b;
}
template <class T_>
inline uint64_t f64_bits(const T_ &v) {
    double f = (double)v;
    uint64_t b;
    memcpy(&b, &f, 8);
    return b;
}

// A float register's value (setp on .f32 and .f64).
inline float f32_of(uint32_t b) {
    float f;
    memcpy(&f, &b, 4);
    return f;
}
inline double f64_of(uint64_t b) {
    double f;
    memcpy(&f, &b, 8);
    return f;
}

// Writes register bits back to an output operand of integer constraint ("h", "r", "l").
template <class T_, class B_>
inline void set_bits(T_ &out, B_ b) {
    if constexpr (std::is_integral_v<T_> || std::is_enum_v<T_>) {
        out = (T_)b;
    } else if constexpr (std::is_pointer_v<T_>) {
        out = (T_)(uintptr_t)b;
    } else {
        static_assert(std::is_trivially_copyable_v<T_> && sizeof(T_) == sizeof(B_),
                      "an output operand's size must match its constraint");
        memcpy(&out, &b, sizeof b);
    }
}
// ... of constraint "f" (a float register) and "d".
template <class T_>
inline void set_f32(T_ &out, uint32_t b) {
    float f;
    memcpy(&f, &b, 4);
    out = (T_)f;
}
template <class T_>
inline void set_f64(T_ &out, uint64_t b) {
    double f;
    memcpy(&f, &b, 8);
    out = (T_)f;
}

// ---- Special registers ----
inline uint32_t laneid() { return fiber().lane; }
inline uint32_t warpid() { return fiber().warp; }
inline uint32_t lanemask(int cmp) {  // 0 eq, 1 lt, 2 le, 3 gt, 4 ge
    uint32_t l = fiber().lane, eq = 1u << l, lt = eq - 1;
    switch (cmp) {
        case 0: return eq;
        case 1: return lt;
        case 2: return lt | eq;
        case 3: return ~(lt | eq);
        default: return ~lt;
    }
}

// ---- Shared-window addresses ----

inline uint64_t cvta_to_shared(uint64_t generic) { return shared_addr_of((const void *)(uintptr_t)generic); }
inline uint64_t cvta_shared(uint64_t addr) { return (uint64_t)(uintptr_t)shared_ptr(addr, 0); }

inline void *shared_operand(uint64_t addr, size_t bytes, const char *what) {
    void *p = shared_ptr(addr, bytes);
    if (p) return p;
    char note[256];
    shared_address_note(addr, bytes, note, sizeof note);
    fail("%s: shared address 0x%llx (%zu bytes) is not in this block's shared memory: %s", what,
         (unsigned long long)addr, bytes, note);
}

// ---- mma.sync ----

// m16n8k16 with f16 or bf16 operands; C and D each f32 (4 registers) or f16 (2 registers).
inline void mma_m16n8k16(bool bf16, bool d_f16, bool c_f16, uint32_t *d, const uint32_t *a, const uint32_t *b,
                         const uint32_t *c) {
    float cf[4], df[4];
    if (c_f16) {
        const unsigned h[2] = {c[0], c[1]};
        mma_emu::f16x2_to_f32(h, cf);
    } else {
        memcpy(cf, c, sizeof cf);
    }
    const unsigned av[4] = {a[0], a[1], a[2], a[3]}, bv[2] = {b[0], b[1]};
    if (bf16) mma_emu::mma_warp<mma_emu::Elem::bf16>("mma.sync.m16n8k16.bf16", df, av, bv, cf);
    else mma_emu::mma_warp<mma_emu::Elem::f16>("mma.sync.m16n8k16.f16", df, av, bv, cf);
    if (d_f16) {
        unsigned h[2];
        mma_emu::f32_to_f16x2(df, h);
        d[0] = h[0];
        d[1] = h[1];
    } else {
        memcpy(d, df, sizeof df);
    }
}

inline void mma_m16n8k32_fp8(bool a_e5m2, bool b_e5m2, uint32_t *d, const uint32_t *a, const uint32_t *b,
                             const uint32_t *c) {
    float cf[4], df[4];
    memcpy(cf, c, sizeof cf);
    const unsigned av[4] = {a[0], a[1], a[2], a[3]}, bv[2] = {b[0], b[1]};
    if (a_e5m2 && b_e5m2) mma_emu::mma_fp8_warp<true, true>(df, av, bv, cf);
    else if (a_e5m2) mma_emu::mma_fp8_warp<true, false>(df, av, bv, cf);
    else if (b_e5m2) mma_emu::mma_fp8_warp<false, true>(df, av, bv, cf);
    else mma_emu::mma_fp8_warp<false, false>(df, av, bv, cf);
    memcpy(d, df, sizeof df);
}

// The integer mma (.s32 accumulators, .s8/.u8 operands): `a_u`/`b_u` unsigned operands,
// `sat` .satfinite. m16n8k16 comes as m16n8k32 with the other half of the registers zero.
inline void mma_m16n8k32_i8(bool a_u, bool b_u, bool sat, uint32_t *d, const uint32_t *a, const uint32_t *b,
                            const uint32_t *c) {
    int ci[4], di[4];
    memcpy(ci, c, sizeof ci);
    const unsigned av[4] = {a[0], a[1], a[2], a[3]}, bv[2] = {b[0], b[1]};
    const int code = (a_u ? 4 : 0) | (b_u ? 2 : 0) | (sat ? 1 : 0);
    switch (code) {
        case 0: mma_emu::mma_i8_warp<false, false, false>(di, av, bv, ci); break;
        case 1: mma_emu::mma_i8_warp<false, false, true>(di, av, bv, ci); break;
        case 2: mma_emu::mma_i8_warp<false, true, false>(di, av, bv, ci); break;
        case 3: mma_emu::mma_i8_warp<false, true, true>(di, av, bv, ci); break;
        case 4: mma_emu::mma_i8_warp<true, false, false>(di, av, bv, ci); break;
        case 5: mma_emu::mma_i8_warp<true, false, true>(di, av, bv, ci); break;
        case 6: mma_emu::mma_i8_warp<true, true, false>(di, av, bv, ci); break;
        default: mma_emu::mma_i8_warp<true, true, true>(di, av, bv, ci); break;
    }
    memcpy(d, di, sizeof di);
}

inline void mma_m16n8k8_tf32(uint32_t *d, const uint32_t *a, const uint32_t *b, const uint32_t *c) {
    float cf[4], df[4];
    memcpy(cf, c, sizeof cf);
    const unsigned av[4] = {a[0], a[1], a[2], a[3]}, bv[2] = {b[0], b[1]};
    mma_emu::mma_warp<mma_emu::Elem::tf32>("mma.sync.m16n8k8.tf32", df, av, bv, cf);
    memcpy(d, df, sizeof df);
}

// ---- wmma m16n16k16 through inline PTX ----
// PTX leaves the layout of a wmma fragment in registers unspecified: the simulator gives them
// that of two mma.m16n8k16 (A whole; B, C and D one n8 half after the other), and runs
// wmma.mma as those two mma.sync. An f16 A or B takes eight registers, the last four
// a copy of the first (Volta's layout held each element twice). `shared`: the address is a
// shared-window one (.shared); otherwise generic (or .global).

// Element (r, c) of a 16x16 matrix of leading dimension `ld`, row- or column-major.
inline size_t wmma_index(int r, int c, unsigned ld, bool col) { return col ? (size_t)c * ld + r : (size_t)r * ld + c; }

inline unsigned char *wmma_base(uint64_t addr, bool shared, unsigned ld, size_t elem, const char *what) {
    if (!shared) return (unsigned char *)(uintptr_t)addr;
    return (unsigned char *)shared_operand(addr, (15 * (size_t)ld + 16) * elem, what);
}

// The (row, column) pairs of 16-bit register `k` of this lane: A as (m, k), B as (k, n), a
// 16-bit C or D as (m, n); each register holds the pair's first element in its low half.
inline void wmma_pair(char m, int k, int *r, int *c) {
    const unsigned lane = fiber().lane, g = lane / 4, t = lane % 4;
    k %= 4;
    if (m == 'b') {  // k rows 2t (+8 for odd k), n column g (+8 from the third register)
        r[0] = 2 * t + (k % 2) * 8, r[1] = r[0] + 1;
        c[0] = c[1] = g + (k / 2) * 8;
    } else {  // rows g (+8 for odd k), columns 2t (+8 from the third register)
        r[0] = r[1] = g + (k % 2) * 8;
        c[0] = 2 * t + (k / 2) * 8, c[1] = c[0] + 1;
    }
}

// wmma.load.a / .b of 16-bit elements, or .c of f16: `n` registers.
inline void wmma_load16(char m, uint32_t *d, int n, uint64_t addr, unsigned ld, bool col, bool shared,
                        const char *file = __builtin_FILE(), unsigned line = __builtin_LINE()) {
    const SourceSite site(file, line);
    const uint16_t *p = (const uint16_t *)wmma_base(addr, shared, ld, 2, "wmma.load");
    for (int k = 0; k < n; ++k) {
        int r[2], c[2];
        wmma_pair(m, k, r, c);
        d[k] = (uint32_t)p[wmma_index(r[0], c[0], ld, col)] | (uint32_t)p[wmma_index(r[1], c[1], ld, col)] << 16;
    }
}

// wmma.store.d of f16: 4 registers.
inline void wmma_store16(uint64_t addr, const uint32_t *s, unsigned ld, bool col, bool shared,
                         const char *file = __builtin_FILE(), unsigned line = __builtin_LINE()) {
    const SourceSite site(file, line);
    uint16_t *p = (uint16_t *)wmma_base(addr, shared, ld, 2, "wmma.store");
    for (int k = 0; k < 4; ++k) {
        int r[2], c[2];
        wmma_pair('c', k, r, c);
        p[wmma_index(r[0], c[0], ld, col)] = (uint16_t)s[k];
        p[wmma_index(r[1], c[1], ld, col)] = (uint16_t)(s[k] >> 16);
    }
}

// Element k of an f32 C or D (8 registers): as mma.m16n8k16's four, for columns 0-7 then 8-15.
inline void wmma_f32_at(int k, int *r, int *c) {
    const unsigned lane = fiber().lane, g = lane / 4, t = lane % 4;
    *r = g + ((k / 2) % 2) * 8;
    *c = 2 * t + k % 2 + (k / 4) * 8;
}

inline void wmma_load_f32(uint32_t *d, uint64_t addr, unsigned ld, bool col, bool shared,
                          const char *file = __builtin_FILE(), unsigned line = __builtin_LINE()) {
    const SourceSite site(file, line);
    const uint32_t *p = (const uint32_t *)wmma_base(addr, shared, ld, 4, "wmma.load.c");
    for (int k = 0; k < 8; ++k) {
        int r, c;
        wmma_f32_at(k, &r, &c);
        d[k] = p[wmma_index(r, c, ld, col)];
    }
}

inline void wmma_store_f32(uint64_t addr, const uint32_t *s, unsigned ld, bool col, bool shared,
                           const char *file = __builtin_FILE(), unsigned line = __builtin_LINE()) {
    const SourceSite site(file, line);
    uint32_t *p = (uint32_t *)wmma_base(addr, shared, ld, 4, "wmma.store.d");
    for (int k = 0; k < 8; ++k) {
        int r, c;
        wmma_f32_at(k, &r, &c);
        p[wmma_index(r, c, ld, col)] = s[k];
    }
}

// wmma.mma m16n16k16: two mma.m16n8k16 over the n halves. `d_f16`/`c_f16`: 4 registers of
// f16 pairs, else 8 of f32.
inline void wmma_mma(bool bf16, bool d_f16, bool c_f16, uint32_t *d, const uint32_t *a, const uint32_t *b,
                     const uint32_t *c) {
    const int cn = c_f16 ? 2 : 4, dn = d_f16 ? 2 : 4;
    mma_m16n8k16(bf16, d_f16, c_f16, d, a, b, c);
    mma_m16n8k16(bf16, d_f16, c_f16, d + dn, a, b + 2, c + cn);
}

// ---- ldmatrix and stmatrix: each lane's row address is a shared-window address ----

template <int N_, bool Trans>
inline void ldmatrix(uint32_t *d, uint64_t addr, const char *file = __builtin_FILE(),
                     unsigned line = __builtin_LINE()) {
    const SourceSite site(file, line);
    const unsigned lane = fiber().lane;
    uintptr_t row = 0;  // lanes past the last matrix give no address
    if ((int)lane < 8 * N_) {
        if (addr % 16) fail("ldmatrix row address 0x%llx (lane %u) is not 16-byte aligned", (unsigned long long)addr, lane);
        row = (uintptr_t)shared_operand(addr, 16, "ldmatrix");
    }
    unsigned r[N_];
    mma_emu::ldmatrix<N_, Trans>(r, row);
    for (int i = 0; i < N_; ++i) d[i] = r[i];
}

template <int N_, bool Trans>
inline void stmatrix(uint64_t addr, const uint32_t *s, const char *file = __builtin_FILE(),
                     unsigned line = __builtin_LINE()) {
    const SourceSite site(file, line);
    const unsigned lane = fiber().lane;
    uintptr_t row = 0;  // lanes past the last matrix give no address
    if ((int)lane < 8 * N_) {
        if (addr % 16) fail("stmatrix row address 0x%llx (lane %u) is not 16-byte aligned", (unsigned long long)addr, lane);
        row = (uintptr_t)shared_operand(addr, 16, "stmatrix");
    }
    unsigned r[N_];
    for (int i = 0; i < N_; ++i) r[i] = s[i];
    mma_emu::stmatrix<N_, Trans>(row, r);
}

// ---- cp.async: `dst` a shared-window address, `src` a global (generic) address ----

inline void cp_async(bool cg, uint64_t dst, uint64_t src, long long cp_size, long long src_size,
                     const char *file = __builtin_FILE(), unsigned line = __builtin_LINE()) {
    const SourceSite site(file, line);
    const char *what = cg ? "cp.async.cg" : "cp.async.ca";
    if (cg ? cp_size != 16 : (cp_size != 4 && cp_size != 8 && cp_size != 16))
        fail("%s copies %s bytes, not %lld", what, cg ? "16" : "4, 8 or 16", cp_size);
    if (src_size < 0 || src_size > cp_size) fail("%s: src-size %lld outside 0..%lld", what, src_size, cp_size);
    void *to = shared_operand(dst, (size_t)cp_size, what);
    async_copy(to, (const void *)(uintptr_t)src, (unsigned)cp_size, (unsigned)src_size);
}

// ---- Arithmetic and conversions, as the PTX ISA defines them ----

inline float f16_of(uint16_t b) { return __ushort_as_half(b).to_float(); }
inline float bf16_of(uint16_t b) {
    __nv_bfloat16 h;
    h.__x = b;
    return h.to_float();
}
// One rounding to nearest even from the exact value (a float converts to double exactly).
inline uint16_t f16_bits(double x) { return __half::from_double(x).__x; }
inline uint16_t bf16_bits(double x) { return __nv_bfloat16::from_double(x).__x; }

// .ftz: a subnormal input or result is flushed to zero of its sign.
inline float ftz(float x) { return std::fpclassify(x) == FP_SUBNORMAL ? std::copysign(0.f, x) : x; }
// .sat: clamped to [0, 1], NaN to 0.
inline float sat(float x) { return x > 0.f ? (x < 1.f ? x : 1.f) : 0.f; }
inline double sat(double x) { return x > 0. ? (x < 1. ? x : 1.) : 0.; }
// .relu: negative to 0, NaN to the canonical NaN.
inline float relu(float x) { return x != x ? __int_as_float(0x7fffffff) : x < 0.f ? 0.f : x; }

// cvt to an integer type: rounded by `mode` (0 rni, 1 rzi, 2 rmi, 3 rpi; none for integers),
// saturated to the type's range, NaN to 0.
template <class T_>
inline T_ to_int(double x, int mode) {
    if (x != x) return 0;
    x = mode == 0 ? nearbyint(x) : mode == 1 ? trunc(x) : mode == 2 ? floor(x) : ceil(x);
    const double lo = (double)std::numeric_limits<T_>::min(), hi = (double)std::numeric_limits<T_>::max();
    if (x <= lo) return std::numeric_limits<T_>::min();
    if (x >= hi) return std::numeric_limits<T_>::max();
    return (T_)x;
}
// cvt between integer types with .sat: clamped to the destination's range.
template <class D_, class S_>
inline D_ int_sat(S_ x) {
    if constexpr (std::is_signed_v<S_>) {
        if ((long long)x < (long long)std::numeric_limits<D_>::min()) return std::numeric_limits<D_>::min();
        if (x > 0 && (unsigned long long)x > (unsigned long long)std::numeric_limits<D_>::max())
            return std::numeric_limits<D_>::max();
    } else if ((unsigned long long)x > (unsigned long long)std::numeric_limits<D_>::max()) {
        return std::numeric_limits<D_>::max();
    }
    return (D_)x;
}

// shl and shr: a shift by the type's width or more gives 0, or the sign for a signed shr.
template <class T_>
inline T_ shl(T_ a, uint32_t n) {
    return n >= 8 * sizeof(T_) ? T_(0) : T_((std::make_unsigned_t<T_>)a << n);
}
template <class T_>
inline T_ shr(T_ a, uint32_t n) {
    if (n >= 8 * sizeof(T_)) return std::is_signed_v<T_> && a < 0 ? T_(-1) : T_(0);
    return T_(a >> n);
}

// lop3.b32: bit i of the table is F(a, b, c) where a's bit is i >> 2, b's (i >> 1) & 1, c's i & 1.
inline uint32_t lop3(uint32_t a, uint32_t b, uint32_t c, uint32_t lut) {
    uint32_t d = 0;
    for (int i = 0; i < 8; ++i)
        if (lut >> i & 1) d |= (i & 4 ? a : ~a) & (i & 2 ? b : ~b) & (i & 1 ? c : ~c);
    return d;
}

// prmt.b32 (the default mode): byte i of d is byte (c's nibble i & 7) of {b, a}, or that byte's
// sign replicated where the nibble's bit 3 is set.
inline uint32_t prmt(uint32_t a, uint32_t b, uint32_t c) {
    const uint64_t bytes = (uint64_t)b << 32 | a;
    uint32_t d = 0;
    for (int i = 0; i < 4; ++i) {
        const uint32_t sel = c >> (4 * i) & 0xf;
        uint32_t byte = (uint32_t)(bytes >> (8 * (sel & 7))) & 0xff;
        if (sel & 8) byte = byte & 0x80 ? 0xff : 0;
        d |= byte << (8 * i);
    }
    return d;
}

// bfe: `len` bits of `a` from `pos`, sign-extended for a signed type.
template <class T_>
inline T_ bfe(T_ a, uint32_t b, uint32_t c) {
    const uint32_t msb = 8 * sizeof(T_) - 1, pos = b & 0xff, len = c & 0xff;
    using U_ = std::make_unsigned_t<T_>;
    const U_ u = (U_)a;
    const U_ sbit = std::is_unsigned_v<T_> || len == 0 ? 0 : u >> std::min(pos + len - 1, msb) & 1;
    U_ d = 0;
    for (uint32_t i = 0; i <= msb; ++i) d |= (U_)(i < len && pos + i <= msb ? u >> (pos + i) & 1 : sbit) << i;
    return (T_)d;
}

// shf.l and shf.r: a funnel shift of {b, a} by c (.wrap: c mod 32; .clamp: at most 32).
inline uint32_t shf(bool left, bool wrap, uint32_t a, uint32_t b, uint32_t c) {
    const uint32_t n = wrap ? c & 31 : (c < 32 ? c : 32);
    const uint64_t both = (uint64_t)b << 32 | a;
    return left ? (uint32_t)((both << n) >> 32) : (uint32_t)(both >> n);
}

// mul.hi of 64-bit operands.
inline uint64_t mul_hi(uint64_t a, uint64_t b) { return (uint64_t)(((unsigned __int128)a * b) >> 64); }
inline int64_t mul_hi(int64_t a, int64_t b) { return (int64_t)(((__int128)a * b) >> 64); }

// ---- ld, st, atom and red: an address in a state space ----

enum Space { SPACE_GENERIC, SPACE_GLOBAL, SPACE_SHARED, SPACE_CLUSTER };

inline void *cluster_operand(uint64_t addr, int space, size_t bytes, unsigned *rank, const char *what);

// The host address of an access of `bytes` at `addr` in `space`, aligned as PTX requires (a
// GPU faults with a misaligned address otherwise). A .shared address is a shared-window one;
// a .global address must not lie in shared memory (a GPU would access global memory there).
inline void *mem_operand(Space space, uint64_t addr, size_t bytes, const char *what) {
    if (addr % bytes)
        fail("%s: address 0x%llx is not %zu-byte aligned (a GPU faults: misaligned address)", what,
             (unsigned long long)addr, bytes);
    if (space == SPACE_SHARED) return shared_operand(addr, bytes, what);
    if (space == SPACE_CLUSTER) {  // distributed shared memory: a mapa.shared::cluster address
        unsigned rank;
        void *own = cluster_operand(addr, 2, bytes, &rank, what);
        if (rank == worker().rank) return own;
        require_running(cluster_block(rank, what), what);
        return cluster_map(own, rank, what);
    }
    void *p = (void *)(uintptr_t)addr;
    if (space == SPACE_GLOBAL && is_shared(p, bytes))
        fail("%s: %p is in this block's shared memory; .global takes a global address", what, p);
    return p;
}

// A store or an atomic into another block's shared memory (.shared::cluster): recorded in
// that block's race cells as a write no thread of it races with (the race checker does not
// order the threads of different blocks), so that reading it after a cluster barrier is not
// reported as reading memory nothing wrote.
inline void cluster_written(void *p, size_t bytes) {
#ifdef SIM_INSTRUMENTED
    if (!is_shared(p, bytes)) sim_race_async_write(p, bytes);
#else
    (void)p;
    (void)bytes;
#endif
}

// `N` elements of `T` as one access: ld.v4.u32 is one 16-byte load, as on a GPU.
template <class T_, int N_>
struct alignas(sizeof(T_) * N_) Vec {
    T_ v[N_];
};

// A strong (volatile, relaxed, acquire or release) access to global memory is an atomic one
// for the race checker of global memory, as the PTX memory model has it: two strong accesses
// do not race, and they carry release and acquire patterns. In shared memory such accesses
// are checked as plain ones, as volatile C++ accesses are (sim_traffic.h says why).
inline bool strong_in_global(const void *p, size_t bytes) { return !is_shared(p, bytes); }
template <class T_, int N_>
inline void strong_load(const void *p, T_ *out) {
    for (int i = 0; i < N_; ++i) out[i] = __atomic_load_n((const T_ *)p + i, __ATOMIC_RELAXED);
}
template <class T_, int N_>
inline void strong_store(void *p, const T_ *in) {
    for (int i = 0; i < N_; ++i) __atomic_store_n((T_ *)p + i, in[i], __ATOMIC_RELAXED);
}

// The ordering half of .acquire, .release and .acq_rel at a scope: a fence, which orders
// nothing between blocks at .cta or .cluster scope (a cluster's blocks count as one for the
// race checker).
inline void scoped_fence(bool gpu) {
    if (gpu) __threadfence();
    else __threadfence_block();
}

enum AtomOp { ATOM_ADD, ATOM_MIN, ATOM_MAX, ATOM_AND, ATOM_OR, ATOM_XOR, ATOM_EXCH, ATOM_CAS, ATOM_INC, ATOM_DEC };

// atom and red on `p` with operands `b` and `c` (cas), as the PTX ISA defines them, on
// values of type `T` held as register bits `B`; gives the old value's bits.
template <class T_, class B_>
inline B_ atom(AtomOp op, void *p, B_ bb, B_ cb) {
    static_assert(sizeof(T_) == sizeof(B_));
    T_ b, c, old{};
    memcpy(&b, &bb, sizeof b);
    memcpy(&c, &cb, sizeof c);
    T_ *t = (T_ *)p;
    if constexpr (std::is_floating_point_v<T_>) {
        if (op != ATOM_ADD) fail("atom: only add is emulated on floating-point values");
        old = ::atomicAdd(t, b);
    } else {
        switch (op) {
            case ATOM_ADD: old = __atomic_fetch_add(t, b, __ATOMIC_SEQ_CST); break;
            case ATOM_AND: old = __atomic_fetch_and(t, b, __ATOMIC_SEQ_CST); break;
            case ATOM_OR: old = __atomic_fetch_or(t, b, __ATOMIC_SEQ_CST); break;
            case ATOM_XOR: old = __atomic_fetch_xor(t, b, __ATOMIC_SEQ_CST); break;
            case ATOM_EXCH: old = __atomic_exchange_n(t, b, __ATOMIC_SEQ_CST); break;
            case ATOM_CAS:
                old = b;
                __atomic_compare_exchange_n(t, &old, c, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
                break;
            case ATOM_MIN: old = atomic_update(t, [b](T_ o) { return o < b ? o : b; }); break;
            case ATOM_MAX: old = atomic_update(t, [b](T_ o) { return o > b ? o : b; }); break;
            case ATOM_INC: old = atomic_update(t, [b](T_ o) { return o >= b ? T_(0) : T_(o + 1); }); break;
            case ATOM_DEC: old = atomic_update(t, [b](T_ o) { return o == 0 || o > b ? b : T_(o - 1); }); break;
        }
    }
    B_ out;
    memcpy(&out, &old, sizeof out);
    return out;
}

// ---- shfl.sync, by the pseudocode of its PTX ISA section ----

enum ShflMode { SHFL_UP, SHFL_DOWN, SHFL_BFLY, SHFL_IDX };

inline uint32_t shfl(ShflMode mode, uint32_t a, uint32_t b, uint32_t c, uint32_t membermask, bool *p) {
    const uint32_t lane = fiber().lane, bval = b & 31, cval = c & 31, segmask = (c >> 8) & 31;
    const uint32_t max_lane = (lane & segmask) | (cval & ~segmask), min_lane = lane & segmask;
    int j;
    bool pval;
    switch (mode) {
        case SHFL_UP: j = (int)lane - (int)bval; pval = j >= (int)max_lane; break;
        case SHFL_DOWN: j = (int)(lane + bval); pval = j <= (int)max_lane; break;
        case SHFL_BFLY: j = (int)(lane ^ bval); pval = j <= (int)max_lane; break;
        default: j = (int)(min_lane | (bval & ~segmask)); pval = j <= (int)max_lane; break;
    }
    if (!pval) j = (int)lane;
    if (p) *p = pval;
    return warp_exchange(membermask, a, j);
}

// elect.sync d|p, membermask (sm_90): the lanes of the mask meet; the lowest of them is
// elected, each gets its lane number and the elected lane the predicate.
inline uint32_t elect(uint32_t membermask, bool *p) {
    uint32_t live;
    (void)ballot(membermask, 1, &live);
    const uint32_t leader = live ? (uint32_t)__builtin_ctz(live) : 0;
    if (p) *p = fiber().lane == leader;
    return leader;
}

// ---- Hopper (sim_hopper.h): mbarrier, TMA, wgmma ----

// mapa.shared::cluster gives a 32-bit address in another block's shared memory. Here it is
// the window address with the block's rank + 1 in bits 24 and up (a window is far smaller
// than 16 MiB); an address without them is the calling block's own.
constexpr unsigned kRankShift = 24;
constexpr uint64_t kWindowMask = (1ull << kRankShift) - 1;

inline uint64_t mapa_shared(uint64_t addr, unsigned rank) {
    cluster_block(rank, "mapa.shared::cluster");
    if (is_stray_shared(addr)) return addr;  // stays stray: its use says where it came from
    return (addr & kWindowMask) | (uint64_t)(rank + 1) << kRankShift;
}

// The rank an address of `space` (0 generic, 1 .shared::cta, 2 .shared::cluster) points into,
// and the calling block's host address of the same offset.
inline void *cluster_operand(uint64_t addr, int space, size_t bytes, unsigned *rank, const char *what) {
    *rank = worker().rank;
    if (space == 0) return (void *)(uintptr_t)addr;
    if (is_stray_shared(addr)) return shared_operand(addr, bytes, what);
    if (space == 2 && addr >> kRankShift) *rank = (unsigned)(addr >> kRankShift) - 1;
    else if (addr >> kRankShift)
        fail("%s: shared address 0x%llx names another block of the cluster (mapa.shared::cluster); the "
             "instruction takes .shared::cluster for that",
             what, (unsigned long long)addr);
    return shared_operand(addr & kWindowMask, bytes, what);
}

// The calling block's mbarrier at `addr` (init, expect_tx, complete_tx and the waits act on
// the block's own barriers here).
inline void *mbarrier(uint64_t addr, int space, const char *what) {
    unsigned rank;
    void *p = cluster_operand(addr, space, 8, &rank, what);
    if (rank != worker().rank)
        fail("%s on the mbarrier of the cluster's block of rank %u: the simulator emulates arrivals on another "
             "block's mbarrier, not this",
             what, rank);
    return p;
}

// mbarrier.arrive{.expect_tx}, arrive_drop: the state returned is the parity of the phase the
// arrival was in, which test_wait and try_wait take as well as a parity.
inline uint64_t mbar_arrive(uint64_t addr, int space, unsigned count, unsigned tx, bool drop, const char *what,
                            const char *file = __builtin_FILE(), unsigned line = __builtin_LINE()) {
    const SourceSite site(file, line);
    unsigned rank;
    void *p = cluster_operand(addr, space, 8, &rank, what);
    if (rank != worker().rank) {
        if (count != 1 || tx || drop)
            fail("%s on another block's mbarrier: one plain arrival is emulated (no count, tx-count or drop)", what);
        mbar_arrive_cluster(p, rank);
        return 0;
    }
    const uint64_t phase = mbar_load(mbar_object(p, what), what).phase;
    if (drop) mbar_arrive_drop(p, what);
    else ::sim::mbar_arrive(p, count, tx, what);
    return phase;
}

// try_wait may fail before the phase completes, and the kernel's loop tries again (mbar_try);
// test_wait only tests, and a loop of them yields as a spin on memory does.
inline bool mbar_wait_test(void *bar, unsigned parity, bool try_wait, const char *what,
                           const char *file = __builtin_FILE(), unsigned line = __builtin_LINE()) {
    const SourceSite site(file, line);
    if (try_wait) return mbar_try(bar, parity, what);
    poll();
    return mbar_test(bar, parity, what);
}

// cp.async.bulk.tensor.Nd loads (`c`: the N coordinates, innermost first).
inline void tma_load(uint64_t dst, uint64_t map, uint64_t bar, std::initializer_list<int> c, bool multicast,
                     unsigned mask, const char *file = __builtin_FILE(), unsigned line = __builtin_LINE()) {
    const SourceSite site(file, line);
    const char *what = "cp.async.bulk.tensor";
    unsigned r1, r2;
    void *to = cluster_operand(dst, 1, 1, &r1, what);
    void *at = cluster_operand(bar, 1, 8, &r2, what);
    ::sim::tma_load(to, (const void *)(uintptr_t)map, at, c.begin(), (unsigned)c.size(), multicast, mask);
}

// cp.async.bulk.tensor.Nd.global.shared::cta stores: `src` a shared-window address.
inline void tma_store(uint64_t map, uint64_t src, std::initializer_list<int> c, const char *file = __builtin_FILE(),
                      unsigned line = __builtin_LINE()) {
    const SourceSite site(file, line);
    unsigned r;
    const void *from = cluster_operand(src, 1, 1, &r, "the source of a TMA store");
    ::sim::tma_store((const void *)(uintptr_t)map, from, c.begin(), (unsigned)c.size());
}

// Plain bulk copies: cp.async.bulk.shared::cluster.global (a load completing on an mbarrier)
// and cp.async.bulk.global.shared::cta (a store in a bulk group).
inline void bulk_load(uint64_t dst, uint64_t src, uint32_t size, uint64_t bar, bool multicast, unsigned mask,
                      const char *file = __builtin_FILE(), unsigned line = __builtin_LINE()) {
    const SourceSite site(file, line);
    const char *what = "cp.async.bulk";
    unsigned r1, r2;
    void *to = cluster_operand(dst, 1, size, &r1, what);
    void *at = cluster_operand(bar, 1, 8, &r2, what);
    ::sim::bulk_load(to, (const void *)(uintptr_t)src, size, at, multicast, mask);
}

inline void bulk_store(uint64_t dst, uint64_t src, uint32_t size, const char *file = __builtin_FILE(),
                       unsigned line = __builtin_LINE()) {
    const SourceSite site(file, line);
    unsigned r;
    const void *from = cluster_operand(src, 1, size, &r, "the source of a bulk store");
    ::sim::bulk_store((void *)(uintptr_t)dst, from, size);
}

// cp.reduce.async.bulk: a box of a tensor map, or `size` contiguous bytes, reduced with `op`
// into global memory in the issuing thread's bulk group.
inline void tma_reduce(uint64_t map, uint64_t src, std::initializer_list<int> c, ::sim::RedOp op,
                       const char *file = __builtin_FILE(), unsigned line = __builtin_LINE()) {
    const SourceSite site(file, line);
    unsigned r;
    const void *from = cluster_operand(src, 1, 1, &r, "the source of a TMA reduction");
    ::sim::tma_store((const void *)(uintptr_t)map, from, c.begin(), (unsigned)c.size(), op);
}
inline void bulk_reduce(uint64_t dst, uint64_t src, uint32_t size, ::sim::RedOp op, ::sim::RedType type,
                        const char *file = __builtin_FILE(), unsigned line = __builtin_LINE()) {
    const SourceSite site(file, line);
    unsigned r;
    const void *from = cluster_operand(src, 1, size, &r, "the source of a bulk reduction");
    ::sim::bulk_store((void *)(uintptr_t)dst, from, size, op, type);
}

// %clusterid and %nclusterid: the cluster's index in the grid, and the grid in clusters.
inline unsigned clusterid(unsigned axis, bool count) {
    const ::sim::Worker &w = ::sim::worker();
    const unsigned *dims = w.launch->cluster;
    const unsigned grid[3] = {w.grid_dim.x, w.grid_dim.y, w.grid_dim.z};
    const unsigned block[3] = {w.block_idx.x, w.block_idx.y, w.block_idx.z};
    return count ? grid[axis] / dims[axis] : block[axis] / dims[axis];
}

// wgmma.mma_async: the emulation writes each lane's accumulators at the wgmma.wait_group that
// covers the instruction, through one pointer, so they must be consecutive registers (an
// array, as public kernels declare them): floats, or for FP16 accumulators 32-bit registers
// of two halves each.
template <class D>
inline void wgmma(D *const *d, unsigned len, const uint32_t *a, uint64_t desc_a, uint64_t desc_b, unsigned n,
                  WgType type, bool scale_d, int scale_a, int scale_b, bool trans_a, bool trans_b, WgType type_b,
                  const char *file = __builtin_FILE(), unsigned line = __builtin_LINE()) {
    static_assert(sizeof(D) == 4, "a wgmma accumulator register is 32 bits");
    constexpr bool f16 = !__is_same(D, float);
    const SourceSite site(file, line);
    for (unsigned k = 1; k < len; ++k)
        if (d[k] != d[0] + k)
            fail("wgmma.mma_async: accumulator %u is not the %s after accumulator %u; the simulator writes D "
                 "through one pointer, so pass consecutive elements of %s array",
                 k, f16 ? "register" : "float", k - 1, f16 ? "a 32-bit" : "a float");
    wgmma_issue(reinterpret_cast<float *>(d[0]), a, desc_a, desc_b, n, type, scale_d, scale_a, scale_b, trans_a,
                trans_b, type_b, f16);
}

}  // namespace inline_ptx
}  // namespace sim
