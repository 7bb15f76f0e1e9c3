// lab/hopper.h: the Hopper (sm_90a) instructions of GEMM rung 18, one small inline function
// each, in namespace `hopper`, beside lab/ptx.h:
//
//   mbarrier   mbar_init, mbar_expect_tx, mbar_arrive, mbar_wait (phase parity),
//              fence_barrier_init
//   TMA        tma_load_2d (cp.async.bulk.tensor.2d, completes on an mbarrier's tx count)
//   wgmma      wgmma_fence, wgmma_commit, wgmma_wait<N>, smem_desc (the 64-bit shared-memory
//              matrix descriptor), wgmma_m64n128k16_bf16 (A and B from shared memory)
//
// None of these can be emulated by the simulator: a TMA copy is done by a hardware unit that
// generates addresses from a tensor map, and wgmma is an asynchronous warpgroup operation
// whose operand layouts are the hardware's. Kernels using this header declare `gpu_only` and
// compile for sm_90a alone (`CudaSource::for_arch`); under KERNEL_LAB_SIM it is an error.
//
// Shared-memory addresses are 32-bit (`__cvta_generic_to_shared`), as in lab/ptx.h.
#pragma once

#ifdef KERNEL_LAB_SIM
#error "lab/hopper.h: wgmma and TMA have no simulator emulation; declare the kernel gpu_only"
#endif

// cuda.h's CUtensorMap (128 opaque bytes, 64-byte aligned), which NVRTC cannot include (cuda.h
// wants the C library). The host encodes it with cuTensorMapEncodeTiled and passes it by value
// as a `const __grid_constant__ CUtensorMap` parameter, so its address is a parameter-space
// address the TMA reads directly.
#ifndef __cuda_cuda_h__
typedef struct alignas(64) CUtensorMap_st {
    unsigned long long opaque[16];
} CUtensorMap;
#endif

namespace hopper {

__device__ __forceinline__ unsigned smem(const void *p) {
    return (unsigned)__cvta_generic_to_shared(p);
}

// ---- mbarrier: a 64-bit shared-memory barrier with an arrival count and a transaction
// (byte) count. A phase completes when both reach zero; waiters test the phase's parity.

__device__ __forceinline__ void mbar_init(unsigned long long *bar, unsigned arrivals) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(smem(bar)), "r"(arrivals));
}

// Makes the initialized barriers visible to the async proxy (the TMA unit) and the cluster.
__device__ __forceinline__ void fence_barrier_init() {
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
}

// Arrives once and adds `bytes` to the transaction count the phase must see land.
__device__ __forceinline__ void mbar_expect_tx(unsigned long long *bar, unsigned bytes) {
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;"
                 ::"r"(smem(bar)), "r"(bytes) : "memory");
}

__device__ __forceinline__ void mbar_arrive(unsigned long long *bar) {
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(smem(bar)) : "memory");
}

// Blocks until the phase with this parity has completed (try_wait suspends in hardware for
// a while before returning false, so the loop does not spin hot).
__device__ __forceinline__ void mbar_wait(unsigned long long *bar, unsigned parity) {
    asm volatile(
        "{\n"
        ".reg .pred done;\n"
        "LAB_WAIT:\n"
        "mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n"
        "@!done bra LAB_WAIT;\n"
        "}\n" ::"r"(smem(bar)), "r"(parity) : "memory");
}

// ---- TMA: one box of a 2-D tensor map, at element coordinates (inner, outer), into shared
// memory at `dst`; the bytes land on `bar`'s transaction count. Out-of-bounds elements of the
// box are written as zeros (and counted).
__device__ __forceinline__ void tma_load_2d(void *dst, const CUtensorMap *map,
                                            unsigned long long *bar, int inner, int outer) {
    asm volatile(
        "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
        " [%0], [%1, {%3, %4}], [%2];" ::"r"(smem(dst)), "l"(map), "r"(smem(bar)),
        "r"(inner), "r"(outer) : "memory");
}

// ---- wgmma: a warpgroup (4 warps, 128 threads) multiplies from shared memory into
// registers, asynchronously. fence orders the accumulators' register writes before the
// wgmma reads them; commit closes a group of issued wgmma; wait<N> leaves at most N groups
// in flight.
__device__ __forceinline__ void wgmma_fence() {
    asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
}
__device__ __forceinline__ void wgmma_commit() {
    asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
}
template <int N> __device__ __forceinline__ void wgmma_wait() {
    asm volatile("wgmma.wait_group.sync.aligned %0;" ::"n"(N) : "memory");
}

// The shared-memory matrix descriptor (PTX ISA, "Matrix Descriptor Format"): start address,
// leading- and stride-dimension byte offsets (all >> 4, 14 bits each), and the swizzle mode
// in bits 62-63 (1 = 128B). The tile must start on a 1024 B boundary (base offset 0).
__device__ __forceinline__ unsigned long long smem_desc_128b(const void *tile, unsigned lbo,
                                                             unsigned sbo) {
    unsigned long long d = 0;
    d |= (unsigned long long)((smem(tile) & 0x3FFFF) >> 4);
    d |= (unsigned long long)((lbo & 0x3FFFF) >> 4) << 16;
    d |= (unsigned long long)((sbo & 0x3FFFF) >> 4) << 32;
    d |= 1ull << 62;
    return d;
}

// D[64x128] (+)= A[64x16] * B[16x128], BF16 in, FP32 accumulators: 64 per thread, in the
// m64nNk16 D layout (warp w of the group holds rows 16w..16w+15; with g = lane / 4,
// t = lane % 4, d[4j + {0,1}] = D[16w + g][8j + 2t + {0,1}], d[4j + {2,3}] the same at row
// + 8). A is K-major (row-major A), B MN-major (row-major B[K][N]): trans-b = 1.
// `accumulate` 0 overwrites D (the first K step), 1 adds to it.
__device__ __forceinline__ void wgmma_m64n128k16_bf16(float (&d)[64], unsigned long long da,
                                                      unsigned long long db,
                                                      int accumulate) {
    asm volatile(
        "{\n"
        ".reg .pred p;\n"
        "setp.ne.b32 p, %66, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 "
        "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, %64, %65, p, 1, 1, 0, 1;\n"
        "}\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
          "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
          "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
          "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),
          "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),
          "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),
          "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
          "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
        : "l"(da), "l"(db), "r"(accumulate));
}

}  // namespace hopper
