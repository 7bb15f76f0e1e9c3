//! Hopper's instructions as inline PTX in a kernel's own file (as fast.cu and CUTLASS's
//! `cute/arch` write them), run by the simulator's front end into the emulation of
//! `lab/hopper.h`: the forms the lab's headers do not use (those are checked against the
//! emulation by `harness/tests/gpu_bodies.rs`, and a whole TMA + wgmma GEMM by the user
//! example `examples/hgemm_wgmma_tma.cu`). mbarrier arrivals with a count and the state they
//! return, waits on that state, `test_wait` polled in a loop, `expect_tx` and `complete_tx` on
//! their own; labels and branches; `bar.sync 0`; `mapa.u64`; the cluster and timer special
//! registers; `mbarrier.inval`; a TF32 wgmma with its scale-d from a predicate; an FP16 one
//! into FP16 accumulators; what the
//! block's end finds left in flight; the TMA through libcu++'s `cuda::barrier` (`barrier_arrive_tx`,
//! `cp_async_bulk_tensor_2d_global_to_shared`); and NVRTC compiling the same files for sm_90a.

use kernel::cuda::nvrtc;
use kernel::sim::SimDevice;
use kernel::testing::{PlanKernel, source_line};
use kernel::{
    Arg, Buf, CudaPlan, CudaSource, DeviceError, Dtype, Executor, Launch, Shape, Step, TensorMap,
    TmaSwizzle,
};

const MBAR: &str = r#"
typedef unsigned u32;
typedef unsigned long long u64;
__device__ __forceinline__ u32 smem(const void *p) { return (u32)__cvta_generic_to_shared(p); }

// r[0..]: what each step saw. 64 threads: warp 0 arrives, warp 1 waits.
extern "C" __global__ void mbar_forms(const float *x, float *r) {
    __shared__ __align__(8) u64 bar, tx;
    __shared__ int started;
    const int t = threadIdx.x;
    if (t == 0) {
        started = 0;
        // A generic address, no state space: the barrier expects two arrivals.
        asm volatile("mbarrier.init.b64 [%0], %1;" ::"l"(&bar), "r"(2));
        asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(smem(&tx)));
    }
    asm volatile("bar.sync 0;" ::: "memory");
    if (t == 0) {
        u64 state;
        // Two arrivals at once: the phase completes; the state is the phase it was in (0).
        asm volatile("mbarrier.arrive.shared::cta.b64 %0, [%1], 2;" : "=l"(state) : "r"(smem(&bar)));
        u32 done;
        asm volatile("{\n.reg .pred p;\nmbarrier.test_wait.shared::cta.b64 p, [%1], %2;\nselp.u32 %0, 1, 0, p;\n}\n"
                     : "=r"(done) : "r"(smem(&bar)), "l"(state));
        r[0] = (float)state;
        r[1] = (float)done;
        // expect_tx and complete_tx on their own: 32 bytes announced, then landed in two parts.
        asm volatile("mbarrier.expect_tx.relaxed.cta.shared::cta.b64 [%0], 32;" ::"r"(smem(&tx)));
        asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(smem(&tx)));
        asm volatile("mbarrier.complete_tx.relaxed.cta.shared::cta.b64 [%0], %1;" ::"r"(smem(&tx)), "r"(16));
        asm volatile("{\n.reg .pred p;\nmbarrier.test_wait.parity.shared::cta.b64 p, [%1], 0;\nselp.u32 %0, 1, 0, p;\n}\n"
                     : "=r"(done) : "r"(smem(&tx)));
        r[2] = (float)done;  // 16 bytes still pending
        asm volatile("mbarrier.complete_tx.relaxed.cta.shared::cta.b64 [%0], 16;" ::"r"(smem(&tx)));
        // Then, once warp 1 polls, the second phase of `bar`: two arrivals of one.
        while (!*(volatile int *)&started) __nanosleep(100);
        asm volatile("mbarrier.arrive.release.cta.shared::cta.b64 _, [%0];" ::"r"(smem(&bar)));
        asm volatile("mbarrier.arrive.release.cta.shared::cta.b64 _, [%0];" ::"r"(smem(&bar)));
    }
    if (t == 32) {
        // Polls the second phase (parity 1) with test_wait in a C++ loop: it must yield to
        // warp 0, which arrives only once this thread has started.
        *(volatile int *)&started = 1;
        u32 done = 0;
        int polls = 0;
        while (!done) {
            asm volatile("{\n.reg .pred p;\nmbarrier.test_wait.parity.acquire.cta.shared::cta.b64 p, [%1], %2;\n"
                         "selp.u32 %0, 1, 0, p;\n}\n" : "=r"(done) : "r"(smem(&bar)), "r"(1));
            ++polls;
        }
        r[3] = polls > 1 ? 1.0f : 0.0f;
        // try_wait on tx's first phase, a retry loop with %= in its labels.
        asm volatile("{\n.reg .pred P1;\nWAIT%=:\nmbarrier.try_wait.parity.shared::cta.b64 P1, [%0], %1, %2;\n"
                     "@!P1 bra.uni WAIT%=;\n}\n" ::"r"(smem(&tx)), "r"(0), "r"(1000000));
        r[4] = 1.0f;
    }
    if (t == 1) {
        u32 rank, ranks;
        u64 t0, t1, self;
        asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(rank));
        asm volatile("mov.u32 %0, %%cluster_nctarank;" : "=r"(ranks));
        asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
        asm volatile("mapa.u64 %0, %1, %2;" : "=l"(self) : "l"(&bar), "r"(0));
        asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t1));
        r[5] = (float)rank;
        r[6] = (float)ranks;
        r[7] = t1 >= t0 ? 1.0f : 0.0f;
        r[8] = self == (u64)&bar ? 1.0f : 0.0f;
    }
}

// A phase whose expect_tx announces fewer bytes than land on it (two copies, emulated here by
// complete_tx): the first completes the phase, the second is counted on the next one, and the
// block ends with that barrier's tx-count negative.
extern "C" __global__ void mbar_tx_short(const float *x, float *r) {
    __shared__ __align__(8) u64 bar;
    if (threadIdx.x != 0) return;
    asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(smem(&bar)));
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], 16;" ::"r"(smem(&bar)));
    asm volatile("mbarrier.complete_tx.shared::cta.b64 [%0], 16;" ::"r"(smem(&bar)));
    asm volatile("mbarrier.complete_tx.shared::cta.b64 [%0], 48;" ::"r"(smem(&bar)));
    r[0] = 1.0f;
}

// The reverse: 64 bytes announced, 16 landed, and nobody waits.
extern "C" __global__ void mbar_tx_long(const float *x, float *r) {
    __shared__ __align__(8) u64 bar;
    if (threadIdx.x != 0) return;
    asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(smem(&bar)));
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], 64;" ::"r"(smem(&bar)));
    asm volatile("mbarrier.complete_tx.shared::cta.b64 [%0], 16;" ::"r"(smem(&bar)));
    r[0] = 1.0f;
}

// One try_wait, whose phase cannot have completed (its only arrival comes after the block's
// barrier, which thread 0 reaches after its try): a GPU may return false there, and does once
// its time limit passes. r[0]: the first try's result; r[1]: a retry loop's, after the barrier.
extern "C" __global__ void mbar_one_try(const float *x, float *r) {
    __shared__ __align__(8) u64 bar;
    const int t = threadIdx.x;
    if (t == 0) asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(smem(&bar)));
    asm volatile("bar.sync 0;" ::: "memory");
    u32 done = 0;
    if (t == 0)
        asm volatile("{\n.reg .pred p;\nmbarrier.try_wait.parity.shared::cta.b64 p, [%1], 0;\nselp.u32 %0, 1, 0, p;\n}\n"
                     : "=r"(done) : "r"(smem(&bar)));
    asm volatile("bar.sync 0;" ::: "memory");
    if (t == 32) asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(smem(&bar)));
    if (t == 0) {
        r[0] = (float)done;
        asm volatile("{\n.reg .pred P1;\nRETRY%=:\nmbarrier.try_wait.parity.shared::cta.b64 P1, [%0], 0;\n"
                     "@!P1 bra.uni RETRY%=;\n}\n" ::"r"(smem(&bar)));
        r[1] = 1.0f;
    }
}

// A retry loop that alternates between two barriers, until either completes: thread 32
// arrives on `a` only after thread 0 has tried both. r[0]: 1 once the loop has ended.
extern "C" __global__ void mbar_either(const float *x, float *r) {
    __shared__ __align__(8) u64 a, b;
    __shared__ int tried;
    const int t = threadIdx.x;
    if (t == 0) {
        tried = 0;
        asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(smem(&a)));
        asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(smem(&b)));
    }
    asm volatile("bar.sync 0;" ::: "memory");
    if (t == 0) {
        u32 done = 0;
        for (int turn = 0; !done; turn ^= 1) {
            asm volatile("{\n.reg .pred p;\nmbarrier.try_wait.parity.shared::cta.b64 p, [%1], 0;\nselp.u32 %0, 1, 0, p;\n}\n"
                         : "=r"(done) : "r"(smem(turn ? &b : &a)) : "memory");
            // A plain store: nothing in the loop polls memory, so only the failed tries let
            // thread 32 run.
            if (turn) tried = 1;
        }
        r[0] = 1.0f;
    }
    if (t == 32) {
        while (atomicAdd(&tried, 0) == 0) __nanosleep(100);
        asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(smem(&a)));
    }
}

// mbarrier.inval as CUTLASS's ClusterBarrier::invalidate ends a kernel: the memory is then
// ordinary shared memory (MODE 0); an arrival after it (1) and an invalidation with bytes
// still announced (2) fail.
template <int MODE>
__device__ void inval(float *r) {
    __shared__ __align__(8) u64 bar;
    if (threadIdx.x != 0) return;
    asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(smem(&bar)));
    if (MODE == 2) asm volatile("mbarrier.expect_tx.shared::cta.b64 [%0], 16;" ::"r"(smem(&bar)));
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(smem(&bar)));
    asm volatile("mbarrier.inval.shared::cta.b64 [%0];" ::"r"(smem(&bar)));
    if (MODE == 1) asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(smem(&bar)));
    bar = 7;
    r[0] = (float)bar;
}
extern "C" __global__ void mbar_inval(const float *x, float *r) { inval<0>(r); }
extern "C" __global__ void mbar_inval_then_arrive(const float *x, float *r) { inval<1>(r); }
extern "C" __global__ void mbar_inval_pending(const float *x, float *r) { inval<2>(r); }
"#;

/// setmaxnreg as warp-specialized kernels use it: the producer warpgroup gives registers
/// back, the consumers take more. `reg_split`: every warp of each warpgroup executes it;
/// `reg_one_warp`: only warp 0 does.
const SETMAXNREG: &str = r#"
extern "C" __global__ void __launch_bounds__(256, 1) reg_split(const float *x, float *r) {
    if (threadIdx.x < 128) asm volatile("setmaxnreg.dec.sync.aligned.u32 40;");
    else asm volatile("setmaxnreg.inc.sync.aligned.u32 232;");
    if (threadIdx.x == 0) r[0] = 1.0f;
}
extern "C" __global__ void __launch_bounds__(256, 1) reg_one_warp(const float *x, float *r) {
    if (threadIdx.x < 32) asm volatile("setmaxnreg.inc.sync.aligned.u32 240;");
    if (threadIdx.x == 0) r[0] = 1.0f;
}
"#;

/// 384 threads with `__launch_bounds__(384, 1)` start with 168 registers each (65536 / 384,
/// rounded down to 8): 64512 for the block. The producer warpgroup gives back what the two
/// consumer warpgroups take; under a schedule that runs a consumer first, it waits for them.
const REGISTER_POOL: &str = r#"
template <int PRODUCER, int CONSUMER>
__device__ void split(float *r) {
    if (threadIdx.x >= 128) asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;" ::"n"(CONSUMER));
    else asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;" ::"n"(PRODUCER));
    if (threadIdx.x == 0) r[0] = 1.0f;
}
// 40 x 128 + 232 x 256 = 64512: what the block has.
extern "C" __global__ void __launch_bounds__(384, 1) reg_fits(const float *x, float *r) { split<40, 232>(r); }
// 40 x 128 + 240 x 256 = 66560: the second consumer warpgroup waits forever.
extern "C" __global__ void __launch_bounds__(384, 1) reg_over(const float *x, float *r) { split<40, 240>(r); }
// No minimum of blocks: ptxas cannot tell the count at entry and drops setmaxnreg (C7508, a
// line of the module's log that names no function), so this one runs.
extern "C" __global__ void __launch_bounds__(384) reg_unbounded(const float *x, float *r) { split<40, 240>(r); }
// As reg_over, then a wgmma in every warpgroup, whose 64 accumulators the producer's 40
// registers cannot hold: ptxas ignores every setmaxnreg of the kernel (C7507), so this one runs.
extern "C" __global__ void __launch_bounds__(384, 1) reg_ignored(const float *x, float *r) {
    __shared__ __align__(1024) unsigned short a[64 * 16], b[128 * 16];
    for (int i = threadIdx.x; i < 64 * 16; i += 384) a[i] = 0;
    for (int i = threadIdx.x; i < 128 * 16; i += 384) b[i] = 0;
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
    __syncthreads();
    if (threadIdx.x >= 128) asm volatile("setmaxnreg.inc.sync.aligned.u32 240;");
    else asm volatile("setmaxnreg.dec.sync.aligned.u32 40;");
    float d[64];
    for (int i = 0; i < 64; ++i) d[i] = 1.0f;
    const unsigned long long da = (__cvta_generic_to_shared(a) & 0x3FFFF) >> 4 | 8ull << 16 | 16ull << 32;
    const unsigned long long db = (__cvta_generic_to_shared(b) & 0x3FFFF) >> 4 | 8ull << 16 | 16ull << 32;
    asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
    asm volatile("wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 "
        "{%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31,"
        "%32,%33,%34,%35,%36,%37,%38,%39,%40,%41,%42,%43,%44,%45,%46,%47,%48,%49,%50,%51,%52,%53,%54,%55,%56,%57,%58,%59,%60,%61,%62,%63}, %64, %65, 1, 1, 1, 0, 0;"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
          "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
          "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
          "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),
          "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),
          "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),
          "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
          "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
        : "l"(da), "l"(db));
    asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
    asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
    float s = 0.0f;
    for (int i = 0; i < 64; ++i) s += d[i];
    if (threadIdx.x == 0) r[0] = s / 64.0f;
}
// No setmaxnreg: ptxas's module-wide line about those it ignored is not this entry's.
extern "C" __global__ void __launch_bounds__(384, 1) reg_none(const float *x, float *r) {
    if (threadIdx.x == 0) r[0] = 1.0f;
}
// A .dec to more than the thread has: ptxas refuses a count above the one at entry, not this.
extern "C" __global__ void __launch_bounds__(384, 1) reg_dec_up(const float *x, float *r) {
    asm volatile("setmaxnreg.dec.sync.aligned.u32 40;");
    asm volatile("setmaxnreg.dec.sync.aligned.u32 80;");
    if (threadIdx.x == 0) r[0] = 1.0f;
}
"#;

/// D[64x8] = A[64x8] B[8x8] in TF32 through wgmma m64n8k8 with A and B K-major, no swizzle
/// (8x8 core matrices of 8 rows x 16 bytes), scale-d a predicate set from an "r" operand.
const WGMMA_TF32: &str = r#"
typedef unsigned u32;
typedef unsigned long long u64;
__device__ __forceinline__ u64 desc(const void *p, u32 lbo, u32 sbo) {
    u64 a = (u64)__cvta_generic_to_shared(p);
    return ((a & 0x3FFFF) >> 4) | (((u64)(lbo & 0x3FFFF) >> 4) << 16) | (((u64)(sbo & 0x3FFFF) >> 4) << 32);
}
// MODE 0: every warp of the warpgroup issues the wgmma. MODE 1: warps 1-3 first wait at
// __syncthreads for warp 0, which waits for them in wgmma.wait_group: a deadlock. MODE 2: warp
// 3 returns before the wgmma that the others wait for. MODE 3: as 0, with the descriptors'
// bits 14-15 and 30-31 set, above the 14-bit start address and leading offset, as some public
// kernels set them (`desc |= 3 << 14`). MODE 4: as 0, without the fence.proxy.async that makes
// the threads' stores to the operands visible to the wgmma. MODE 5: as 0, each thread
// overwriting operands other warps' parts read as soon as its own wait returns. MODE 6: warps
// 1-3 overwrite them after warp 0's wait (told by a flag), before their own. MODE 7: as 0,
// storing the accumulators before any wgmma.wait_group. MODE 8: as 0, doubling them between
// the wgmma and its wait. MODE 9: warps 1-3 read them after warp 0's wait (told by a flag),
// before their own.
template <int MODE>
__device__ void wgmma_tf32_body(const float *A, const float *B, float *C) {
    // No swizzle, K-major: a core matrix is 8 rows of 4 floats (16 bytes), rows 16 bytes
    // apart; K's two core matrices are LBO = 128 bytes apart, M's 8-row groups SBO = 256.
    __shared__ __align__(128) float a[64 * 8], b[8 * 8];
    __shared__ int waited;
    const int t = threadIdx.x;
    if (t == 0) waited = 0;
    for (int i = t; i < 64 * 8; i += 128) {
        const int m = i / 8, k = i % 8;
        a[(m / 8) * 64 + (k / 4) * 32 + (m % 8) * 4 + k % 4] = A[m * 8 + k];
    }
    for (int i = t; i < 8 * 8; i += 128) {
        const int n = i / 8, k = i % 8;  // B K-major: row n of B^T
        b[(k / 4) * 32 + n * 4 + k % 4] = B[k * 8 + n];
    }
    if (MODE != 4) asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
    __syncthreads();
    if (MODE == 1 && t >= 32) __syncthreads();
    if (MODE == 2 && t >= 96) return;
    float d[4] = {0, 0, 0, 0};
    const u64 high = MODE == 3 ? (3ull << 14) | (3ull << 30) : 0;
    const u64 da = desc(a, 128, 256) | high, db = desc(b, 128, 256) | high;
    asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %6, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n8k8.f32.tf32.tf32 {%0, %1, %2, %3}, %4, %5, p, 1, 1;\n}\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "l"(da), "l"(db), "r"(0));
    asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
    const int w = t / 32, g = t % 32 / 4, q = t % 4;
    if (MODE == 7) {
        for (int i = 0; i < 4; ++i) C[(16 * w + g + 8 * (i / 2)) * 8 + 2 * q + i % 2] = d[i];
        return;
    }
    if (MODE == 8)
        for (int i = 0; i < 4; ++i) d[i] *= 2.0f;
    if ((MODE == 6 || MODE == 9) && t >= 32) {
        while (atomicAdd(&waited, 0) == 0) {
        }
        if (MODE == 6) a[(t + 64) % 512] = 0.0f;
        if (MODE == 9) C[(16 * w + g) * 8 + 2 * q] = d[0];  // stored again below
    }
    asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
    if ((MODE == 6 || MODE == 9) && t == 0) atomicExch(&waited, 1);
    if (MODE == 5) a[(t + 64) % 512] = b[t % 64] = 0.0f;
    for (int i = 0; i < 4; ++i) C[(16 * w + g + 8 * (i / 2)) * 8 + 2 * q + i % 2] = d[i];
}
extern "C" __global__ void wgmma_tf32(const float *A, const float *B, float *C, int M, int N, int K) {
    wgmma_tf32_body<0>(A, B, C);
}
extern "C" __global__ void wgmma_tf32_high_bits(const float *A, const float *B, float *C, int M, int N, int K) {
    wgmma_tf32_body<3>(A, B, C);
}
extern "C" __global__ void wgmma_partners_blocked(const float *A, const float *B, float *C, int M, int N, int K) {
    wgmma_tf32_body<1>(A, B, C);
}
extern "C" __global__ void wgmma_partner_exits(const float *A, const float *B, float *C, int M, int N, int K) {
    wgmma_tf32_body<2>(A, B, C);
}
extern "C" __global__ void wgmma_unfenced(const float *A, const float *B, float *C, int M, int N, int K) {
    wgmma_tf32_body<4>(A, B, C);
}
extern "C" __global__ void wgmma_then_refill(const float *A, const float *B, float *C, int M, int N, int K) {
    wgmma_tf32_body<5>(A, B, C);
}
extern "C" __global__ void wgmma_refill_unwaited(const float *A, const float *B, float *C, int M, int N, int K) {
    wgmma_tf32_body<6>(A, B, C);
}
extern "C" __global__ void wgmma_read_unwaited(const float *A, const float *B, float *C, int M, int N, int K) {
    wgmma_tf32_body<7>(A, B, C);
}
extern "C" __global__ void wgmma_scaled_in_flight(const float *A, const float *B, float *C, int M, int N, int K) {
    wgmma_tf32_body<8>(A, B, C);
}
extern "C" __global__ void wgmma_read_after_partner_wait(const float *A, const float *B, float *C, int M, int N, int K) {
    wgmma_tf32_body<9>(A, B, C);
}
"#;

/// The TMA through libcu++'s barrier, as the fast.cu worklog's kernels write it: one box of
/// 16 x 32 floats of A (a 40 x 44 view, so the box's last rows and columns lie outside and read
/// as zeros), thread 0 arriving with the box's bytes, the others plainly.
const LIBCUDACXX_TMA: &str = r#"
#ifndef KERNEL_LAB_SIM
// cuda.h's tensor map, which libcu++ only declares and NVRTC cannot include.
struct alignas(64) CUtensorMap_st { unsigned long long opaque[16]; };
#endif
#include <cuda/barrier>
namespace cde = cuda::device::experimental;
using barrier = cuda::barrier<cuda::thread_scope_block>;

extern "C" __global__ void tma_libcudacxx(const __grid_constant__ CUtensorMap map, float *out) {
    __shared__ alignas(128) float tile[16 * 32];
    __shared__ barrier bar;
    if (threadIdx.x == 0) {
        init(&bar, blockDim.x);
        cde::fence_proxy_async_shared_cta();
    }
    __syncthreads();
    barrier::arrival_token token;
    if (threadIdx.x == 0) {
        cde::cp_async_bulk_tensor_2d_global_to_shared(tile, &map, 24, 30, bar);
        token = cuda::device::barrier_arrive_tx(bar, 1, sizeof(tile));
    } else {
        token = bar.arrive();
    }
    bar.wait(std::move(token));
    for (int i = threadIdx.x; i < 16 * 32; i += blockDim.x) out[i] = tile[i];
}
"#;

/// A wgmma with FP16 accumulators, m64n16k16: four 32-bit registers a lane, two halves each,
/// starting at 2048, where FP16's spacing is 2.
const WGMMA_F16_ACC: &str = r#"
#include <cuda_fp16.h>
typedef unsigned u32;
typedef unsigned long long u64;
__device__ __forceinline__ u64 desc(const void *p, u32 lbo, u32 sbo) {
    u64 a = (u64)__cvta_generic_to_shared(p);
    return ((a & 0x3FFFF) >> 4) | (((u64)(lbo & 0x3FFFF) >> 4) << 16) | (((u64)(sbo & 0x3FFFF) >> 4) << 32);
}
extern "C" __global__ void wgmma_f16_acc(const float *A, const float *B, float *C, int M, int N, int K) {
    // No swizzle, K-major: a core matrix is 8 rows of 8 halves; K's two are LBO = 128 bytes
    // apart, the 8-row groups of M (of A) and N (of B^T) SBO = 256.
    __shared__ __align__(128) __half a[64 * 16], b[16 * 16];
    const int t = threadIdx.x;
    for (int i = t; i < 64 * 16; i += 128) {
        const int m = i / 16, k = i % 16;
        a[(m / 8) * 128 + (k / 8) * 64 + (m % 8) * 8 + k % 8] = __float2half(A[m * 16 + k]);
    }
    for (int i = t; i < 16 * 16; i += 128) {
        const int n = i / 16, k = i % 16;
        b[(n / 8) * 128 + (k / 8) * 64 + (n % 8) * 8 + k % 8] = __float2half(B[k * 16 + n]);
    }
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
    __syncthreads();
    const u32 start = 0x68006800u;  // 2048 in both halves
    u32 d[4] = {start, start, start, start};
    asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
    asm volatile("wgmma.mma_async.sync.aligned.m64n16k16.f16.f16.f16 {%0, %1, %2, %3}, %4, %5, 1, 1, 1, 0, 0;"
                 : "+r"(d[0]), "+r"(d[1]), "+r"(d[2]), "+r"(d[3])
                 : "l"(desc(a, 128, 256)), "l"(desc(b, 128, 256)));
    asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
    asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
    // Element e of a lane: register e / 2, half e % 2; D[16w + g + 8a][8j + 2q + b], e = 4j + 2a + b.
    const int w = t / 32, g = t % 32 / 4, q = t % 4;
    for (int e = 0; e < 8; ++e) {
        const __half h = __ushort_as_half((unsigned short)(d[e / 2] >> (16 * (e % 2))));
        C[(16 * w + g + 8 * (e % 4 / 2)) * 16 + 8 * (e / 4) + 2 * q + e % 2] = __half2float(h);
    }
}
"#;

fn source(code: &'static str) -> CudaSource {
    CudaSource::embedded("tests/hopper_ptx.cu", code)
}

fn run(
    src: &'static str,
    entry: &str,
    threads: u32,
    args: Vec<Arg>,
    shape: Shape,
    data: &[Vec<f32>],
) -> Result<Vec<f32>, DeviceError> {
    run_on(SimDevice::new()?, src, entry, threads, args, shape, data)
}

fn run_on(
    dev: SimDevice,
    src: &'static str,
    entry: &str,
    threads: u32,
    args: Vec<Arg>,
    shape: Shape,
    data: &[Vec<f32>],
) -> Result<Vec<f32>, DeviceError> {
    let plan = CudaPlan {
        inputs: vec![Dtype::F32; data.len()],
        steps: vec![Step::Kernel(Launch {
            source: source(src),
            entry: entry.to_string().into(),
            grid: [1, 1, 1],
            block: [threads, 1, 1],
            dynamic_smem: 0,
            args,
        })],
        ..Default::default()
    };
    let k = PlanKernel::fp32(plan);
    let mut p = dev.prepare(&k, &shape, data)?;
    p.run()?;
    p.output()
}

fn mbar(entry: &str) -> Result<Vec<f32>, DeviceError> {
    let args = vec![Arg::Ptr(Buf::Input(0)), Arg::Ptr(Buf::Output)];
    let data = vec![vec![0.0; 16], vec![0.0]];
    run(MBAR, entry, 64, args, Shape::gemm(16, 1, 1), &data)
}

fn sim_error(r: Result<Vec<f32>, DeviceError>) -> String {
    match r {
        Err(DeviceError::Sim(msg)) => msg,
        other => panic!("expected a simulator error, got {:?}", other.map(|_| ())),
    }
}

#[test]
fn mbarrier_forms_waits_labels_and_special_registers_follow_the_isa() {
    let r = mbar("mbar_forms").unwrap();
    assert_eq!(
        &r[..9],
        &[0.0, 1.0, 0.0, 1.0, 1.0, 0.0, 1.0, 1.0, 1.0],
        "state, its test, tx pending, polls, try_wait, rank, ranks, timer, mapa"
    );
}

/// `try_wait` may fail before its phase completes (PTX ISA 9.7.13.15.16: the thread is
/// suspended up to a time limit): a kernel that takes one try for the wait goes on without its
/// data. The simulator fails a try on a phase not yet complete; a retry loop still completes.
#[test]
fn a_try_wait_on_a_phase_not_yet_complete_returns_false() {
    let r = mbar("mbar_one_try").unwrap();
    assert_eq!(r[..2], [0.0, 1.0], "the single try, then the retry loop");
}

/// setmaxnreg is `.sync.aligned` (PTX ISA 9.7.19.5): every thread of a warpgroup executes the
/// same one. A warp-specialized split passes; one warp alone is reported.
#[test]
fn setmaxnreg_by_part_of_a_warpgroup_is_reported() {
    let reg = |entry: &str| {
        let args = vec![Arg::Ptr(Buf::Input(0)), Arg::Ptr(Buf::Output)];
        let data = vec![vec![0.0; 16], vec![0.0]];
        run(SETMAXNREG, entry, 256, args, Shape::gemm(16, 1, 1), &data)
    };
    assert_eq!(reg("reg_split").unwrap()[0], 1.0);
    let e = sim_error(reg("reg_one_warp"));
    assert!(
        e.contains(
            "setmaxnreg is .sync.aligned: every thread of a warpgroup executes the same ones, \
             but thread (0,0,0) executed 1 and thread (32,0,0), in the same warpgroup, 0"
        ),
        "{e}"
    );
}

/// setmaxnreg.inc waits until the block's pool has the registers (PTX ISA 9.7.19.5): a split
/// that asks for what the launch gave passes, whichever warpgroup runs first; one that asks for
/// more waits forever, reported as a deadlock with the counts, unless ptxas dropped the
/// instruction. Needs NVRTC for the count at entry.
#[test]
fn setmaxnreg_asking_for_more_registers_than_the_block_has_is_a_deadlock() {
    if let Err(e) = kernel::cuda::nvrtc::version() {
        panic!("{e}\nThis test needs NVRTC: run tools/install-cuda-tools.sh first.");
    }
    let reg = |entry: &str, seed: u64| {
        let args = vec![Arg::Ptr(Buf::Input(0)), Arg::Ptr(Buf::Output)];
        let data = vec![vec![0.0; 16], vec![0.0]];
        let dev = SimDevice::new().unwrap().with_seed(seed);
        run_on(
            dev,
            REGISTER_POOL,
            entry,
            384,
            args,
            Shape::gemm(16, 1, 1),
            &data,
        )
    };
    for seed in 0..3 {
        assert_eq!(reg("reg_fits", seed).unwrap()[0], 1.0, "seed {seed}");
    }
    assert_eq!(reg("reg_unbounded", 0).unwrap()[0], 1.0);
    let pool = nvrtc::compile(&source(REGISTER_POOL).for_arch("sm_90a"), "sm_90").unwrap();
    assert!(
        pool.advisories("reg_ignored")
            .iter()
            .any(|a| a.contains("(C7507) Potential Performance Loss: 'setmaxnreg' ignored")),
        "{:?}",
        pool.advisories("reg_ignored")
    );
    assert!(
        !pool
            .advisories("reg_none")
            .iter()
            .any(|a| a.contains("setmaxnreg")),
        "{:?}",
        pool.advisories("reg_none")
    );
    assert_eq!(reg("reg_ignored", 0).unwrap()[0], 1.0);
    let e = sim_error(reg("reg_over", 0));
    assert!(
        e.contains("deadlock at setmaxnreg.inc in block (0,0,0)")
            && e.contains(
                "setmaxnreg.inc waits for registers the block's pool does not have: the block was \
                 launched with 168 registers a thread, 64512 for its 384 threads, and its \
                 warpgroups hold or ask for 40 (exited), 240 (exited), 240 a thread (66560 in all; \
                 a warpgroup that exits is not taken to give its registers back); waiting at \
                 tests/hopper_ptx.cu:4 (128 threads)"
            ),
        "{e}"
    );
    let e = sim_error(reg("reg_dec_up", 0));
    assert!(
        e.contains(
            "setmaxnreg.dec 80 by a warpgroup whose threads hold 40 registers: .dec lowers the \
             count, never raises it"
        ),
        "{e}"
    );
}

/// A loop of single tries that alternates between barriers is correct on a GPU, and ends
/// here too: a failed try lets the other threads run (the time limit of a GPU's suspension).
#[test]
fn a_try_wait_loop_alternating_between_barriers_ends() {
    for seed in 0..3 {
        let dev = SimDevice::new().unwrap().with_seed(seed);
        let args = vec![Arg::Ptr(Buf::Input(0)), Arg::Ptr(Buf::Output)];
        let data = vec![vec![0.0; 16], vec![0.0]];
        let r = run_on(
            dev,
            MBAR,
            "mbar_either",
            64,
            args,
            Shape::gemm(16, 1, 1),
            &data,
        )
        .unwrap_or_else(|e| panic!("seed {seed}: {e}"));
        assert_eq!(r[0], 1.0, "seed {seed}");
    }
}

#[test]
fn transaction_counts_left_unbalanced_at_the_blocks_end_are_reported() {
    let short = sim_error(mbar("mbar_tx_short"));
    assert!(
        short.contains(
            "ends the block with tx-count -48: 48 bytes landed on it that no expect_tx announced"
        ) && short.contains("(block (0,0,0))"),
        "{short}"
    );
    let long = sim_error(mbar("mbar_tx_long"));
    assert!(
        long.contains(
            "ends the block with tx-count 48: an expect_tx announced 48 bytes that never landed"
        ),
        "{long}"
    );
}

#[test]
fn an_invalidated_mbarrier_is_memory_again_and_no_barrier() {
    assert_eq!(mbar("mbar_inval").unwrap()[0], 7.0);
    let after = sim_error(mbar("mbar_inval_then_arrive"));
    assert!(
        after.contains("mbarrier.arrive.shared::cta.b64 on the mbarrier at shared address 0x")
            && after.contains("which mbarrier.inval has invalidated"),
        "{after}"
    );
    let pending = sim_error(mbar("mbar_inval_pending"));
    assert!(
        pending.contains("mbarrier.inval.shared::cta.b64 of the mbarrier at shared address 0x")
            && pending
                .contains("whose tx-count is 16: bytes an expect_tx announced have not landed"),
        "{pending}"
    );
}

#[test]
fn a_tf32_wgmma_with_scale_d_from_a_predicate_computes_the_product() {
    let a: Vec<f32> = (0..64 * 8).map(|i| ((i * 7 % 13) as f32) - 6.0).collect();
    let b: Vec<f32> = (0..8 * 8).map(|i| ((i * 5 % 11) as f32) - 5.0).collect();
    // The bits above the descriptors' 14-bit address fields are ignored.
    for entry in ["wgmma_tf32", "wgmma_tf32_high_bits"] {
        let args = kernel::gemm_args(64, 8, 8);
        let c = run(
            WGMMA_TF32,
            entry,
            128,
            args,
            Shape::gemm(64, 8, 8),
            &[a.clone(), b.clone()],
        )
        .unwrap();
        for m in 0..64 {
            for n in 0..8 {
                let want: f32 = (0..8).map(|k| a[m * 8 + k] * b[k * 8 + n]).sum();
                assert_eq!(c[m * 8 + n], want, "{entry}: D[{m}][{n}]");
            }
        }
    }
}

/// FP16 accumulators: C widened, the products summed, and D rounded to FP16 once, to even
/// (odd sums past 2048 land on a neighbour), each element where the fragment layout puts it.
#[test]
fn a_wgmma_with_f16_accumulators_rounds_d_once_in_the_fragment_layout() {
    let a: Vec<f32> = (0..64 * 16).map(|i| (i * 7 % 5) as f32).collect();
    let b: Vec<f32> = (0..16 * 16).map(|i| (i * 3 % 4) as f32).collect();
    let c = run(
        WGMMA_F16_ACC,
        "wgmma_f16_acc",
        128,
        kernel::gemm_args(64, 16, 16),
        Shape::gemm(64, 16, 16),
        &[a.clone(), b.clone()],
    )
    .unwrap();
    let mut odd = 0;
    for m in 0..64 {
        for n in 0..16 {
            let sum: f32 = 2048.0 + (0..16).map(|k| a[m * 16 + k] * b[k * 16 + n]).sum::<f32>();
            // FP16 spacing is 2 in [2048, 4096): an odd sum ties to the even mantissa.
            let want = if sum % 2.0 == 0.0 {
                sum
            } else if ((sum - 1.0) / 2.0) % 2.0 == 0.0 {
                sum - 1.0
            } else {
                sum + 1.0
            };
            odd += usize::from(sum % 2.0 != 0.0);
            assert_eq!(c[m * 16 + n], want, "D[{m}][{n}] (exact sum {sum})");
        }
    }
    assert!(odd > 100, "too few sums test the rounding: {odd}");
}

/// Operands the threads stored without a fence.proxy.async after: the sanitizer fails the
/// wgmma that reads them, by the line that issued it (it runs at its wait).
#[test]
fn a_wgmma_of_unfenced_operands_names_the_line_that_issued_it() {
    let a = vec![1.0; 64 * 8];
    let b = vec![1.0; 8 * 8];
    let dev = SimDevice::new().unwrap().instrumented();
    let why = sim_error(run_on(
        dev,
        WGMMA_TF32,
        "wgmma_unfenced",
        128,
        kernel::gemm_args(64, 8, 8),
        Shape::gemm(64, 8, 8),
        &[a, b],
    ));
    let issue = source_line(WGMMA_TF32, "asm volatile(\"{\\n.reg .pred p;");
    assert!(
        why.contains("wgmma reads __shared__ 'a' (in wgmma_tf32_body")
            && why.contains("with no fence.proxy.async between that write and this read")
            && why.contains(&format!(
                "; this thread's access is at tests/hopper_ptx.cu:{issue} ("
            )),
        "{why}"
    );
}

/// `entry` of WGMMA_TF32 on A and B of ones, in an instrumented build (which race-checks and
/// sees accesses to the accumulators).
fn tf32_of_ones(entry: &str) -> Result<Vec<f32>, DeviceError> {
    run_on(
        SimDevice::new().unwrap().instrumented(),
        WGMMA_TF32,
        entry,
        128,
        kernel::gemm_args(64, 8, 8),
        Shape::gemm(64, 8, 8),
        &[vec![1.0; 64 * 8], vec![1.0; 8 * 8]],
    )
}

/// A warp's wgmma.wait_group completes the whole wgmma, every warp's part of it: a thread may
/// overwrite any row of the operands once its own wait returns, as single-warpgroup kernels
/// refilling their tiles do. A warp that has not waited may not, even after a partner's wait.
#[test]
fn a_warps_own_wait_orders_its_writes_after_the_whole_wgmmas_reads() {
    let c = tf32_of_ones("wgmma_then_refill").unwrap();
    assert!(c.iter().all(|&v| v == 8.0), "{c:?}");
    let why = sim_error(tf32_of_ones("wgmma_refill_unwaited"));
    assert!(
        why.contains("race on shared memory: this thread writes __shared__ 'a'")
            && why.contains(
                "which warpgroup 0's wgmma.mma_async (its warps' wgmma number 0) reads, and \
                 neither a wgmma.wait_group of this thread's warp covering that wgmma nor a \
                 barrier after it orders this access after the read"
            ),
        "{why}"
    );
}

/// Accumulators of a wgmma in flight, read (stored before any wait, doubled between the wgmma
/// and its wait, or read after a partner warp's wait but before the reader's own): undefined in PTX, and a GPU may hand them out without the product
/// (ptxas waits for it before some such accesses, not before all:
/// `harness/tests/sass_claims.rs`). The row fails, naming
/// the access and the line that issued the wgmma (in an instrumented build, which sees it).
#[test]
fn accumulators_touched_before_a_wait_covers_their_wgmma_fail_naming_both_lines() {
    let issue = source_line(WGMMA_TF32, "asm volatile(\"{\\n.reg .pred p;");
    for (entry, at) in [
        ("wgmma_read_unwaited", "    if (MODE == 7) {"),
        ("wgmma_scaled_in_flight", "    if (MODE == 8)"),
        // A partner's wait has run the wgmma; this warp's registers are still in flight.
        (
            "wgmma_read_after_partner_wait",
            "        if (MODE == 6) a[(t + 64) % 512] = 0.0f;",
        ),
    ] {
        let why = sim_error(tf32_of_ones(entry));
        let access = source_line(WGMMA_TF32, at) + 1;
        for want in [
            format!(
                "wgmma: this thread reads accumulator 0 of its warp's wgmma number 0, issued at \
                 tests/hopper_ptx.cu:{issue}, before a wgmma.wait_group covers that wgmma"
            ),
            format!("; this thread's access is at tests/hopper_ptx.cu:{access} ("),
        ] {
            assert!(why.contains(&want), "{entry}: lacks {want:?}: {why}");
        }
    }
}

/// A wgmma is one instruction of the four warps of a warpgroup: a warp waiting for it while
/// its partners wait for that warp is a deadlock reported at once, naming the warps that never
/// issued it and where they are (not a spin until the time limit); a partner that exits
/// instead fails the wait.
#[test]
fn a_wgmma_its_partners_never_issue_is_a_deadlock_naming_them() {
    let error_of = |entry: &str| {
        let inputs = [vec![1.0; 64 * 8], vec![1.0; 8 * 8]];
        let args = kernel::gemm_args(64, 8, 8);
        sim_error(run(
            WGMMA_TF32,
            entry,
            128,
            args,
            Shape::gemm(64, 8, 8),
            &inputs,
        ))
    };
    let started = std::time::Instant::now();
    let msg = error_of("wgmma_partners_blocked");
    for want in [
        "wgmma_partners_blocked: deadlock at __syncthreads in block (0,0,0): 96 threads wait at \
         __syncthreads, 0 at a warp operation, 0 on an mbarrier, 0 at barrier.cluster.wait, 0 at \
         named barriers, 32 in wgmma.wait_group, 0 exited",
        "warp 0 waits in wgmma.wait_group for the warpgroup's wgmma number 0, which warps 1 (at \
         __syncthreads), 2 (at __syncthreads) and 3 (at __syncthreads) never issued",
    ] {
        assert!(msg.contains(want), "lacks {want:?}: {msg}");
    }
    assert!(
        started.elapsed().as_secs() < 20,
        "reported only after {:?}",
        started.elapsed()
    );
    let msg = error_of("wgmma_partner_exits");
    assert!(
        msg.contains(
            "wgmma.wait_group: warp 3 of the warpgroup exited without issuing wgmma number 0"
        ),
        "{msg}"
    );
}

#[test]
fn a_tma_box_through_libcudacxx_barrier_arrive_tx_lands_with_zeros_outside() {
    let (rows, cols) = (40usize, 44usize);
    let a: Vec<f32> = (0..rows * cols).map(|i| (1 + i) as f32).collect();
    let map = TensorMap::matrix(Buf::Input(0), rows, cols, 16, 32, TmaSwizzle::None);
    let args = vec![Arg::TensorMap(map), Arg::Ptr(Buf::Output)];
    let shape = Shape::gemm(rows, 13, cols);
    let data = vec![a.clone(), vec![0.0; cols * 13]];
    let out = run(LIBCUDACXX_TMA, "tma_libcudacxx", 64, args, shape, &data).unwrap();
    for r in 0..16 {
        for c in 0..32 {
            let (gr, gc) = (30 + r, 24 + c);
            let want = if gr < rows && gc < cols {
                a[gr * cols + gc]
            } else {
                0.0
            };
            assert_eq!(out[r * 32 + c], want, "box element ({r}, {c})");
        }
    }
}

#[test]
fn nvrtc_compiles_the_inline_hopper_ptx_for_sm90a() {
    if let Err(e) = nvrtc::version() {
        panic!("{e}\nThis test needs NVRTC: run tools/install-cuda-tools.sh first.");
    }
    for (code, entries) in [
        (MBAR, 8),
        (WGMMA_TF32, 10),
        (WGMMA_F16_ACC, 1),
        (LIBCUDACXX_TMA, 1),
        (SETMAXNREG, 2),
    ] {
        let c = nvrtc::compile(&source(code).for_arch("sm_90a"), "sm_90")
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!((c.arch.as_str(), c.resources.len()), ("sm_90a", entries));
    }
}
