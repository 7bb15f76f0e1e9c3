// lab/hopper.h: the Hopper (sm_90a) instructions of the Hopper rungs, one small inline
// function each, in namespace `hopper`, beside lab/ptx.h:
//
//   mbarrier   mbar_init, mbar_expect_tx (arrive + expect), mbar_add_tx (expect alone),
//              mbar_complete_tx, mbar_arrive, mbar_wait, mbar_try_wait, mbar_test_wait (phase
//              parity), fence_barrier_init
//   TMA        tma_load_2d (cp.async.bulk.tensor.2d, completes on an mbarrier's tx count),
//              tma_load_2d_multicast (the same box into every block of a cluster mask),
//              fence_proxy_async
//   clusters   cluster_ctarank, cluster_sync (barrier.cluster), cluster_map (mapa),
//              mbar_arrive_cluster (an arrival on another block's mbarrier, released at
//              cluster scope), mbar_arrive_remote (the same, released at CTA scope)
//   wgmma      wgmma_fence, wgmma_commit, wgmma_wait<N>, fence_operands, smem_desc /
//              smem_desc_128b (the 64-bit shared-memory matrix descriptor) and desc_add,
//              wgmma_m64n128k16_bf16 and wgmma_m64n256k16_bf16 (A and B from shared
//              memory); for attention, FP16 or BF16, wgmma_m64n64k16_ss (both from shared
//              memory), wgmma_m64n64k16_rs and wgmma_m64n128k16_rs (A from registers)
//   registers  setmaxnreg_inc<N>, setmaxnreg_dec<N>
//   barriers   named_sync (bar.sync on a numbered barrier of some of the block's warps)
//
// For NVRTC each body is the instruction (compiled for sm_90a alone, `CudaSource::for_arch`).
// Under KERNEL_LAB_SIM each is the simulator's emulation (kernel/sim/include/sim_hopper.h):
// mbarrier waits block the thread until the phase completes (or the block ends as a deadlock
// naming the barrier's phase, pending arrivals and tx-count); a TMA box lands later than it
// is issued, swizzled, with its bytes counted on the mbarrier, so data read without a wait is
// the poison; wgmma decodes its descriptors field by field and reads shared memory at the
// wgmma_wait that covers it, per warp.
//
// Shared-memory addresses are 32-bit (`__cvta_generic_to_shared`), as on the GPU; the
// simulator numbers its shared memory the same way.
//
// The two bodies are checked against each other: the simulator can also read the PTX bodies,
// through its inline-PTX front end, into the same emulation (kernel::sim::gpu_bodies), and
// every rung including this header must give the same bits both ways
// (harness/tests/gpu_bodies.rs). So each asm statement is spelled out whole: a template pasted
// together by a macro could not be read.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#ifndef KERNEL_LAB_SIM
// cuda.h's CUtensorMap (128 opaque bytes, 64-byte aligned), which NVRTC cannot include (cuda.h
// wants the C library). The host encodes it with cuTensorMapEncodeTiled and passes it by value
// as a `const __grid_constant__ CUtensorMap` parameter, so its address is a parameter-space
// address the TMA reads directly. (The simulator's headers define their own.)
#ifndef __cuda_cuda_h__
typedef struct alignas(64) CUtensorMap_st {
    unsigned long long opaque[16];
} CUtensorMap;
#endif
#endif

// Under KERNEL_LAB_SIM each function that runs an emulation takes one more parameter, which
// calls never give: its caller's file and line (`sim::Caller`, defaulted where the call is
// written), so that a failure inside the emulation names the kernel's line that called it.
#ifdef KERNEL_LAB_SIM
#define LAB_CALLER , ::sim::Caller caller = {}
#define LAB_CALLER_ONLY ::sim::Caller caller = {}
#define LAB_PASS_CALLER , caller
#define LAB_AT_CALLER const ::sim::SourceSite lab_site(caller.file, caller.line)
#else
#define LAB_CALLER
#define LAB_CALLER_ONLY
#define LAB_PASS_CALLER
#endif

namespace hopper {

__device__ __forceinline__ unsigned smem(const void *p) {
    return (unsigned)__cvta_generic_to_shared(p);
}

// ---- mbarrier: a 64-bit shared-memory barrier with an arrival count and a transaction
// (byte) count. A phase completes when both reach zero; waiters test the phase's parity.

__device__ __forceinline__ void mbar_init(unsigned long long *bar, unsigned arrivals LAB_CALLER) {
#ifdef KERNEL_LAB_SIM
    LAB_AT_CALLER;
    sim::mbar_init(bar, arrivals);
#else
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(smem(bar)), "r"(arrivals));
#endif
}

// Makes the initialized barriers visible to the async proxy (the TMA unit) and the cluster.
// (The simulator has one proxy: nothing to do.)
__device__ __forceinline__ void fence_barrier_init() {
#ifndef KERNEL_LAB_SIM
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
#endif
}

// Arrives once and adds `bytes` to the transaction count the phase must see land.
__device__ __forceinline__ void mbar_expect_tx(unsigned long long *bar, unsigned bytes LAB_CALLER) {
#ifdef KERNEL_LAB_SIM
    LAB_AT_CALLER;
    sim::mbar_arrive(bar, 1, bytes, "mbarrier.arrive.expect_tx");
#else
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;"
                 ::"r"(smem(bar)), "r"(bytes) : "memory");
#endif
}

__device__ __forceinline__ void mbar_arrive(unsigned long long *bar LAB_CALLER) {
#ifdef KERNEL_LAB_SIM
    LAB_AT_CALLER;
    sim::mbar_arrive(bar, 1, 0, "mbarrier.arrive");
#else
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(smem(bar)) : "memory");
#endif
}

// Adds `bytes` to the transaction count without arriving (mbarrier.expect_tx).
__device__ __forceinline__ void mbar_add_tx(unsigned long long *bar, unsigned bytes LAB_CALLER) {
#ifdef KERNEL_LAB_SIM
    LAB_AT_CALLER;
    sim::mbar_expect_tx(bar, bytes);
#else
    asm volatile("mbarrier.expect_tx.relaxed.cta.shared::cta.b64 [%0], %1;" ::"r"(smem(bar)), "r"(bytes)
                 : "memory");
#endif
}

// Counts `bytes` as landed, as a TMA copy's completion does (mbarrier.complete_tx).
__device__ __forceinline__ void mbar_complete_tx(unsigned long long *bar, unsigned bytes LAB_CALLER) {
#ifdef KERNEL_LAB_SIM
    LAB_AT_CALLER;
    sim::mbar_complete_tx(bar, bytes);
#else
    asm volatile("mbarrier.complete_tx.relaxed.cta.shared::cta.b64 [%0], %1;" ::"r"(smem(bar)), "r"(bytes)
                 : "memory");
#endif
}

// Whether the phase with this parity has completed, without waiting (mbarrier.test_wait).
__device__ __forceinline__ bool mbar_test_wait(unsigned long long *bar, unsigned parity LAB_CALLER) {
#ifdef KERNEL_LAB_SIM
    LAB_AT_CALLER;
    return sim::mbar_test(bar, parity, "mbarrier.test_wait.parity");
#else
    unsigned done;
    asm volatile(
        "{\n"
        ".reg .pred p;\n"
        "mbarrier.test_wait.parity.shared::cta.b64 p, [%1], %2;\n"
        "selp.u32 %0, 1, 0, p;\n"
        "}\n"
        : "=r"(done)
        : "r"(smem(bar)), "r"(parity)
        : "memory");
    return done != 0;
#endif
}

// Nanoseconds a wait may last before it is taken for a hang: far beyond any correct kernel's
// wait (a TMA box lands in microseconds), short enough that a wrong transaction count or
// descriptor ends as a fault with a message instead of holding the GPU. Override with
// -DLAB_MBAR_TIMEOUT_NS=...
#ifndef LAB_MBAR_TIMEOUT_NS
#define LAB_MBAR_TIMEOUT_NS 4000000000ull
#endif

#ifndef KERNEL_LAB_SIM
__device__ __forceinline__ unsigned long long globaltimer_ns() {
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

// A wait that timed out ends in a trap, which fails the launch. Only with -DLAB_MBAR_REPORT
// does it first print the block, thread, barrier and phase: printf is a function call, and a
// call anywhere in a kernel makes ptxas serialize every wgmma in it (C7510, "wgmma pipeline
// crossing function boundary"): each wgmma waits for the one before it to finish. The
// simulator names the same barrier, phase and pending arrivals without it.
__device__ __forceinline__ void mbar_timed_out(unsigned bar, unsigned parity) {
#ifdef LAB_MBAR_REPORT
    printf("mbar_wait timed out after %llu ns: block (%d,%d,%d) thread (%d,%d,%d) "
           "barrier smem 0x%x phase parity %u\n",
           (unsigned long long)(LAB_MBAR_TIMEOUT_NS), (int)blockIdx.x, (int)blockIdx.y,
           (int)blockIdx.z, (int)threadIdx.x, (int)threadIdx.y, (int)threadIdx.z, bar, parity);
#else
    (void)bar;
    (void)parity;
#endif
    __trap();
}
#endif

// Blocks until the phase with this parity has completed (try_wait suspends in hardware for
// a while before returning false, so the loop does not spin hot). A wait longer than
// LAB_MBAR_TIMEOUT_NS traps: the launch fails with an error instead of hanging. (The
// simulator's emulation reports a deadlock, naming the barrier.)
__device__ __forceinline__ void mbar_wait(unsigned long long *bar, unsigned parity LAB_CALLER) {
#ifdef KERNEL_LAB_SIM
    LAB_AT_CALLER;
    sim::mbar_wait(bar, parity, "mbarrier.try_wait.parity");
#else
    unsigned long long start = 0;
    for (;;) {
        unsigned done;
        asm volatile(
            "{\n"
            ".reg .pred p;\n"
            "mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n"
            "selp.u32 %0, 1, 0, p;\n"
            "}\n"
            : "=r"(done)
            : "r"(smem(bar)), "r"(parity)
            : "memory");
        if (done) return;
        // The clock starts at the first failed try, so a wait that succeeds at once reads no
        // timer at all.
        unsigned long long now = globaltimer_ns();
        if (start == 0) {
            start = now;
        } else if (now - start > (unsigned long long)(LAB_MBAR_TIMEOUT_NS)) {
            mbar_timed_out(smem(bar), parity);
        }
    }
#endif
}

// One try: whether the phase with this parity has completed. On a GPU try_wait may suspend
// the thread for a while first and return false; sim::mbar_try says how the simulator does
// both, so that a polling loop ends (or deadlocks with a report) and a single try can fail.
__device__ __forceinline__ bool mbar_try_wait(unsigned long long *bar, unsigned parity LAB_CALLER) {
#ifdef KERNEL_LAB_SIM
    LAB_AT_CALLER;
    return sim::mbar_try(bar, parity, "mbarrier.try_wait.parity");
#else
    unsigned done;
    asm volatile(
        "{\n"
        ".reg .pred p;\n"
        "mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n"
        "selp.u32 %0, 1, 0, p;\n"
        "}\n"
        : "=r"(done)
        : "r"(smem(bar)), "r"(parity)
        : "memory");
    return done != 0;
#endif
}

// ---- TMA: one box of a 2-D tensor map, at element coordinates (inner, outer), into shared
// memory at `dst`; the bytes land on `bar`'s transaction count. Out-of-bounds elements of the
// box are written as zeros (and counted).
__device__ __forceinline__ void tma_load_2d(void *dst, const CUtensorMap *map,
                                            unsigned long long *bar, int inner, int outer LAB_CALLER) {
#ifdef KERNEL_LAB_SIM
    LAB_AT_CALLER;
    sim::tma_load_2d(dst, map, bar, inner, outer);
#else
    asm volatile(
        "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
        " [%0], [%1, {%3, %4}], [%2];" ::"r"(smem(dst)), "l"(map), "r"(smem(bar)),
        "r"(inner), "r"(outer) : "memory");
#endif
}

// The multicast form: the box lands at `dst`'s offset in the shared memory of every block of
// the cluster whose rank is a bit of `mask`, and counts its bytes on the mbarrier at `bar`'s
// offset in each of those blocks. One global read feeds them all.
__device__ __forceinline__ void tma_load_2d_multicast(void *dst, const CUtensorMap *map,
                                                      unsigned long long *bar, int inner, int outer,
                                                      unsigned short mask LAB_CALLER) {
#ifdef KERNEL_LAB_SIM
    LAB_AT_CALLER;
    sim::tma_load_2d(dst, map, bar, inner, outer, true, mask);
#else
    asm volatile(
        "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
        ".multicast::cluster [%0], [%1, {%3, %4}], [%2], %5;" ::"r"(smem(dst)), "l"(map),
        "r"(smem(bar)), "r"(inner), "r"(outer), "h"(mask) : "memory");
#endif
}

// ---- Thread block clusters: the blocks of a kernel declared `__cluster_dims__(x, y, z)` run
// at the same time on SMs of one GPC, and each may signal the others' mbarriers and receive
// the TMA's multicasts. (The simulator runs a cluster's blocks as one unit, interleaved.)

// This block's rank in its cluster (%cluster_ctarank).
__device__ __forceinline__ unsigned cluster_ctarank() {
#ifdef KERNEL_LAB_SIM
    return sim::worker().rank;
#else
    unsigned r;
    asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r));
    return r;
#endif
}

// Every thread of every block of the cluster arrives, then waits for all the others
// (barrier.cluster.arrive.release + wait.acquire; a thread that has exited counts as arrived).
// Needed before another block may use this block's mbarriers (after their init), and before a
// block exits while another may still signal it or multicast into it.
__device__ __forceinline__ void cluster_sync(LAB_CALLER_ONLY) {
#ifdef KERNEL_LAB_SIM
    LAB_AT_CALLER;
    sim::cluster_arrive();
    sim::cluster_wait();
#else
    asm volatile("barrier.cluster.arrive.release;\n\tbarrier.cluster.wait.acquire;" ::: "memory");
#endif
}

// The generic address of what `p` (this block's shared memory) is in block `rank`'s shared
// memory (mapa): loads and stores through it reach that block's memory.
template <class T> __device__ __forceinline__ T *cluster_map(T *p, unsigned rank LAB_CALLER) {
#ifdef KERNEL_LAB_SIM
    LAB_AT_CALLER;
    return static_cast<T *>(sim::cluster_map(p, rank, "mapa"));
#else
    T *out;
    asm volatile("mapa.u64 %0, %1, %2;" : "=l"(out) : "l"(p), "r"(rank));
    return out;
#endif
}

// One arrival on the mbarrier at `bar`'s offset in block `rank` of the cluster (release at
// cluster scope: what this thread read before, its wgmma reads included, is done).
__device__ __forceinline__ void mbar_arrive_cluster(unsigned long long *bar, unsigned rank LAB_CALLER) {
#ifdef KERNEL_LAB_SIM
    LAB_AT_CALLER;
    sim::mbar_arrive_cluster(bar, rank);
#else
    asm volatile(
        "{\n"
        ".reg .b32 remote;\n"
        "mapa.shared::cluster.u32 remote, %0, %1;\n"
        "mbarrier.arrive.release.cluster.shared::cluster.b64 _, [remote];\n"
        "}\n" ::"r"(smem(bar)), "r"(rank) : "memory");
#endif
}

// As mbar_arrive_cluster, with the PTX default semantics of mbarrier.arrive: release at CTA
// scope, so ptxas puts no fence before it (mbar_arrive_cluster's cluster-scope release compiles
// to MEMBAR.ALL.CTA, MEMBAR.ALL.GPU, ERRBAR and CGAERRBAR first). Enough for an arrival that
// says "I have finished reading this stage" once wgmma.wait_group has returned: those reads
// are complete, and the partner's next write into the stage waits on the barrier. CUTLASS's ClusterBarrier::arrive(cta_id, pred)
// is this instruction.
__device__ __forceinline__ void mbar_arrive_remote(unsigned long long *bar, unsigned rank LAB_CALLER) {
#ifdef KERNEL_LAB_SIM
    LAB_AT_CALLER;
    sim::mbar_arrive_cluster(bar, rank);
#else
    asm volatile(
        "{\n"
        ".reg .b32 remote;\n"
        "mapa.shared::cluster.u32 remote, %0, %1;\n"
        "mbarrier.arrive.shared::cluster.b64 _, [remote];\n"
        "}\n" ::"r"(smem(bar)), "r"(rank) : "memory");
#endif
}

// ---- Named barriers: the threads of `count` (a multiple of 32) wait at barrier `id` (1 to 15;
// 0 is __syncthreads') until all of them have arrived. Only those threads take part, so the
// consumer warpgroups can meet while a producer that has returned does not.
__device__ __forceinline__ void named_sync(unsigned id, unsigned count LAB_CALLER) {
#ifdef KERNEL_LAB_SIM
    LAB_AT_CALLER;
    sim::named_barrier(id, count, true, "bar.sync");
#else
    asm volatile("bar.sync %0, %1;" ::"r"(id), "r"(count) : "memory");
#endif
}

// Orders this thread's ordinary shared-memory writes before reads by the async proxy (a
// wgmma, a TMA store) and the reverse (PTX ISA 9.7.13.4). The simulator has one proxy; it
// counts the fence, and its race checker fails a wgmma reading a byte whose writer has not
// fenced since writing it.
__device__ __forceinline__ void fence_proxy_async(LAB_CALLER_ONLY) {
#ifdef KERNEL_LAB_SIM
    LAB_AT_CALLER;
    sim::fence_proxy_async();
#else
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
#endif
}

// ---- wgmma: a warpgroup (4 warps, 128 threads) multiplies from shared memory into
// registers, asynchronously. fence orders the accumulators' register writes before the
// wgmma reads them; commit closes a group of issued wgmma; wait<N> leaves at most N groups
// in flight.
__device__ __forceinline__ void wgmma_fence(LAB_CALLER_ONLY) {
#ifdef KERNEL_LAB_SIM
    LAB_AT_CALLER;
    sim::wgmma_fence();
#else
    asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
#endif
}
__device__ __forceinline__ void wgmma_commit(LAB_CALLER_ONLY) {
#ifdef KERNEL_LAB_SIM
    LAB_AT_CALLER;
    sim::wgmma_commit();
#else
    asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
#endif
}
template <int N> __device__ __forceinline__ void wgmma_wait(LAB_CALLER_ONLY) {
    static_assert(N >= 0, "wgmma.wait_group takes a count of groups left pending");
#ifdef KERNEL_LAB_SIM
    LAB_AT_CALLER;
    sim::wgmma_wait(N);
#else
    asm volatile("wgmma.wait_group.sync.aligned %0;" ::"n"(N) : "memory");
#endif
}

// Holds registers a wgmma writes at this point of the program, after the wait that makes them
// valid. They are registers, not memory, so the wait's memory clobber does not keep the
// compiler from moving ordinary reads of them above it; an empty volatile asm that "modifies"
// each one cannot move above the wait, and what reads them comes after it (CUTLASS's
// warpgroup_fence_operand). The simulator runs a wgmma at its wait: nothing to hold.
template <int N> __device__ __forceinline__ void fence_operands(float (&r)[N]) {
#ifndef KERNEL_LAB_SIM
#pragma unroll
    for (int i = 0; i < N; ++i) asm volatile("" : "+f"(r[i])::"memory");
#endif
}

// The swizzle modes of a matrix descriptor (bits 62-63) and the TMA's matching layouts.
enum Swizzle : unsigned { SWIZZLE_NONE = 0, SWIZZLE_128B = 1, SWIZZLE_64B = 2, SWIZZLE_32B = 3 };

// The shared-memory matrix descriptor (PTX ISA 9.7.15.5.1.2.2): start address, leading- and
// stride-dimension byte offsets (each (x & 0x3FFFF) >> 4 in 14 bits), base offset 0 (the tile
// starts on its swizzle pattern's boundary: 1024 B for 128B) and the swizzle mode.
__device__ __forceinline__ unsigned long long smem_desc(const void *tile, unsigned lbo,
                                                        unsigned sbo, Swizzle swizzle) {
    unsigned long long d = 0;
    d |= (unsigned long long)((smem(tile) & 0x3FFFF) >> 4);
    d |= (unsigned long long)((lbo & 0x3FFFF) >> 4) << 16;
    d |= (unsigned long long)((sbo & 0x3FFFF) >> 4) << 32;
    d |= (unsigned long long)swizzle << 62;
    return d;
}
__device__ __forceinline__ unsigned long long smem_desc_128b(const void *tile, unsigned lbo,
                                                             unsigned sbo) {
    return smem_desc(tile, lbo, sbo, SWIZZLE_128B);
}

// The descriptor `d` with its start address `bytes` further (a multiple of 16). The address
// field is the low 14 bits, in 16-byte units, and shared memory is under 256 KB, so the step
// is one 32-bit add that cannot carry into the other fields; the halves are joined by a mov,
// as the compiler, given the 64-bit expression, redoes it per operand with a carry.
__device__ __forceinline__ unsigned long long desc_add(unsigned long long d, unsigned bytes) {
    const unsigned lo = (unsigned)d + (bytes >> 4), hi = (unsigned)(d >> 32);
#ifdef KERNEL_LAB_SIM
    return (unsigned long long)hi << 32 | lo;
#else
    unsigned long long r;
    asm("mov.b64 %0, {%1, %2};" : "=l"(r) : "r"(lo), "r"(hi));
    return r;
#endif
}

// setmaxnreg.inc / .dec (PTX ISA 9.7.19.5): a warpgroup asks for or gives back registers; N a
// multiple of 8 from 24 to 256. Registers are no resource in the simulator: N is checked.
template <int N> __device__ __forceinline__ void setmaxnreg_inc(LAB_CALLER_ONLY) {
    static_assert(N >= 24 && N <= 256 && N % 8 == 0, "setmaxnreg takes a multiple of 8 from 24 to 256");
#ifdef KERNEL_LAB_SIM
    LAB_AT_CALLER;
    sim::setmaxnreg(N, "setmaxnreg.inc");
#else
    asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;" ::"n"(N));
#endif
}
template <int N> __device__ __forceinline__ void setmaxnreg_dec(LAB_CALLER_ONLY) {
    static_assert(N >= 24 && N <= 256 && N % 8 == 0, "setmaxnreg takes a multiple of 8 from 24 to 256");
#ifdef KERNEL_LAB_SIM
    LAB_AT_CALLER;
    sim::setmaxnreg(N, "setmaxnreg.dec");
#else
    asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;" ::"n"(N));
#endif
}

// D[64x128] (+)= A[64x16] * B[16x128], BF16 in, FP32 accumulators: 64 per thread, in the
// m64nNk16 D layout (warp w of the group holds rows 16w..16w+15; with g = lane / 4,
// t = lane % 4, d[4j + {0,1}] = D[16w + g][8j + 2t + {0,1}], d[4j + {2,3}] the same at row
// + 8). A is K-major (row-major A), B MN-major (row-major B[K][N]): trans-b = 1.
// `accumulate` 0 overwrites D (the first K step), 1 adds to it.
__device__ __forceinline__ void wgmma_m64n128k16_bf16(float (&d)[64], unsigned long long da,
                                                      unsigned long long db,
                                                      int accumulate LAB_CALLER) {
#ifdef KERNEL_LAB_SIM
    LAB_AT_CALLER;
    sim::wgmma_issue(d, nullptr, da, db, 128, sim::WgType::bf16, accumulate != 0, 1, 1, false, true);
#else
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
#endif
}

// The same with N = 256: D[64x256] (+)= A[64x16] * B[16x256], 128 accumulators per thread in
// the same layout (j up to 31). A K-major, B MN-major (trans-b = 1).
__device__ __forceinline__ void wgmma_m64n256k16_bf16(float (&d)[128], unsigned long long da,
                                                      unsigned long long db,
                                                      int accumulate LAB_CALLER) {
#ifdef KERNEL_LAB_SIM
    LAB_AT_CALLER;
    sim::wgmma_issue(d, nullptr, da, db, 256, sim::WgType::bf16, accumulate != 0, 1, 1, false, true);
#else
    asm volatile(
        "{\n"
        ".reg .pred p;\n"
        "setp.ne.b32 p, %130, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16 "
        "{"
        "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
        "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "
        "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "
        "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, "
        "%64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, "
        "%80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, "
        "%96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111, "
        "%112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127"
        "}, %128, %129, p, 1, 1, 0, 1;\n"
        "}\n"
        :
          "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
          "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
          "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
          "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),
          "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),
          "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),
          "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
          "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]),
          "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]),
          "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]),
          "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]),
          "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95]),
          "+f"(d[96]), "+f"(d[97]), "+f"(d[98]), "+f"(d[99]), "+f"(d[100]), "+f"(d[101]), "+f"(d[102]), "+f"(d[103]),
          "+f"(d[104]), "+f"(d[105]), "+f"(d[106]), "+f"(d[107]), "+f"(d[108]), "+f"(d[109]), "+f"(d[110]), "+f"(d[111]),
          "+f"(d[112]), "+f"(d[113]), "+f"(d[114]), "+f"(d[115]), "+f"(d[116]), "+f"(d[117]), "+f"(d[118]), "+f"(d[119]),
          "+f"(d[120]), "+f"(d[121]), "+f"(d[122]), "+f"(d[123]), "+f"(d[124]), "+f"(d[125]), "+f"(d[126]), "+f"(d[127])
        : "l"(da), "l"(db), "r"(accumulate));
#endif
}

// ---- wgmma on 16-bit inputs with FP32 accumulators for the attention rungs, one overload per
// element type (the last argument, __half or __nv_bfloat16, picks .f16 or .bf16):
//   wgmma_m64n64k16_ss    D[64x64] (+)= A[64x16] B[16x64], A and B K-major in shared memory
//                         (S = Q K^T: rows of Q and of K both run along the head dimension);
//                         `accumulate` 0 overwrites D
//   wgmma_m64n64k16_rs,   D[64xN] += A[64x16] B[16xN] with A from registers (per warp the
//   wgmma_m64n128k16_rs   mma.m16n8k16 A layout on its 16 rows) and B MN-major (O += P V:
//                         V's rows run along N)
// D in the layout of wgmma_m64n128k16_bf16 above; each instruction spelled out for both types.
template <bool BF16>
__device__ __forceinline__ void wgmma_ss64(float (&d)[32], unsigned long long da, unsigned long long db,
                                           int accumulate LAB_CALLER) {
#ifdef KERNEL_LAB_SIM
    LAB_AT_CALLER;
    sim::wgmma_issue(d, nullptr, da, db, 64, BF16 ? sim::WgType::bf16 : sim::WgType::f16, accumulate != 0, 1, 1,
                     false, false);
#else
    if constexpr (BF16) {
        asm volatile(
            "{\n.reg .pred p;\nsetp.ne.b32 p, %34, 0;\n"
            "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 {"
            "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
            "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31"
            "}, %32, %33, p, 1, 1, 0, 0;\n}\n"
            : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
              "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
              "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
              "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
            : "l"(da), "l"(db), "r"(accumulate));
    } else {
        asm volatile(
            "{\n.reg .pred p;\nsetp.ne.b32 p, %34, 0;\n"
            "wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16 {"
            "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
            "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31"
            "}, %32, %33, p, 1, 1, 0, 0;\n}\n"
            : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
              "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
              "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
              "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
            : "l"(da), "l"(db), "r"(accumulate));
    }
#endif
}
template <bool BF16>
__device__ __forceinline__ void wgmma_rs64(float (&d)[32], const unsigned (&a)[4],
                                           unsigned long long db LAB_CALLER) {
#ifdef KERNEL_LAB_SIM
    LAB_AT_CALLER;
    sim::wgmma_issue(d, a, 0, db, 64, BF16 ? sim::WgType::bf16 : sim::WgType::f16, true, 1, 1, false, true);
#else
    if constexpr (BF16) {
        asm volatile(
            "{\n.reg .pred p;\nsetp.ne.b32 p, %37, 0;\n"
            "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 {"
            "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
            "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31"
            "}, {%32, %33, %34, %35}, %36, p, 1, 1, 1;\n}\n"
            : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
              "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
              "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
              "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
            : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db), "r"(1));
    } else {
        asm volatile(
            "{\n.reg .pred p;\nsetp.ne.b32 p, %37, 0;\n"
            "wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16 {"
            "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
            "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31"
            "}, {%32, %33, %34, %35}, %36, p, 1, 1, 1;\n}\n"
            : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
              "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
              "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
              "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
            : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db), "r"(1));
    }
#endif
}
template <bool BF16>
__device__ __forceinline__ void wgmma_rs128(float (&d)[64], const unsigned (&a)[4],
                                            unsigned long long db LAB_CALLER) {
#ifdef KERNEL_LAB_SIM
    LAB_AT_CALLER;
    sim::wgmma_issue(d, a, 0, db, 128, BF16 ? sim::WgType::bf16 : sim::WgType::f16, true, 1, 1, false, true);
#else
    if constexpr (BF16) {
        asm volatile(
            "{\n.reg .pred p;\nsetp.ne.b32 p, %69, 0;\n"
            "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 {"
            "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
            "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "
            "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "
            "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63"
            "}, {%64, %65, %66, %67}, %68, p, 1, 1, 1;\n}\n"
            : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
              "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
              "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
              "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),
              "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),
              "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),
              "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
              "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
            : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db), "r"(1));
    } else {
        asm volatile(
            "{\n.reg .pred p;\nsetp.ne.b32 p, %69, 0;\n"
            "wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16 {"
            "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
            "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "
            "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "
            "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63"
            "}, {%64, %65, %66, %67}, %68, p, 1, 1, 1;\n}\n"
            : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
              "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
              "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
              "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),
              "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),
              "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),
              "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
              "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
            : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db), "r"(1));
    }
#endif
}

__device__ __forceinline__ void wgmma_m64n64k16_ss(float (&d)[32], unsigned long long da, unsigned long long db,
                                                   int accumulate, __half LAB_CALLER) {
    wgmma_ss64<false>(d, da, db, accumulate LAB_PASS_CALLER);
}
__device__ __forceinline__ void wgmma_m64n64k16_ss(float (&d)[32], unsigned long long da, unsigned long long db,
                                                   int accumulate, __nv_bfloat16 LAB_CALLER) {
    wgmma_ss64<true>(d, da, db, accumulate LAB_PASS_CALLER);
}
__device__ __forceinline__ void wgmma_m64n64k16_rs(float (&d)[32], const unsigned (&a)[4], unsigned long long db,
                                                   __half LAB_CALLER) {
    wgmma_rs64<false>(d, a, db LAB_PASS_CALLER);
}
__device__ __forceinline__ void wgmma_m64n64k16_rs(float (&d)[32], const unsigned (&a)[4], unsigned long long db,
                                                   __nv_bfloat16 LAB_CALLER) {
    wgmma_rs64<true>(d, a, db LAB_PASS_CALLER);
}
__device__ __forceinline__ void wgmma_m64n128k16_rs(float (&d)[64], const unsigned (&a)[4], unsigned long long db,
                                                    __half LAB_CALLER) {
    wgmma_rs128<false>(d, a, db LAB_PASS_CALLER);
}
__device__ __forceinline__ void wgmma_m64n128k16_rs(float (&d)[64], const unsigned (&a)[4], unsigned long long db,
                                                    __nv_bfloat16 LAB_CALLER) {
    wgmma_rs128<true>(d, a, db LAB_PASS_CALLER);
}

}  // namespace hopper
