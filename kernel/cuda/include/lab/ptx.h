// lab/ptx.h: the PTX instructions CUDA C++ reaches only through inline assembly, one small
// function each, in namespace `ptx`:
//
//   cp.async        cp_async_ca<4|8|16>, cp_async_cg (16 bytes), their _zfill forms,
//                   cp_async_commit, cp_async_wait_group<N>, cp_async_wait_all
//   ldmatrix        ldmatrix_x1/_x2/_x4 and their _trans forms (m8n8, b16, from shared memory)
//   mma.sync        mma_m16n8k16_f16, mma_m16n8k16_bf16 (row.col, f32 accumulators),
//                   mma_m16n8k16_f16_f16 (f16 accumulators), mma_m16n8k8_tf32
//   helpers         smem_addr, pack_half2, pack_bf162, to_tf32, ex2_approx
//
// For NVRTC each body is the instruction itself. Under KERNEL_LAB_SIM (the CUDA simulator's
// host compiler) each body is an exact emulation on the simulator's fibers (sim_mma.h, which
// also runs users' inline PTX of the same instructions):
// - cp.async is a deferred copy. It is queued per thread; a group completes only at a
//   cp_async_wait_group / cp_async_wait_all that covers it, so a kernel that reads a stage
//   before waiting for it reads the poison (or an older tile) and fails its check.
// - ldmatrix and mma.sync are warp-wide: the lane that completes the warp reads every lane's
//   row addresses or fragments at once and hands each lane the registers the PTX ISA's
//   fragment layouts give it ("Matrix Fragments for mma.m16n8k16 / mma.m16n8k8"). A kernel
//   with a wrong lane mapping gets a wrong product, as on a GPU.
// The simulator can also run the PTX bodies through its inline-PTX front end into the same
// emulation (kernel::sim::gpu_bodies); every rung including this header gives the same bits
// both ways (harness/tests/gpu_bodies.rs).
//
// Fragment layouts (g = lane / 4, t = lane % 4; a b32 register holds two 16-bit elements, the
// lower-indexed one in its low half):
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
//
// Shared-memory addresses are `ptx::smem_t` (32 bits on the GPU, a host pointer in the
// simulator): get one from smem_addr(pointer) and add byte offsets to it; never store one in
// an `unsigned`.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#ifdef KERNEL_LAB_SIM
#include "sim_mma.h"  // the simulator's ldmatrix and mma.sync, shared with users' inline PTX
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


// Lane l gives the address of row l % 8 of matrix l / 8 (lanes past the last matrix: ignored).
__device__ __forceinline__ void ldmatrix_x1(unsigned (&r)[1], smem_t addr) {
#ifdef KERNEL_LAB_SIM
    sim::mma_emu::ldmatrix<1, false>(r, addr);
#else
    asm volatile("ldmatrix.sync.aligned.m8n8.x1.shared.b16 {%0}, [%1];\n" : "=r"(r[0]) : "r"(addr));
#endif
}
__device__ __forceinline__ void ldmatrix_x2(unsigned (&r)[2], smem_t addr) {
#ifdef KERNEL_LAB_SIM
    sim::mma_emu::ldmatrix<2, false>(r, addr);
#else
    asm volatile("ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%0, %1}, [%2];\n"
                 : "=r"(r[0]), "=r"(r[1])
                 : "r"(addr));
#endif
}
__device__ __forceinline__ void ldmatrix_x4(unsigned (&r)[4], smem_t addr) {
#ifdef KERNEL_LAB_SIM
    sim::mma_emu::ldmatrix<4, false>(r, addr);
#else
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(addr));
#endif
}
__device__ __forceinline__ void ldmatrix_x1_trans(unsigned (&r)[1], smem_t addr) {
#ifdef KERNEL_LAB_SIM
    sim::mma_emu::ldmatrix<1, true>(r, addr);
#else
    asm volatile("ldmatrix.sync.aligned.m8n8.x1.trans.shared.b16 {%0}, [%1];\n" : "=r"(r[0]) : "r"(addr));
#endif
}
__device__ __forceinline__ void ldmatrix_x2_trans(unsigned (&r)[2], smem_t addr) {
#ifdef KERNEL_LAB_SIM
    sim::mma_emu::ldmatrix<2, true>(r, addr);
#else
    asm volatile("ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16 {%0, %1}, [%2];\n"
                 : "=r"(r[0]), "=r"(r[1])
                 : "r"(addr));
#endif
}
__device__ __forceinline__ void ldmatrix_x4_trans(unsigned (&r)[4], smem_t addr) {
#ifdef KERNEL_LAB_SIM
    sim::mma_emu::ldmatrix<4, true>(r, addr);
#else
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(addr));
#endif
}
// ---- mma.sync: D = A * B + C on one warp's fragments, FP32 accumulators ----


// mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32. `d` and `c` may be the same array.
__device__ __forceinline__ void mma_m16n8k16_f16(float (&d)[4], const unsigned (&a)[4], const unsigned (&b)[2],
                                                 const float (&c)[4]) {
#ifdef KERNEL_LAB_SIM
    sim::mma_emu::mma_warp<sim::mma_emu::Elem::f16>("mma.sync.m16n8k16.f16", d, a, b, c);
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
    sim::mma_emu::mma_warp<sim::mma_emu::Elem::bf16>("mma.sync.m16n8k16.bf16", d, a, b, c);
#else
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
        "{%10, %11, %12, %13};\n"
        : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]), "f"(c[0]), "f"(c[1]), "f"(c[2]),
          "f"(c[3]));
#endif
}

// mma.sync.aligned.m16n8k16.row.col.f16.f16.f16.f16: FP16 accumulators, two per register
// (d0 = D[g][2t..2t+1], d1 = D[g+8][2t..2t+1]). The simulator sums in FP32 and rounds D once.
__device__ __forceinline__ void mma_m16n8k16_f16_f16(unsigned (&d)[2], const unsigned (&a)[4], const unsigned (&b)[2],
                                                     const unsigned (&c)[2]) {
#ifdef KERNEL_LAB_SIM
    float cf[4], df[4];
    sim::mma_emu::f16x2_to_f32(c, cf);
    sim::mma_emu::mma_warp<sim::mma_emu::Elem::f16>("mma.sync.m16n8k16.f16.f16", df, a, b, cf);
    sim::mma_emu::f32_to_f16x2(df, d);
#else
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f16.f16.f16.f16 {%0, %1}, {%2, %3, %4, %5}, {%6, %7}, {%8, %9};\n"
        : "=r"(d[0]), "=r"(d[1])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]), "r"(c[0]), "r"(c[1]));
#endif
}

// mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32: one TF32 element per A/B register (round
// with to_tf32 first; the simulator rounds what it is given the same way).
__device__ __forceinline__ void mma_m16n8k8_tf32(float (&d)[4], const unsigned (&a)[4], const unsigned (&b)[2],
                                                 const float (&c)[4]) {
#ifdef KERNEL_LAB_SIM
    sim::mma_emu::mma_warp<sim::mma_emu::Elem::tf32>("mma.sync.m16n8k8.tf32", d, a, b, c);
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
