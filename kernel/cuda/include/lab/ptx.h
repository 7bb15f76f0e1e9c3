// lab/ptx.h: the PTX instructions CUDA C++ reaches only through inline assembly, one small
// function each, in namespace `ptx`:
//
//   cp.async        cp_async_ca<4|8|16>, cp_async_cg (16 bytes), their _zfill forms,
//                   cp_async_commit, cp_async_wait_group<N>, cp_async_wait_all
//   ldmatrix        ldmatrix_x1/_x2/_x4 and their _trans forms (m8n8, b16, from shared memory)
//   mma.sync        mma_m16n8k16_f16, mma_m16n8k16_bf16 (row.col, f32 accumulators),
//                   mma_m16n8k8_tf32
//   helpers         smem_addr, pack_half2, pack_bf162, to_tf32, ex2_approx
//
// For NVRTC each body is the instruction itself. Under KERNEL_LAB_SIM (the CUDA simulator's
// host compiler) each body is an exact emulation on the simulator's fibers:
// - cp.async is a deferred copy. It is queued per thread; a group completes only at a
//   cp_async_wait_group / cp_async_wait_all that covers it, so a kernel that reads a stage
//   before waiting for it reads the poison (or an older tile) and fails its check.
// - ldmatrix and mma.sync are warp-wide: the lane that completes the warp reads every lane's
//   row addresses or fragments at once and hands each lane the registers the PTX ISA's
//   fragment layouts give it ("Matrix Fragments for mma.m16n8k16 / mma.m16n8k8"). A kernel
//   with a wrong lane mapping gets a wrong product, as on a GPU.
//
// Fragment layouts (g = lane / 4, t = lane % 4; a b32 register holds two 16-bit elements, the
// lower-indexed one in its low half):
//   m16n8k16 A (16x16, row):  a0 = A[g][2t..2t+1]    a1 = A[g+8][2t..2t+1]
//                             a2 = A[g][2t+8..+9]    a3 = A[g+8][2t+8..+9]
//   m16n8k16 B (16x8, col):   b0 = B[2t..2t+1][g]    b1 = B[2t+8..2t+9][g]
//   C and D (16x8, f32):      c0,c1 = C[g][2t], C[g][2t+1]    c2,c3 = C[g+8][2t], C[g+8][2t+1]
//   m16n8k8 tf32 A (16x8):    a0 = A[g][t]  a1 = A[g+8][t]  a2 = A[g][t+4]  a3 = A[g+8][t+4]
//   m16n8k8 tf32 B (8x8):     b0 = B[t][g]  b1 = B[t+4][g]
//   ldmatrix m8n8: lanes 8i..8i+7 give the 8 row addresses (16 bytes each) of matrix i; lane
//   l receives row l/4, elements 2(l%4) and 2(l%4)+1 of each matrix in its register i; with
//   .trans, elements (2(l%4), l/4) and (2(l%4)+1, l/4), i.e. of the transposed matrix.
//
// Shared-memory addresses are `ptx::smem_t` (32 bits on the GPU, a host pointer in the
// simulator): get one from smem_addr(pointer) and add byte offsets to it; never store one in
// an `unsigned`.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#ifdef KERNEL_LAB_SIM
#include <mma.h>  // the simulator's TF32 rounding (nvcuda::wmma::__float_to_tf32)
#endif

namespace ptx {

#ifdef KERNEL_LAB_SIM
typedef uintptr_t smem_t;
#else
typedef unsigned smem_t;
#endif

// The shared-memory address of a generic pointer into shared memory (cvta.to.shared).
__device__ __forceinline__ smem_t smem_addr(const void *p) {
#ifdef KERNEL_LAB_SIM
    return (smem_t)p;
#else
    return (smem_t)__cvta_generic_to_shared(p);
#endif
}

// Two floats rounded to nearest even into one register of two halves / two bfloat16s, `lo`
// in the low 16 bits (the lower-indexed element of an mma fragment).
__device__ __forceinline__ unsigned pack_half2(float lo, float hi) {
    return (unsigned)__half_as_ushort(__float2half_rn(lo)) |
           ((unsigned)__half_as_ushort(__float2half_rn(hi)) << 16);
}
__device__ __forceinline__ unsigned pack_bf162(float lo, float hi) {
    return (unsigned)__bfloat16_as_ushort(__float2bfloat16_rn(lo)) |
           ((unsigned)__bfloat16_as_ushort(__float2bfloat16_rn(hi)) << 16);
}

// An f32 rounded to TF32 (cvt.rna: 10 mantissa bits, to nearest, ties away from zero), as
// mma .tf32 operands must be: what the tensor cores do with the low 13 bits of an unrounded
// f32 is not specified, a rounded operand is exact. The simulator rounds every TF32 operand
// the same way (its WMMA's rule), which leaves a value from to_tf32 unchanged.
__device__ __forceinline__ unsigned to_tf32(float x) {
#ifdef KERNEL_LAB_SIM
    return __float_as_uint(nvcuda::wmma::__float_to_tf32(x));
#else
    unsigned r;
    asm("cvt.rna.tf32.f32 %0, %1;\n" : "=r"(r) : "f"(x));
    return r;
#endif
}

// 2^x in one MUFU.EX2 (ex2.approx.ftz.f32: the hardware's approximation, subnormal results
// flushed to zero). exp2f without fast math wraps the same instruction in a range test and two
// multiplies that keep subnormal results, which a softmax's probabilities, rounded to 16 bits
// next, do not need. The simulator computes exp2f: it differs from the instruction by the
// approximation's last bits and in the subnormal range only.
__device__ __forceinline__ float ex2_approx(float x) {
#ifdef KERNEL_LAB_SIM
    return exp2f(x);
#else
    float y;
    asm("ex2.approx.ftz.f32 %0, %1;\n" : "=f"(y) : "f"(x));
    return y;
#endif
}

// ---- cp.async: global -> shared without passing through registers ----

// `.ca` (cached in L1 and L2) copies of 4, 8 or 16 bytes; `src_bytes` < Bytes reads only that
// many bytes and fills the rest of the destination with zeros (0: nothing is read, for rows
// past the end of a matrix). Both addresses must be aligned to Bytes.
template <int Bytes>
__device__ __forceinline__ void cp_async_ca_zfill(smem_t dst, const void *src, int src_bytes) {
    static_assert(Bytes == 4 || Bytes == 8 || Bytes == 16, "cp.async.ca copies 4, 8 or 16 bytes");
#ifdef KERNEL_LAB_SIM
    sim::async_copy((void *)dst, src, Bytes, (unsigned)src_bytes);
#else
    asm volatile("cp.async.ca.shared.global [%0], [%1], %2, %3;\n" ::"r"(dst), "l"(src), "n"(Bytes), "r"(src_bytes)
                 : "memory");
#endif
}
template <int Bytes>
__device__ __forceinline__ void cp_async_ca(smem_t dst, const void *src) {
    static_assert(Bytes == 4 || Bytes == 8 || Bytes == 16, "cp.async.ca copies 4, 8 or 16 bytes");
#ifdef KERNEL_LAB_SIM
    sim::async_copy((void *)dst, src, Bytes, Bytes);
#else
    asm volatile("cp.async.ca.shared.global [%0], [%1], %2;\n" ::"r"(dst), "l"(src), "n"(Bytes) : "memory");
#endif
}

// `.cg` (L2 only, bypassing L1: streamed tiles are read once per block) copies of 16 bytes.
__device__ __forceinline__ void cp_async_cg_zfill(smem_t dst, const void *src, int src_bytes) {
#ifdef KERNEL_LAB_SIM
    sim::async_copy((void *)dst, src, 16, (unsigned)src_bytes);
#else
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src), "r"(src_bytes) : "memory");
#endif
}
__device__ __forceinline__ void cp_async_cg(smem_t dst, const void *src) {
#ifdef KERNEL_LAB_SIM
    sim::async_copy((void *)dst, src, 16, 16);
#else
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(dst), "l"(src) : "memory");
#endif
}

// Closes the group of the copies this thread issued since the last commit (it may be empty).
__device__ __forceinline__ void cp_async_commit() {
#ifdef KERNEL_LAB_SIM
    sim::async_commit();
#else
    asm volatile("cp.async.commit_group;\n" ::: "memory");
#endif
}

// Waits until at most N of this thread's committed groups are pending: all older groups have
// landed in shared memory. Other threads' copies need a __syncthreads() after it to be seen.
template <int N>
__device__ __forceinline__ void cp_async_wait_group() {
    static_assert(N >= 0, "cp.async.wait_group takes a count of groups left pending");
#ifdef KERNEL_LAB_SIM
    sim::async_wait(N);
#else
    asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
#endif
}

// Commits the open group and waits for every copy of this thread.
__device__ __forceinline__ void cp_async_wait_all() {
#ifdef KERNEL_LAB_SIM
    sim::async_commit();
    sim::async_wait(0);
#else
    asm volatile("cp.async.wait_all;\n" ::: "memory");
#endif
}

// ---- ldmatrix: 8x8 matrices of 16-bit elements from shared memory into mma fragments ----

#ifdef KERNEL_LAB_SIM
namespace sim_detail {
struct Regs4 {
    unsigned r[4];
};

template <int N, bool Trans>
inline void ldmatrix(unsigned (&r)[N], smem_t addr) {
    const unsigned lane = sim::fiber().lane;
    if ((int)lane < 8 * N) {
        if (addr % 16) sim::fail("ldmatrix row address %p (lane %u) is not 16-byte aligned", (void *)addr, lane);
        if (!sim::is_shared((const void *)addr, 16))
            sim::fail("ldmatrix row address %p (lane %u) is not in this block's shared memory", (void *)addr, lane);
    }
    Regs4 got = sim::warp_collective<Regs4>(Trans ? "ldmatrix.trans" : "ldmatrix", addr,
                                            [](const smem_t *rows, Regs4 *out) {
        for (int m = 0; m < N; ++m)
            for (int l = 0; l < 32; ++l) {
                const int g = l / 4, t = l % 4;
                unsigned short lo, hi;
                if (Trans) {  // column g of rows 2t and 2t+1
                    memcpy(&lo, (const char *)rows[8 * m + 2 * t] + 2 * g, 2);
                    memcpy(&hi, (const char *)rows[8 * m + 2 * t + 1] + 2 * g, 2);
                } else {  // row g, columns 2t and 2t+1
                    memcpy(&lo, (const char *)rows[8 * m + g] + 4 * t, 2);
                    memcpy(&hi, (const char *)rows[8 * m + g] + 4 * t + 2, 2);
                }
                out[l].r[m] = (unsigned)lo | ((unsigned)hi << 16);
            }
    });
    for (int i = 0; i < N; ++i) r[i] = got.r[i];
}
}  // namespace sim_detail
#endif

// Lane l gives the address of row l % 8 of matrix l / 8 (lanes past the last matrix: ignored).
__device__ __forceinline__ void ldmatrix_x1(unsigned (&r)[1], smem_t addr) {
#ifdef KERNEL_LAB_SIM
    sim_detail::ldmatrix<1, false>(r, addr);
#else
    asm volatile("ldmatrix.sync.aligned.m8n8.x1.shared.b16 {%0}, [%1];\n" : "=r"(r[0]) : "r"(addr));
#endif
}
__device__ __forceinline__ void ldmatrix_x2(unsigned (&r)[2], smem_t addr) {
#ifdef KERNEL_LAB_SIM
    sim_detail::ldmatrix<2, false>(r, addr);
#else
    asm volatile("ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%0, %1}, [%2];\n"
                 : "=r"(r[0]), "=r"(r[1])
                 : "r"(addr));
#endif
}
__device__ __forceinline__ void ldmatrix_x4(unsigned (&r)[4], smem_t addr) {
#ifdef KERNEL_LAB_SIM
    sim_detail::ldmatrix<4, false>(r, addr);
#else
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(addr));
#endif
}
__device__ __forceinline__ void ldmatrix_x1_trans(unsigned (&r)[1], smem_t addr) {
#ifdef KERNEL_LAB_SIM
    sim_detail::ldmatrix<1, true>(r, addr);
#else
    asm volatile("ldmatrix.sync.aligned.m8n8.x1.trans.shared.b16 {%0}, [%1];\n" : "=r"(r[0]) : "r"(addr));
#endif
}
__device__ __forceinline__ void ldmatrix_x2_trans(unsigned (&r)[2], smem_t addr) {
#ifdef KERNEL_LAB_SIM
    sim_detail::ldmatrix<2, true>(r, addr);
#else
    asm volatile("ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16 {%0, %1}, [%2];\n"
                 : "=r"(r[0]), "=r"(r[1])
                 : "r"(addr));
#endif
}
__device__ __forceinline__ void ldmatrix_x4_trans(unsigned (&r)[4], smem_t addr) {
#ifdef KERNEL_LAB_SIM
    sim_detail::ldmatrix<4, true>(r, addr);
#else
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(addr));
#endif
}
// ---- mma.sync: D = A * B + C on one warp's fragments, FP32 accumulators ----

#ifdef KERNEL_LAB_SIM
namespace sim_detail {
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
template <Elem E>
inline void mma(const MmaIn *in, Acc4 *out) {
    constexpr int K = E == Elem::tf32 ? 8 : 16;
    float A[16][K], B[K][8];
    for (int l = 0; l < 32; ++l) {
        const int g = l / 4, t = l % 4;
        const MmaIn &f = in[l];
        if constexpr (E == Elem::tf32) {  // one element per register
            auto tf32 = [](unsigned x) { return nvcuda::wmma::__float_to_tf32(__uint_as_float(x)); };
            A[g][t] = tf32(f.a[0]);
            A[g + 8][t] = tf32(f.a[1]);
            A[g][t + 4] = tf32(f.a[2]);
            A[g + 8][t + 4] = tf32(f.a[3]);
            B[t][g] = tf32(f.b[0]);
            B[t + 4][g] = tf32(f.b[1]);
        } else {  // two elements per register, the lower-indexed in the low half
            auto two = [](unsigned reg, float &lo, float &hi) {
                lo = widen16(E, (unsigned short)(reg & 0xFFFF));
                hi = widen16(E, (unsigned short)(reg >> 16));
            };
            two(f.a[0], A[g][2 * t], A[g][2 * t + 1]);
            two(f.a[1], A[g + 8][2 * t], A[g + 8][2 * t + 1]);
            two(f.a[2], A[g][2 * t + 8], A[g][2 * t + 9]);
            two(f.a[3], A[g + 8][2 * t + 8], A[g + 8][2 * t + 9]);
            two(f.b[0], B[2 * t][g], B[2 * t + 1][g]);
            two(f.b[1], B[2 * t + 8][g], B[2 * t + 9][g]);
        }
    }
    for (int l = 0; l < 32; ++l) {
        const int g = l / 4, t = l % 4;
        for (int i = 0; i < 4; ++i) {  // c0, c1: row g; c2, c3: row g + 8; columns 2t, 2t + 1
            const int row = g + 8 * (i / 2), col = 2 * t + i % 2;
            float acc = in[l].c[i];
            for (int k = 0; k < K; ++k) acc += A[row][k] * B[k][col];
            out[l].d[i] = acc;
        }
    }
}

template <Elem E>
inline void mma_warp(const char *what, float (&d)[4], const unsigned (&a)[4], const unsigned (&b)[2],
                     const float (&c)[4]) {
    MmaIn in;
    for (int i = 0; i < 4; ++i) in.a[i] = a[i], in.c[i] = c[i];
    in.b[0] = b[0];
    in.b[1] = b[1];
    Acc4 got = sim::warp_collective<Acc4>(what, in, mma<E>);
    for (int i = 0; i < 4; ++i) d[i] = got.d[i];
}
}  // namespace sim_detail
#endif

// mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32. `d` and `c` may be the same array.
__device__ __forceinline__ void mma_m16n8k16_f16(float (&d)[4], const unsigned (&a)[4], const unsigned (&b)[2],
                                                 const float (&c)[4]) {
#ifdef KERNEL_LAB_SIM
    sim_detail::mma_warp<sim_detail::Elem::f16>("mma.sync.m16n8k16.f16", d, a, b, c);
#else
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
        "{%10, %11, %12, %13};\n"
        : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]), "f"(c[0]), "f"(c[1]), "f"(c[2]),
          "f"(c[3]));
#endif
}

// mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32: the same layouts, BF16 elements.
__device__ __forceinline__ void mma_m16n8k16_bf16(float (&d)[4], const unsigned (&a)[4], const unsigned (&b)[2],
                                                  const float (&c)[4]) {
#ifdef KERNEL_LAB_SIM
    sim_detail::mma_warp<sim_detail::Elem::bf16>("mma.sync.m16n8k16.bf16", d, a, b, c);
#else
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
        "{%10, %11, %12, %13};\n"
        : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]), "f"(c[0]), "f"(c[1]), "f"(c[2]),
          "f"(c[3]));
#endif
}

// mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32: one TF32 element per A/B register (round
// with to_tf32 first; the simulator rounds what it is given the same way).
__device__ __forceinline__ void mma_m16n8k8_tf32(float (&d)[4], const unsigned (&a)[4], const unsigned (&b)[2],
                                                 const float (&c)[4]) {
#ifdef KERNEL_LAB_SIM
    sim_detail::mma_warp<sim_detail::Elem::tf32>("mma.sync.m16n8k8.tf32", d, a, b, c);
#else
    asm volatile(
        "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
        "{%10, %11, %12, %13};\n"
        : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]), "f"(c[0]), "f"(c[1]), "f"(c[2]),
          "f"(c[3]));
#endif
}

}  // namespace ptx
