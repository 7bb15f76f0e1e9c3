// sim_mma.h: the simulator's emulation of the warp-wide tensor-core instructions ldmatrix,
// stmatrix and mma.sync, behind both lab/ptx.h (the lab's named functions) and sim_asm.h (users' inline
// PTX), so the two run the same code.
//
// Both are warp-wide: the lane that completes the warp reads every lane's row addresses or
// fragments at once and hands each lane the registers the PTX ISA's fragment layouts give it
// ("Matrix Fragments for mma.m16n8k16 / mma.m16n8k8", "Warp-level matrix load instruction:
// ldmatrix"). Layouts (g = lane / 4, t = lane % 4; a b32 register holds two 16-bit elements,
// the lower-indexed one in its low half):
//   m16n8k16 A (16x16, row):  a0 = A[g][2t..2t+1]    a1 = A[g+8][2t..2t+1]
//                             a2 = A[g][2t+8..+9]    a3 = A[g+8][2t+8..+9]
//   m16n8k16 B (16x8, col):   b0 = B[2t..2t+1][g]    b1 = B[2t+8..2t+9][g]
//   C and D (16x8, f32):      c0,c1 = C[g][2t], C[g][2t+1]    c2,c3 = C[g+8][2t], C[g+8][2t+1]
//   C and D (16x8, f16):      c0 = C[g][2t..2t+1]    c1 = C[g+8][2t..2t+1]
//   m16n8k8 tf32 A (16x8):    a0 = A[g][t]  a1 = A[g+8][t]  a2 = A[g][t+4]  a3 = A[g+8][t+4]
//   m16n8k8 tf32 B (8x8):     b0 = B[t][g]  b1 = B[t+4][g]
//   ldmatrix m8n8: lanes 8i..8i+7 give the 8 row addresses (16 bytes each) of matrix i; lane
//   l receives row l/4, elements 2(l%4) and 2(l%4)+1 of each matrix in its register i; with
//   .trans, elements (2(l%4), l/4) and (2(l%4)+1, l/4), i.e. of the transposed matrix.
#pragma once

#include "mma.h"  // half and bfloat16 conversions, TF32 rounding
#include "sim_fp8_value.h"
#include "sim_runtime.h"

namespace sim {
namespace mma_emu {

struct Regs4 {
    unsigned r[4];
};

// Runs `f`, a part of a warp-wide instruction's emulation, as lane `l` of the calling thread's
// warp: the race checker takes the bytes `f` reads or writes as that lane's (the one whose
// register receives or gives them), not the lane that happens to complete the warp. Quiet,
// as the completing lane is: the emulation reports the instruction to the bank model itself.
template <class F_>
inline void as_lane(unsigned l, F_ &&f) {
    Fiber *const self = tl_fiber;
    Fiber *const lane = tl_worker->fibers + (self->warp * 32 + l);
    tl_fiber = lane;
    lane->quiet++;
    f();
    lane->quiet--;
    tl_fiber = self;
}

// ldmatrix.sync.aligned.m8n8.xN{.trans}.shared.b16 with `addr` the host address of this
// lane's row (lanes past the last matrix: ignored).
template <int N_, bool Trans>
inline void ldmatrix(unsigned (&r)[N_], uintptr_t addr) {
    const unsigned lane = fiber().lane;
    if ((int)lane < 8 * N_) {
        if (addr % 16) fail("ldmatrix row address %p (lane %u) is not 16-byte aligned", (void *)addr, lane);
        if (!is_shared((const void *)addr, 16))
            fail("ldmatrix row address %p (lane %u) is not in this block's shared memory", (void *)addr, lane);
        shared_row_bounds((const void *)addr, 0);
        SIM_BANK_REPORT(SIM_BANK_LDSM, addr, 16, N_);
    }
    // The lane that completes the collective reads every lane's rows (Fiber::fragment_load).
    fiber().fragment_load = true;
    Regs4 got = warp_collective<Regs4>(Trans ? "ldmatrix.trans" : "ldmatrix", addr,
                                       [](const uintptr_t *rows, Regs4 *out) {
        for (int m = 0; m < N_; ++m)
            for (int l = 0; l < 32; ++l) {
                const int g = l / 4, t = l % 4;
                unsigned short lo, hi;
                as_lane(l, [&] {
                    if (Trans) {  // column g of rows 2t and 2t+1
                        memcpy(&lo, (const char *)rows[8 * m + 2 * t] + 2 * g, 2);
                        memcpy(&hi, (const char *)rows[8 * m + 2 * t + 1] + 2 * g, 2);
                    } else {  // row g, columns 2t and 2t+1
                        memcpy(&lo, (const char *)rows[8 * m + g] + 4 * t, 2);
                        memcpy(&hi, (const char *)rows[8 * m + g] + 4 * t + 2, 2);
                    }
                });
                out[l].r[m] = (unsigned)lo | ((unsigned)hi << 16);
            }
    });
    fiber().fragment_load = false;
    for (int i = 0; i < N_; ++i) r[i] = got.r[i];
}

struct StIn {
    uintptr_t row;  // this lane's row address (lanes past the last matrix: unused)
    unsigned r[4];
};
struct NoOut {
    char unused;
};

// stmatrix.sync.aligned.m8n8.xN{.trans}.shared.b16 (sm_90): ldmatrix's inverse, each lane's
// register i written where ldmatrix would have read it from matrix i.
template <int N_, bool Trans>
inline void stmatrix(uintptr_t addr, const unsigned *r) {
    const unsigned lane = fiber().lane;
    if ((int)lane < 8 * N_) {
        if (addr % 16) fail("stmatrix row address %p (lane %u) is not 16-byte aligned", (void *)addr, lane);
        if (!is_shared((const void *)addr, 16))
            fail("stmatrix row address %p (lane %u) is not in this block's shared memory", (void *)addr, lane);
        shared_row_bounds((const void *)addr, 1);
        SIM_BANK_REPORT(SIM_BANK_STS, addr, 16, N_);  // a store, a matrix a phase as ldmatrix
    }
    StIn in{addr, {0, 0, 0, 0}};
    for (int i = 0; i < N_; ++i) in.r[i] = r[i];
    warp_collective<NoOut>(Trans ? "stmatrix.trans" : "stmatrix", in, [](const StIn *ins, NoOut *) {
        for (int m = 0; m < N_; ++m)
            for (int l = 0; l < 32; ++l) {
                const int g = l / 4, t = l % 4;
                const unsigned short lo = (unsigned short)(ins[l].r[m] & 0xFFFF), hi = (unsigned short)(ins[l].r[m] >> 16);
                as_lane(l, [&] {
                    if (Trans) {  // column g of rows 2t and 2t+1
                        memcpy((char *)ins[8 * m + 2 * t].row + 2 * g, &lo, 2);
                        memcpy((char *)ins[8 * m + 2 * t + 1].row + 2 * g, &hi, 2);
                    } else {  // row g, columns 2t and 2t+1
                        memcpy((char *)ins[8 * m + g].row + 4 * t, &lo, 2);
                        memcpy((char *)ins[8 * m + g].row + 4 * t + 2, &hi, 2);
                    }
                });
            }
    });
}

struct MmaIn {
    unsigned a[4], b[2];
    float c[4];
};
struct Acc4 {
    float d[4];
};

enum class Elem { f16, bf16, tf32 };

inline float widen16(Elem e, unsigned short h) {
    return e == Elem::f16 ? __half2float(__ushort_as_half(h)) : __bfloat162float(__ushort_as_bfloat16(h));
}

// The warp's A (16 x K) and B (K x 8) gathered from the lanes' registers by the documented
// layouts, then every lane's four accumulators: products exact in FP32 (16-bit and TF32
// inputs), summed in FP32 in k order onto C. TF32 operands are rounded as in the simulator's
// WMMA (cvt.rna), which leaves values already rounded with to_tf32 unchanged.
template <Elem E_>
inline void mma(const MmaIn *in, Acc4 *out) {
    constexpr int K_ = E_ == Elem::tf32 ? 8 : 16;
    float A_[16][K_], B_[K_][8];
    for (int l = 0; l < 32; ++l) {
        const int g = l / 4, t = l % 4;
        const MmaIn &f = in[l];
        if constexpr (E_ == Elem::tf32) {  // one element per register
            auto tf32 = [](unsigned x) { return nvcuda::wmma::__float_to_tf32(__uint_as_float(x)); };
            A_[g][t] = tf32(f.a[0]);
            A_[g + 8][t] = tf32(f.a[1]);
            A_[g][t + 4] = tf32(f.a[2]);
            A_[g + 8][t + 4] = tf32(f.a[3]);
            B_[t][g] = tf32(f.b[0]);
            B_[t + 4][g] = tf32(f.b[1]);
        } else {  // two elements per register, the lower-indexed in the low half
            auto two = [](unsigned reg, float &lo, float &hi) {
                lo = widen16(E_, (unsigned short)(reg & 0xFFFF));
                hi = widen16(E_, (unsigned short)(reg >> 16));
            };
            two(f.a[0], A_[g][2 * t], A_[g][2 * t + 1]);
            two(f.a[1], A_[g + 8][2 * t], A_[g + 8][2 * t + 1]);
            two(f.a[2], A_[g][2 * t + 8], A_[g][2 * t + 9]);
            two(f.a[3], A_[g + 8][2 * t + 8], A_[g + 8][2 * t + 9]);
            two(f.b[0], B_[2 * t][g], B_[2 * t + 1][g]);
            two(f.b[1], B_[2 * t + 8][g], B_[2 * t + 9][g]);
        }
    }
    for (int l = 0; l < 32; ++l) {
        const int g = l / 4, t = l % 4;
        for (int i = 0; i < 4; ++i) {  // c0, c1: row g; c2, c3: row g + 8; columns 2t, 2t + 1
            const int row = g + 8 * (i / 2), col = 2 * t + i % 2;
            float acc = in[l].c[i];
            for (int k = 0; k < K_; ++k) acc += A_[row][k] * B_[k][col];
            out[l].d[i] = acc;
        }
    }
}


// The warp's inputs of one mma.sync and every lane's four accumulators out, whichever the
// types: `In_` holds each lane's a[4], b[2] and c[4], `Out_` its d[4].
template <class In_, class Out_, class C_, class D_>
inline void mma_collective(const char *what, void (*fn)(const In_ *, Out_ *), D_ (&d)[4], const unsigned (&a)[4],
                           const unsigned (&b)[2], const C_ (&c)[4]) {
    In_ in;
    for (int i = 0; i < 4; ++i) in.a[i] = a[i], in.c[i] = c[i];
    in.b[0] = b[0];
    in.b[1] = b[1];
    Out_ got = warp_collective<Out_>(what, in, fn);
    for (int i = 0; i < 4; ++i) d[i] = got.d[i];
}

template <Elem E_>
inline void mma_warp(const char *what, float (&d)[4], const unsigned (&a)[4], const unsigned (&b)[2],
                     const float (&c)[4]) {
    mma_collective(what, mma<E_>, d, a, b, c);
}

// m16n8k32 on 8-bit elements (FP8's and .s8/.u8's): four a register, the lowest-indexed in
// the low byte:
//   A (16x32, row): a0 = A[g][4t..4t+3]  a1 = A[g+8][4t..]  a2 = A[g][4t+16..]  a3 = A[g+8][4t+16..]
//   B (32x8, col):  b0 = B[4t..4t+3][g]  b1 = B[4t+16..4t+19][g]
// Each byte widened to V_ by `dec_a` or `dec_b`, the products summed in V_ in k order onto C,
// and each sum made D by `finish`.
template <class V_, class In_, class Out_, class DecA_, class DecB_, class Fin_>
inline void mma_k32_bytes(const In_ *in, Out_ *out, DecA_ dec_a, DecB_ dec_b, Fin_ finish) {
    V_ A_[16][32], B_[32][8];
    auto bytes = [](unsigned reg, auto dec, V_ *to, int stride) {
        for (int j = 0; j < 4; ++j) to[j * stride] = dec((unsigned char)(reg >> (8 * j)));
    };
    for (int l = 0; l < 32; ++l) {
        const int g = l / 4, t = l % 4;
        const In_ &f = in[l];
        bytes(f.a[0], dec_a, &A_[g][4 * t], 1);
        bytes(f.a[1], dec_a, &A_[g + 8][4 * t], 1);
        bytes(f.a[2], dec_a, &A_[g][4 * t + 16], 1);
        bytes(f.a[3], dec_a, &A_[g + 8][4 * t + 16], 1);
        bytes(f.b[0], dec_b, &B_[4 * t][g], 8);
        bytes(f.b[1], dec_b, &B_[4 * t + 16][g], 8);
    }
    for (int l = 0; l < 32; ++l) {
        const int g = l / 4, t = l % 4;
        for (int i = 0; i < 4; ++i) {  // c0, c1: row g; c2, c3: row g + 8; columns 2t, 2t + 1
            const int row = g + 8 * (i / 2), col = 2 * t + i % 2;
            V_ acc = in[l].c[i];
            for (int k = 0; k < 32; ++k) acc += A_[row][k] * B_[k][col];
            out[l].d[i] = finish(acc);
        }
    }
}

// mma.sync.aligned.m16n8k32.row.col.f32.{e4m3,e5m2}.{e4m3,e5m2}.f32 (sm_89): products exact
// in FP32, summed in FP32 (a GPU's FP8 accumulation keeps fewer bits, so the simulator is the
// more exact of the two).
template <bool A5, bool B5>
inline void mma_fp8(const MmaIn *in, Acc4 *out) {
    mma_k32_bytes<float>(
        in, out, [](unsigned char b) { return fp8_value(b, A5); }, [](unsigned char b) { return fp8_value(b, B5); },
        [](float x) { return x; });
}

template <bool A5, bool B5>
inline void mma_fp8_warp(float (&d)[4], const unsigned (&a)[4], const unsigned (&b)[2], const float (&c)[4]) {
    mma_collective("mma.sync.m16n8k32 FP8", mma_fp8<A5, B5>, d, a, b, c);
}

// mma.sync.aligned.m16n8k32.row.col.s32.{s8,u8}.{s8,u8}.s32 (sm_80): each byte an integer
// (signed, or unsigned with .u8). Products and sums are exact in 32 bits: they wrap, as the
// hardware's do, or with .satfinite clamp to the int32 range. m16n8k16 is its first half: A's
// registers 0 and 1, B's register 0.
struct MmaInI {
    unsigned a[4], b[2];
    int c[4];
};
struct AccI4 {
    int d[4];
};

template <bool AU, bool BU, bool Sat>
inline void mma_i8(const MmaInI *in, AccI4 *out) {
    auto integer = [](bool u) {
        return [u](unsigned char b) { return u ? (long long)b : (long long)(signed char)b; };
    };
    mma_k32_bytes<long long>(in, out, integer(AU), integer(BU), [](long long acc) {
        if (Sat) acc = acc > 2147483647LL ? 2147483647LL : acc < -2147483648LL ? -2147483648LL : acc;
        return (int)(unsigned)(unsigned long long)acc;
    });
}

template <bool AU, bool BU, bool Sat>
inline void mma_i8_warp(int (&d)[4], const unsigned (&a)[4], const unsigned (&b)[2], const int (&c)[4]) {
    mma_collective("mma.sync.m16n8k32 s8/u8", mma_i8<AU, BU, Sat>, d, a, b, c);
}

// FP16 accumulators (.f16 C and D, two elements a register): C widened exactly, the products
// summed in FP32 as above, D rounded to FP16 once (to nearest even).
inline void f16x2_to_f32(const unsigned (&h)[2], float (&f)[4]) {
    for (int i = 0; i < 4; ++i) f[i] = __half2float(__ushort_as_half((unsigned short)(h[i / 2] >> (16 * (i % 2)))));
}
inline void f32_to_f16x2(const float (&f)[4], unsigned (&h)[2]) {
    for (int r = 0; r < 2; ++r)
        h[r] = (unsigned)__half_as_ushort(__float2half_rn(f[2 * r])) |
               ((unsigned)__half_as_ushort(__float2half_rn(f[2 * r + 1])) << 16);
}

}  // namespace mma_emu
}  // namespace sim
