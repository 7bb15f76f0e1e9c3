// sim_banks.h: what the runtime (sim_runtime.h) and the traffic hooks (sim_traffic.h) share
// of the shared-memory bank model, which sim_traffic.h implements.
//
// Shared memory has 32 banks of 4-byte words. A warp's request is served in phases of 128
// bytes: the whole warp at 4 bytes a lane, half-warps at 8, quarter-warps at 16, one 8x8
// matrix (eight 16-byte rows) of an ldmatrix. A phase takes one wavefront per distinct word
// its busiest bank holds (lanes reading one word share it), so the ideal is a wavefront a
// phase and the rest are bank conflicts, as Nsight Compute counts them.
//
// Each instruction of the warp is rebuilt from its lanes' accesses, which the simulator sees
// one lane at a time: a lane's n-th execution of an access (the code address of the
// instrumented load or store) is the same warp instruction as every other lane's n-th.
// Contiguous accesses of whole words by one thread within an aligned 16-byte chunk count as
// one vector access, as nvcc merges them where it can prove the alignment (and as the host
// compiler may have split a float4); runs of 8- or 16-bit accesses stay apart, as they do in
// nvcc's output. The host compiler
// vectorizes on its own terms, though: where nvcc merges loads across unrolled loop
// iterations, the simulator sees scalars. ldmatrix, stmatrix (counted with the stores, a
// matrix a phase) and cp.async report their lanes' addresses themselves; WMMA's loads and
// stores, TMA and wgmma (whose access patterns are the hardware's) are not counted.
#pragma once

// The kinds counted, as Nsight Compute separates them; indexes of SimTraffic::banks.
enum SimBankKind { SIM_BANK_LDS = 0, SIM_BANK_STS = 1, SIM_BANK_LDSM = 2, SIM_BANK_LDGSTS = 3, SIM_BANK_KINDS = 4 };

// Plain global loads and stores are rebuilt into warp instructions the same way, for how well
// they coalesce (SimTraffic::coalescing, sim_traffic.h): the L1 serves a request a 128-byte
// cache line a wavefront, in 32-byte sectors. Indexes of SimTraffic::coalescing, offset by
// SIM_BANK_KINDS where they name a site's kind.
enum SimGlobalKind { SIM_GLOBAL_LD = 0, SIM_GLOBAL_ST = 1, SIM_GLOBAL_KINDS = 2 };

// The accessing thread as the bank model needs it: `thread` and `warp` unique within the
// block's cluster, `lanes` the lanes its warp has, `switches` how often it has left its fiber.
struct SimBankThread {
    unsigned thread, warp, lane, lanes, switches;
};

// Defined by the runtime: the thread accessing `p`, or false outside a block's thread, while
// an emulation runs, and for the runtime's own thread-locals.
extern "C" int sim_bank_thread(const void *p, SimBankThread *out);
// Defined by the runtime: a plain access of the kernel to shared memory at code address `pc`,
// race-checked, and with `who` the thread as sim_bank_thread gives it (its result).
extern "C" int sim_shared_access(const void *p, unsigned long n, int write, SimBankThread *who, const void *pc);
// Defined by the runtime: a plain access of the kernel to shared memory whose address is not
// aligned to its size, a fault (it returns for the runtime's own accesses); `pc` its code
// address, for its line (null where the hook does not know it).
extern "C" void sim_misaligned_shared(const void *p, unsigned long n, int write, const void *pc);
// Defined by the hooks: one lane's part of an ldmatrix or stmatrix (a row: `matrices` is its
// .xN) or of a cp.async (its destination; `matrices` 0).
extern "C" void sim_bank_report(int kind, const void *p, unsigned long n, unsigned matrices);
