// sim_runtime.h: the execution model of the CUDA simulator.
//
// One fiber per CUDA thread, switched only at barriers and warp operations, so the threads of
// a block really interleave between barriers and a barrier that some threads never reach is
// detected exactly (nothing runnable, not everyone finished). Each OS thread runs one block at a time and a
// block never leaves the OS thread that started it (fibers may cache thread-local addresses).
// A thread block cluster (`__cluster_dims__`) runs as one unit on one OS thread: a Worker per
// block, their fibers interleaved by one scheduler, so that the blocks of a cluster can wait
// on each other (barrier.cluster, mbarriers signalled from another block, TMA multicast).
// A thread that spins (a strong load or an atomic repeated, as a wait on a flag does) yields
// to the others; when nothing but spinning is left in a unit, its OS thread runs another
// unit beside it, as a GPU keeps many blocks resident, so that a block waiting for another
// one to signal does not hold up the block it waits for.
// The host (Rust) picks the blocks, the OS threads and catches SIGSEGV; see kernel/src/sim.
#pragma once

#include <cxxabi.h>
#include <dlfcn.h>
#include <elf.h>
#include <fcntl.h>
#include <link.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <setjmp.h>
#include <signal.h>
#include <pthread.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include <mutex>
#include <new>
#include <type_traits>
#include <utility>

#include "sim_banks.h"
#include "sim_global.h"

#if !defined(__x86_64__)
#error "the CUDA simulator's context switch is written for x86-64 only"
#endif

#define SIM_EXPORT extern "C" __attribute__((visibility("default")))

// An instrumented build (SIM_INSTRUMENTED) compiles the kernel with gcc's ThreadSanitizer
// instrumentation, whose hooks (sim_traffic.h) count global-memory traffic and hand every
// access to shared memory to the race checker and the bank model (sim_shared_access below).
// The emulation's own copies and bookkeeping are left uninstrumented (SIM_UNINSTRUMENTED)
// and report what they move themselves: SIM_GLOBAL_READ for global traffic,
// SIM_SHARED_WRITE for the race checker.
struct SimTraffic;  // sim_traffic.h
#ifdef SIM_INSTRUMENTED
extern "C" void __tsan_read_range(void *p, unsigned long n);
extern "C" void __tsan_write_range(void *p, unsigned long n);
extern "C" void sim_traffic_begin(SimTraffic *t, const void *static_lo, size_t static_bytes,
                                  const void *dynamic_lo, size_t dynamic_bytes);
extern "C" void sim_traffic_flush();
extern "C" void sim_race_access(const void *p, unsigned long n, int write);
extern "C" void sim_race_async_write(const void *p, unsigned long n);
extern "C" void sim_proxy_read(const void *p, unsigned long n, const char *what);
extern "C" void sim_stacks_add(const void *start, size_t bytes);
extern "C" void sim_global_atomic(const void *p);
extern "C" void sim_atomic_rmw(const void *p, unsigned long n);
extern "C" void sim_wgmma_issued();
#define SIM_GLOBAL_READ(p, n) __tsan_read_range((void *)(p), (unsigned long)(n))
#define SIM_SHARED_WRITE(p, n) sim_race_access((const void *)(p), (unsigned long)(n), 1)
#define SIM_GLOBAL_FENCE() sim_global_fence()
// An atomic of the emulation on `p`, outside the launch's buffers (a grid barrier's counter),
// for the race checker's release and acquire patterns.
#define SIM_GLOBAL_ATOMIC(p) sim_global_atomic((const void *)(p))
// An atomic read-modify-write of `n` bytes the emulation performs uninstrumented (a float add
// built from a compare-exchange loop): counted and checked once, as the hooks count a GPU's.
#define SIM_ATOMIC_RMW(p, n) sim_atomic_rmw((const void *)(p), (unsigned long)(n))
// A read of shared memory by the async proxy (wgmma): checked for generic writes not fenced.
#define SIM_ASYNC_PROXY_READ(p, n, what) sim_proxy_read((const void *)(p), (unsigned long)(n), what)
#define SIM_UNINSTRUMENTED __attribute__((no_sanitize_thread, noinline))
// A helper of uninstrumented functions only: gcc inlines across functions only where both
// carry the same sanitizer attributes, and a call per byte checked costs the race checker.
#define SIM_UNINSTRUMENTED_INLINE __attribute__((no_sanitize_thread, always_inline)) inline
// A read or write of the warp, emulated by each lane in full (WMMA's whole tiles): counted
// and checked once, as the first lane's.
#define SIM_WARP_READ(p, n) (sim::warp_reporter() ? __tsan_read_range((void *)(p), (unsigned long)(n)) : (void)0)
#define SIM_WARP_WRITE(p, n) (sim::warp_reporter() ? __tsan_write_range((void *)(p), (unsigned long)(n)) : (void)0)
// One lane's part of a warp-wide shared-memory instruction the emulation performs (an
// ldmatrix row, a cp.async destination), for the bank model (sim_banks.h).
#define SIM_BANK_REPORT(kind, p, n, matrices) sim_bank_report(kind, (const void *)(p), (unsigned long)(n), matrices)
// A wgmma was issued: the hooks look at stack accesses for its accumulators from now on.
#define SIM_WGMMA_ISSUED() sim_wgmma_issued()
#else
#define SIM_WGMMA_ISSUED() ((void)0)
#define SIM_BANK_REPORT(kind, p, n, matrices) ((void)0)
#define SIM_WARP_READ(p, n) ((void)0)
#define SIM_WARP_WRITE(p, n) ((void)0)
#define SIM_GLOBAL_READ(p, n) ((void)0)
#define SIM_SHARED_WRITE(p, n) ((void)0)
#define SIM_GLOBAL_FENCE() ((void)0)
#define SIM_GLOBAL_ATOMIC(p) ((void)0)
#define SIM_ATOMIC_RMW(p, n) ((void)0)
#define SIM_ASYNC_PROXY_READ(p, n, what) ((void)0)
#define SIM_UNINSTRUMENTED
#define SIM_UNINSTRUMENTED_INLINE inline
#endif

struct uint3 { unsigned int x, y, z; };
struct dim3 {
    unsigned int x, y, z;
    constexpr dim3(unsigned int vx = 1, unsigned int vy = 1, unsigned int vz = 1) : x(vx), y(vy), z(vz) {}
    constexpr dim3(uint3 v) : x(v.x), y(v.y), z(v.z) {}
};

// ---- The interface with the host; kernel/src/sim/ffi.rs mirrors these structs. ----

// A cooperative launch's grid-wide barrier (cooperative_groups' grid.sync()): the blocks
// arrived in the current phase, the phases completed and the blocks that have exited.
struct SimGrid {
    unsigned long long arrived, phase, exited;
};

struct SimLaunch {
    void (*thunk)(void **args);
    void **args;
    unsigned grid[3], block[3];
    unsigned cluster[3];  // the kernel's __cluster_dims__, (1, 1, 1) without
    unsigned dynamic_smem;
    // Where a GPU starts the dynamic shared memory, modulo 1024 (after the entry's static
    // variables, as ptxas counts them): the dynamic buffer's first byte is placed there.
    unsigned dyn_lead;
    // The registers a thread has at entry, as ptxas counts them (what setmaxnreg's pool starts
    // from); 0 when unknown.
    unsigned regs;
    const char *kernel;
    SimTraffic *traffic;  // where a module built to count traffic counts it; else null
    SimGrid *grid_sync;   // a cooperative launch's grid barrier, every block resident; else null
};

// SIM_STOPPED: the host asked the OS thread to stop (a unit on another OS thread failed, or
// the launch ran past its time limit).
enum SimCode { SIM_OK = 0, SIM_ERROR = 1, SIM_FAULT = 2, SIM_STOPPED = 3 };

// Asks the host for the next unit to run (want = 1; returns 1 with `unit` and its schedule
// `seed` set, 0 when every unit has been handed out) or only whether to stop (want = 0);
// returns -1 when the OS thread must stop.
typedef int (*SimNextUnit)(void *ctx, int want, uint64_t *unit, uint64_t *seed);

struct SimResult {
    int code;
    int signal;
    int is_write;
    int has_thread;
    // A run stopped at its time limit: whether the thread named was looping without a switch
    // (0), spinning on memory, volatile loads or atomics (1), or passing barriers (2).
    int spinning;
    unsigned block[3], thread[3];
    uint64_t addr;
    char message[1024];
    // What the run noticed without stopping (a read of shared memory no thread had written,
    // which a correct kernel may make when the value goes unused): the first, for a failing
    // output to explain.
    char note[1024];
};

// ---- Context switch: callee-saved registers plus the SSE and x87 control words. ----

asm(R"(
    .text
    .p2align 4
    .globl sim_ctx_switch
    .hidden sim_ctx_switch
    .type sim_ctx_switch,@function
sim_ctx_switch:
    pushq %rbp
    pushq %rbx
    pushq %r12
    pushq %r13
    pushq %r14
    pushq %r15
    subq $8, %rsp
    stmxcsr (%rsp)
    fnstcw 4(%rsp)
    movq %rsp, (%rdi)
    movq %rsi, %rsp
    ldmxcsr (%rsp)
    fldcw 4(%rsp)
    addq $8, %rsp
    popq %r15
    popq %r14
    popq %r13
    popq %r12
    popq %rbx
    popq %rbp
    ret
    .size sim_ctx_switch, .-sim_ctx_switch
)");
extern "C" void sim_ctx_switch(void **save_sp, void *load_sp);

namespace sim {

constexpr unsigned kMaxThreads = 1024;
constexpr size_t kStackBytes = 128 * 1024;  // per fiber; WMMA tiles live on it
constexpr size_t kGuardBytes = 4096;        // below each stack: an overflow faults
constexpr unsigned kMaxAsyncCopies = 256;   // cp.async copies one thread may have pending
constexpr size_t kSlotBytes = 48;           // what one lane publishes to a warp operation
constexpr unsigned kMaxCluster = 8;         // blocks in a cluster (CUDA's portable limit)
constexpr unsigned kSpinPolls = 64;         // volatile accesses and atomics in a row: a spin
constexpr unsigned kMaxResident = 64;       // units one OS thread runs side by side
constexpr unsigned kStallRounds = 8;        // a unit's spinning turns before another unit joins

// AT_MBAR: blocked in an mbarrier wait until a phase completes (sim_hopper.h wakes it).
// AT_CLUSTER: in barrier.cluster.wait until every thread of the cluster has arrived.
// AT_NAMED: in bar.sync with a barrier id and thread count until that many have arrived.
// AT_WGMMA: in wgmma.wait_group until the other warps of its warpgroup have issued the wgmma
// it waits for (sim_hopper.h wakes it when one of them issues a wgmma or exits).
// AT_REGS: in setmaxnreg.inc until the block's register pool has what it asks for (a
// setmaxnreg.dec of another warpgroup wakes it).
enum State : unsigned char { READY, AT_BLOCK, AT_WARP, AT_MBAR, AT_CLUSTER, AT_NAMED, AT_WGMMA, AT_REGS, DONE };
inline const char *state_name(State s) {
    switch (s) {
        case READY: return "runnable";
        case AT_BLOCK: return "at __syncthreads";
        case AT_WARP: return "at a warp operation";
        case AT_MBAR: return "on an mbarrier";
        case AT_CLUSTER: return "at barrier.cluster.wait";
        case AT_NAMED: return "at a named barrier";
        case AT_WGMMA: return "in wgmma.wait_group";
        case AT_REGS: return "in setmaxnreg.inc";
        case DONE: return "exited";
    }
    return "?";
}
constexpr unsigned kNamedBarriers = 16;  // barrier ids 0 to 15 (PTX ISA 9.7.13.1)

struct Worker;
struct Cluster;
// The block's asynchronous units (mbarriers, TMA copies, wgmma), defined in sim_hopper.h, which
// cuda_runtime.h includes.
struct HopperState;
// Block start: resets the units and picks when TMA copies land from the block's seed.
inline void hopper_block_start(Worker &w, uint64_t seed);
// Nothing is runnable: lands the TMA copies in flight (which may complete mbarrier phases and
// wake their waiters). Returns whether anything landed.
inline bool hopper_progress(Worker &w);
// Every thread of the block has exited: fails on what the units still hold. (Static, not
// inline: gcc warns of `noinline` on an inline function declared before its definition, in
// every compile log.)
SIM_UNINSTRUMENTED static void hopper_block_end(Worker &w);
// A fiber has just switched out to the scheduler.
inline void hopper_switched(Worker &w);
// Appends the state of the mbarriers and wgmma threads wait on to a deadlock report.
inline void hopper_describe(Worker &w, char *out, size_t room);
// A fiber of the block has exited: threads waiting for its warp's wgmma look again, and the
// shared memory of a cluster's block whose threads have all exited is poisoned.
inline void hopper_exited(Worker &w, unsigned warp);
inline void hopper_free(Worker &w);

// One cp.async of one thread, issued but not complete: the source was read at issue (so a bad
// source faults at the instruction), the destination is written only when a wait completes
// its group. Until then shared memory keeps what it held: the poison, or an older tile.
struct AsyncCopy {
    unsigned char *dst;
    unsigned group;  // the commit group it belongs to (Fiber::async_groups when issued)
    unsigned bytes;  // cp-size: 4, 8 or 16
    unsigned char data[16];
};

struct Fiber {
    void *sp;
    uint3 tid;
    unsigned lane, warp;
    State state;
    unsigned char parity;      // which exchange buffer the next warp operation uses
    unsigned char bar_parity;  // same for __syncthreads_count and friends
    // cp.async state of this thread (per fiber: an OS thread runs a whole block).
    AsyncCopy *async;         // its kMaxAsyncCopies entries, oldest first
    unsigned async_pending;   // entries in use
    unsigned async_groups;    // groups committed so far; pending copies of the open group have this number
    unsigned memo_seq;        // warp_memo entries this thread has used in this block
    // barrier.cluster: whether the thread has arrived and not yet waited, and in which phase.
    bool cluster_arrived;
    unsigned cluster_phase;
    uint32_t proxy_fences;  // fence.proxy.async executed so far (only compared for equality)
    uint32_t fence_epoch;   // the block's race_epoch at this thread's last fence.proxy.async
    unsigned bulk_groups;   // cp.async.bulk.commit_group executed so far (TMA stores' groups)
    unsigned char named_id; // the named barrier a thread in AT_NAMED waits at
    // The bank model (sim_banks.h): switches to the scheduler so far (two accesses with one
    // in between are never one instruction), and whether an emulation is running in this
    // thread (what it reads is the instruction's business, reported by the emulation).
    unsigned switches;
    unsigned quiet;
    unsigned polls;  // volatile accesses and atomics since it last switched in (see poll)
    // A thread in AT_WARP: the mask it waits with, whether lanes of it that exit stop being
    // waited for (not for the .aligned instructions of warp_collective, which need all 32),
    // and whether the wait was completed by an exit, making this thread the one that delivers.
    unsigned wait_mask;
    bool wait_past_exits;
    bool deliver;
    // A write of shared bytes another thread wrote in the same interval (write after write),
    // judged once the store has landed (settle_write): the same bytes are no hazard, as when
    // every lane of a warp stores the warp's sum; other bytes are the race, as reported.
    bool waw_pending;
    unsigned char waw_n;
    uint16_t waw_other;  // the other writer (thread index + 1)
    const void *waw_other_pc;
    const void *waw_pc;  // this thread's write, which a report names rather than a later access
    size_t waw_cell;
    unsigned char waw_before[16];  // what the other thread's write left there
    // Inside an ldmatrix: a read of never-written bytes gives their NaN fill rather than
    // failing. The host compiler drops a C++ load whose value goes unused, but not the
    // emulation's call, and pipelined kernels load the next stage's fragments on their last
    // k-step too, never to use them; a fragment that is used carries the NaN to the output.
    bool fragment_load;
    // The code address of the plain shared-memory access being checked (sim_shared_access),
    // which a failure it raises names by its source line (fail).
    const void *access_pc;
    // The source line of the instruction an emulation runs (a WMMA load, an inline ldmatrix:
    // SourceSite), which a failure it raises names.
    const char *site_file;
    unsigned site_line;
};

struct Warp {
    unsigned present;  // lanes that exist (the last warp of a block may be partial)
    unsigned exited;   // lanes that have returned: a warp operation no longer waits for them
    unsigned arrived;
    // Per reading lane, 1 + the exited lane its last shuffle read (0: none), found by the lane
    // that delivered the values and reported by the reader itself.
    unsigned char read_exited[32];
    uint16_t epoch;    // warp-wide synchronizations so far (the race checker's order within a warp)
    // The warp's wgmma (by number) its wgmma.wait_group have completed: those before this one.
    uint16_t wgmma_done;
    alignas(16) unsigned char slot[2][32][kSlotBytes];  // double-buffered by Fiber::parity
    alignas(16) unsigned char result[2][32][16];        // per-lane results of a warp_collective
};

// The race checker's record of one byte of shared memory: the last access of one kind, by
// which thread (index + 1; 0: none) in which barrier interval and warp interval.
struct RaceMark {
    uint32_t epoch;
    uint16_t warp_epoch;
    uint16_t thread;
};
struct RaceCell {
    RaceMark write, read;
    uint32_t write_fences;  // the writer's proxy_fences when it wrote (the async-proxy check)
    // The code addresses of the two accesses, for a race's message (null: not the kernel's own
    // plain access: a copy landing, a wgmma's read).
    const void *write_pc, *read_pc;
};

struct Worker {
    Fiber fibers[kMaxThreads];
    Warp warps[kMaxThreads / 32];
    unsigned order[kMaxThreads];  // this block's schedule
    unsigned queue[kMaxThreads];  // ring of runnable fibers
    unsigned head, tail;
    unsigned spun[kMaxThreads];   // runnable fibers that yielded spinning, in this round
    unsigned n_spun;
    unsigned n, at_block, at_warp, exited;
    unsigned at_mbar;     // fibers in AT_MBAR
    unsigned at_cluster;  // fibers in AT_CLUSTER
    unsigned at_named;    // fibers in AT_NAMED
    unsigned at_wgmma;    // fibers in AT_WGMMA
    unsigned at_regs;     // fibers in AT_REGS
    // Named barriers: threads arrived in the current phase, and the count that phase expects.
    unsigned named_arrived[kNamedBarriers], named_expected[kNamedBarriers];
    bool named_whole[kNamedBarriers];  // the phase waits for the whole block (no count given)
    HopperState *hopper;  // allocated on first use by sim_hopper.h
    int bar_count[2];  // __syncthreads_count accumulators, by barrier parity
    unsigned bar_threads[2];  // the threads the last barrier of each parity released
    uint3 block_idx;
    dim3 block_dim, grid_dim;
    void *sched_sp;
    char *stacks;
    unsigned guarded;  // stacks [0, guarded) have their guard page set (see guard_stacks)
    AsyncCopy *async_copies;  // kMaxAsyncCopies per fiber, mapped on demand like the stacks
    char *dyn_smem;   // this block's dynamic shared memory: in the cluster's buffer (below)
    char *dyn_alloc;  // the buffer this worker owns: its cluster's blocks' dynamic memory
    size_t dyn_cap;
    // Its static __shared__ variables: this module's TLS block on this OS thread, or, where the
    // blocks of a cluster run together, the block's own copy of it in the cluster's buffer
    // (block_shared).
    char *static_smem;
    size_t static_smem_bytes;
    char *tls_base;  // this module's TLS block on this OS thread
    const SimLaunch *launch;
    SimResult *result;
    // racecheck (instrumented builds): a cell per byte of static then dynamic shared memory,
    // and the barrier interval, counted across blocks so that old cells never match.
    RaceCell *race;
    size_t race_cells;
    // Per byte of the same: the cp.async copies into it that have not landed (no wait of
    // their thread has completed them), which no thread may read or write meanwhile.
    unsigned char *async_cells;
    uint32_t race_epoch;
    uint32_t race_block_epoch;  // race_epoch when this block started: older marks are not its own
    // While the simulator runs a wgmma's part (sim_hopper.h): the reader its shared-memory
    // reads are recorded as (kWgmmaUnit + warpgroup) and the wgmma's number; 0 otherwise.
    uint16_t wgmma_reader, wgmma_seq;
    // warp_memo's entries, `memo_stride` bytes each; kept across blocks.
    unsigned char *memo;
    size_t memo_stride;
    Cluster *cluster;  // the unit it runs in (a cluster of one without __cluster_dims__)
    unsigned rank;     // its block's rank in the cluster (%cluster_ctarank)
    Worker *next_free;
};

// The watchdog's look at an OS thread: which thread ran at its first signal, how often that
// thread had switched out and polled by then, and the OS thread's CPU time. At a later one, a
// thread that has neither switched out nor polled since has looped without any
// synchronization or poll, but only once the OS thread has run long enough to tell: on a
// loaded machine it may have had no CPU between two signals (kStrikeCpuNs), and a thread that
// polls seldom may poll between later ones (kStrikeMax bounds the wait).
struct Strike {
    unsigned count;
    const Fiber *fiber;
    unsigned switches, polls;
    long long cpu_ns;
    // Volatile accesses and atomics on this OS thread (poll, in an instrumented build), and
    // their count at the first strike: threads that switch between strikes without one pass
    // barriers doing work, rather than wait on memory another thread should change.
    unsigned long polled, polled_at;
};
constexpr long long kStrikeCpuNs = 20000000;  // 20 ms of CPU: thousands of polls for a spin
constexpr unsigned kStrikeMax = 30;           // signals, 100 ms apart

// The blocks that run together as one unit: a thread block cluster, or a single block.
struct Cluster {
    Worker *cta[kMaxCluster];  // by rank
    unsigned size;
    unsigned phase;  // barrier.cluster phases completed
    sigjmp_buf *jmp;  // where a fault or a detected misuse ends the unit (its OS thread's run)
    int watchdog;     // the host's signal that ends a run past its time limit
    Strike *strike;   // its OS thread's
    unsigned first;   // the rank whose threads the scheduler runs first
    bool run_ahead;   // whether a block passes its own __syncthreads before the next block runs
};

// The runtime's thread-locals, beside the traffic hooks' state: everything else of this
// module's TLS block is the kernels' __shared__ memory, which is poisoned (and these two
// restored) at every block start. The linker may place them right after a kernel's array, so
// a guard no correct access touches comes first: an access past the array's end lands there
// and is reported (race_check), instead of overwriting the simulator's state.
constexpr size_t kTlsGuard = 256;
struct TlsLocals {
    unsigned char guard[kTlsGuard];
    Worker *worker;
    Fiber *fiber;
};
// Aligned to 1024 bytes, which aligns the whole TLS block: the static variables' window
// addresses follow their host addresses modulo 1024 (shared_regions), and a block the
// allocator placed anew for each launch's threads would otherwise move them, and every shared
// address a message gives, from one launch to the next.
alignas(1024) inline thread_local TlsLocals tl_locals{};
#define tl_worker (::sim::tl_locals.worker)
#define tl_fiber (::sim::tl_locals.fiber)

inline Worker &worker() { return *tl_worker; }
inline Fiber &fiber() { return *tl_fiber; }

// The calling thread's index in its block's fibers (its linear thread index).
inline unsigned fiber_index() { return (unsigned)(tl_fiber - tl_worker->fibers); }

inline void push_ready(Worker &w, unsigned i) {
    w.fibers[i].state = READY;
    w.queue[w.tail++ % kMaxThreads] = i;
}

// Puts fiber i first in line, before the fibers already waiting to run (the eager schedules
// of sim_hopper.h: a warp that resumes runs ahead of the others).
inline void push_front(Worker &w, unsigned i) {
    w.fibers[i].state = READY;
    w.queue[--w.head % kMaxThreads] = i;
}

inline void settle_write(Worker &w, Fiber &f);

inline void yield_to_scheduler() {
    Fiber *f = tl_fiber;
    if (f->waw_pending) settle_write(*tl_worker, *f);
#ifdef SIM_INSTRUMENTED
    sim_global_settle();
#endif
    f->switches++;
    f->polls = 0;
    sim_ctx_switch(&f->sp, tl_worker->sched_sp);
}

// The calling thread waits for another to change memory (__nanosleep, or a spin found by
// poll): it runs again after the block's other runnable threads have had their turn.
inline void spin_yield() {
    Worker &w = *tl_worker;
    w.spun[w.n_spun++] = (unsigned)(tl_fiber - w.fibers);
    yield_to_scheduler();
}

// A strong load or an atomic: what a loop waiting for another thread repeats. Threads switch
// only at synchronizations, so such a loop would never let the thread it waits for run; after
// kSpinPolls in a row the thread yields. Not inside an emulated instruction (`quiet`). The
// instrumented build's hooks call it (sim_traffic.h: volatile accesses, atomics, which inline
// PTX's strong loads are); a plain build yields only at __nanosleep.
SIM_UNINSTRUMENTED inline void poll() {
    Fiber *f = tl_fiber;
    if (!f || f->quiet) return;
    if (Worker *w = tl_worker; w->cluster && w->cluster->strike) w->cluster->strike->polled++;
    if (++f->polls < kSpinPolls) return;
    spin_yield();
}

inline void cluster_release_if_complete(Cluster &c);
inline bool named_complete(const Worker &w, unsigned id);
inline void named_release(Worker &w, unsigned id);
inline bool cluster_has_waiters(const Cluster &c);
inline void warp_lane_exited(Worker &w, const Fiber &f);

[[noreturn]] inline void fiber_main() {
    Worker &w = *tl_worker;
    w.launch->thunk(w.launch->args);
    tl_fiber->state = DONE;
    w.exited++;
    warp_lane_exited(w, *tl_fiber);
    hopper_exited(w, tl_fiber->warp);
    // Nor a barrier of the whole block with an id (__syncthreads' is the scheduler's to release).
    for (unsigned id = 0; id < kNamedBarriers; ++id)
        if (named_complete(w, id)) named_release(w, id);
    // An exiting thread no longer holds up a cluster barrier (PTX ISA, exit).
    if (cluster_has_waiters(*w.cluster)) cluster_release_if_complete(*w.cluster);
    yield_to_scheduler();
    __builtin_unreachable();
}

// ---- Barriers ----

inline void syncthreads() {
    Worker &w = worker();
    Fiber &f = fiber();
    f.state = AT_BLOCK;
    f.bar_parity ^= 1;
    w.at_block++;
    yield_to_scheduler();
}

// The lanes a warp operation of `lane` with `mask` waits for: those of the mask that exist and,
// unless `past_exits` is false, have not exited (CUDA: "all non-exited threads named in mask").
inline unsigned warp_expect(const Warp &wp, unsigned mask, unsigned lane, bool past_exits) {
    return (mask & wp.present & (past_exits ? ~wp.exited : ~0u)) | (1u << lane);
}

// Waits until every lane of `mask` that exists and has not exited has arrived. The last lane
// to arrive releases the others and carries on without a switch: it returns true, and until it
// next switches no other lane of the warp has run since the warp was complete. A wait that the
// exit of its last missing lane completes makes its lowest lane the one that returns true,
// running first (warp_lane_exited). `front`: the released lanes run next, before other warps.
// `past_exits` false: a lane that exits is still waited for (a deadlock), for the .aligned
// instructions that need every lane.
inline bool warp_wait(unsigned mask, bool front = false, bool past_exits = true) {
    Worker &w = worker();
    Fiber &f = fiber();
    Warp &wp = w.warps[f.warp];
    unsigned expect = warp_expect(wp, mask, f.lane, past_exits);
    f.switches++;  // a lane that completes the warp goes on without a switch
    wp.arrived |= 1u << f.lane;
    if ((wp.arrived & expect) == expect) {
        // Only the lanes of this mask: lanes of another (a tile of the same warp) that wait
        // for their own partners stay.
        unsigned others = wp.arrived & expect & ~(1u << f.lane);
        wp.arrived &= ~expect;
        wp.epoch++;
        for (unsigned l = 0; l < 32; ++l)
            if (others & (1u << l)) {
                w.at_warp--;
                if (front) push_front(w, f.warp * 32 + l);
                else push_ready(w, f.warp * 32 + l);
            }
        return true;
    }
    f.state = AT_WARP;
    f.wait_mask = mask;
    f.wait_past_exits = past_exits;
    w.at_warp++;
    yield_to_scheduler();
    if (!f.deliver) return false;
    f.deliver = false;
    return true;
}

// A lane has exited: each wait of its warp that waited only for it is complete. Its lowest lane
// delivers, as the last lane to arrive does in warp_wait, so it runs first.
inline void warp_lane_exited(Worker &w, const Fiber &f) {
    Warp &wp = w.warps[f.warp];
    wp.exited |= 1u << f.lane;
    for (unsigned l = 0; l < 32; ++l) {
        const Fiber &waiter = w.fibers[f.warp * 32 + l];
        if (!(wp.arrived & (1u << l)) || waiter.state != AT_WARP || !waiter.wait_past_exits) continue;
        const unsigned expect = warp_expect(wp, waiter.wait_mask, l, true);
        if ((wp.arrived & expect) != expect) continue;
        wp.arrived &= ~expect;
        wp.epoch++;
        w.fibers[f.warp * 32 + l].deliver = true;
        w.at_warp--;
        push_ready(w, f.warp * 32 + l);
        for (unsigned k = 0; k < 32; ++k)
            if (k != l && (expect & (1u << k))) {
                w.at_warp--;
                push_ready(w, f.warp * 32 + k);
            }
    }
}

// The parity of the exchange buffers lane `l` of the calling thread's warp used for the warp
// operation it waits in (or, for the calling lane, has just published to). Lanes of one
// operation may have done different numbers of warp operations before it: tiles of a warp
// whose code diverged.
inline unsigned published_parity(Worker &w, unsigned l) {
    return w.fibers[fiber().warp * 32 + l].parity ^ 1;
}

// Ends the block with an error (defined below, with the misuse the emulation detects).
[[noreturn]] inline void fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

[[noreturn]] inline void fail_read_exited(unsigned lane, unsigned src) {
    fail("a warp shuffle of lane %u reads lane %u, which has exited without reaching it (it returned early, or "
         "skipped the branch that holds the shuffle: a full mask inside `if (lane < n)` names lanes that never "
         "get there); a GPU gives an undefined value: bring every lane of the mask to the shuffle (guard the work "
         "around it, not the shuffle or the return), or pass the mask of the lanes that take the branch "
         "(__ballot_sync before it) and leave the others out of the reduction",
         lane, src);
}

// Publishes `v` to the warp, waits for the lanes of `mask`, then reads lane `src`'s value
// (or returns `v` itself when `src` is out of range: -1, as the shuffles pass it). A source
// lane absent, exited or outside the mask fails the block. The last lane to arrive delivers
// every lane's value while the others still wait: read later, a source's slot could already
// hold what it published for a next operation that the reader takes no part in (a tile of 8
// lanes going on while the tile of 16 that contains it waits).
template <class T_>
inline T_ warp_exchange(unsigned mask, T_ v, int src) {
    static_assert(sizeof(T_) <= 16, "warp shuffles move at most 16 bytes");
    Worker &w = worker();
    Fiber &f = fiber();
    Warp &wp = w.warps[f.warp];
    unsigned p = f.parity;
    f.parity ^= 1;
    memcpy(wp.slot[p][f.lane], &v, sizeof(T_));
    memcpy(wp.slot[p][f.lane] + 16, &src, sizeof src);
    // A value read from a lane that takes no part in the shuffle is undefined on a GPU (the
    // simulator would hand back the reader's own): one the block does not have (its last warp
    // is partial), one the mask leaves out, or one that has exited (now, or before the lanes
    // it waits for arrive: found by the lane that delivers).
    if (src >= 0 && src < 32 && (unsigned)src != f.lane && (wp.exited & (1u << src)))
        fail_read_exited(f.lane, (unsigned)src);
    if (src >= 0 && src < 32 && (unsigned)src != f.lane && !(mask & wp.present & (1u << src))) {
        const unsigned size = w.n - f.warp * 32u < 32u ? w.n - f.warp * 32u : 32u;
        if (!(wp.present & (1u << src)) && size == 1)
            fail("a warp shuffle reads lane %d, which this warp does not have (a block of %u thread%s: warp %u has "
                 "lane 0 alone); a GPU gives an undefined value: keep the source lane inside the warp, or launch "
                 "whole warps",
                 src, w.n, w.n == 1 ? "" : "s", f.warp);
        if (!(wp.present & (1u << src)))
            fail("a warp shuffle reads lane %d, which this warp does not have (a block of %u threads: warp %u has "
                 "lanes 0 to %u); a GPU gives an undefined value: keep the source lane inside the warp, or launch "
                 "whole warps",
                 src, w.n, f.warp, size - 1);
        fail("a warp shuffle reads lane %d, which the shuffle's mask leaves out; a GPU gives an undefined value (a "
             "lane only reads from lanes that take part)",
             src);
    }
    if (warp_wait(mask)) {
        const unsigned lanes = warp_expect(wp, mask, f.lane, true);
        for (unsigned l = 0; l < 32; ++l) {
            if (!(lanes & (1u << l))) continue;
            const unsigned q = published_parity(w, l);
            int s;
            memcpy(&s, wp.slot[q][l] + 16, sizeof s);
            const bool valid = s >= 0 && s < 32 && (wp.present & mask & (1u << s));
            if (valid && (unsigned)s != l && (wp.exited & (1u << s))) wp.read_exited[l] = (unsigned char)(s + 1);
            memcpy(wp.result[q][l], valid ? wp.slot[published_parity(w, (unsigned)s)][s] : wp.slot[q][l], 16);
        }
    }
    if (wp.read_exited[f.lane]) fail_read_exited(f.lane, wp.read_exited[f.lane] - 1u);
    T_ out;
    memcpy(&out, wp.result[p][f.lane], sizeof(T_));
    return out;
}

// `took_part`, if given: the lanes whose predicates the ballot holds (those of the mask that
// had not exited when it completed), for __all_sync and elect.sync.
inline unsigned ballot(unsigned mask, int pred, unsigned *took_part = nullptr) {
    Worker &w = worker();
    Fiber &f = fiber();
    Warp &wp = w.warps[f.warp];
    unsigned p = f.parity;
    f.parity ^= 1;
    wp.slot[p][f.lane][0] = pred != 0;
    if (warp_wait(mask)) {  // delivered by the last lane, as in warp_exchange
        unsigned bits = 0, lanes = mask & wp.present & ~wp.exited;
        for (unsigned l = 0; l < 32; ++l)
            if ((lanes & (1u << l)) && wp.slot[published_parity(w, l)][l][0]) bits |= 1u << l;
        lanes |= 1u << f.lane;
        for (unsigned l = 0; l < 32; ++l)
            if (lanes & (1u << l)) {
                memcpy(wp.result[published_parity(w, l)][l], &bits, sizeof bits);
                memcpy(wp.result[published_parity(w, l)][l] + 4, &lanes, sizeof lanes);
            }
    }
    unsigned bits;
    memcpy(&bits, wp.result[p][f.lane], sizeof bits);
    if (took_part) memcpy(took_part, wp.result[p][f.lane] + 4, sizeof *took_part);
    return bits;
}

// Whether the calling lane is its warp's first: it reports what the warp's lanes, each
// emulating a whole warp-wide instruction, did once for all.
inline bool warp_reporter() {
    Fiber &f = fiber();
    return f.lane == (unsigned)__builtin_ctz(worker().warps[f.warp].present);
}

// Scratch for emulations in which every lane computes the same warp-wide result (WMMA's
// mma_sync holds the whole tiles in every lane): the first lane stores its inputs and result
// in an entry, and a lane that finds the same input bytes there copies the result instead of
// computing it again. A lane runs until it blocks, so lane 0 may issue many operations before
// lane 1 issues its first: each warp has kMemoEntries entries, and a thread's n-th operation
// in a block uses entry n mod kMemoEntries, the one its warp's other lanes used for their n-th.
// Entries are matched on every input byte, so a stale or foreign entry is only a miss.
// Returns the entry (at least `bytes` bytes), or null when out of memory: the caller computes.
constexpr unsigned kMemoEntries = 64;
inline unsigned char *warp_memo(size_t bytes) {
    Worker &w = worker();
    Fiber &f = fiber();
    if (bytes > w.memo_stride) {  // growing forgets every entry
        free(w.memo);
        w.memo = (unsigned char *)calloc((size_t)kMaxThreads / 32 * kMemoEntries, bytes);
        w.memo_stride = w.memo ? bytes : 0;
        if (!w.memo) return nullptr;
    }
    size_t entry = (size_t)f.warp * kMemoEntries + f.memo_seq++ % kMemoEntries;
    return w.memo + entry * w.memo_stride;
}

// ---- Misuse the emulation detects ----

// A source file's name as messages show it: a simulator or lab header reads as included
// (compile.rs maps the folder the build writes them to to `.`).
inline const char *shown_file(const char *file) {
    while (file[0] == '.' && file[1] == '/') file += 2;
    return file;
}

// Ends the block with `fmt` as the error, naming the kernel, the block and the thread (an
// instruction used the way no GPU accepts: a misaligned ldmatrix row, a global address where
// shared memory must be). Never returns.
// The access the calling thread is making, for a message: " {{site OFFSET}}" (its code by
// offset in this module, whose line the host names: kernel/src/sim/site.rs), or the line of
// the instruction an emulation is running, or nothing.
inline void access_site(char *site, size_t room) {
    site[0] = 0;
    Dl_info module;
    if (const void *pc = tl_fiber->access_pc; pc && dladdr(pc, &module) && module.dli_fbase)
        snprintf(site, room, " {{site 0x%lx}}", (unsigned long)((uintptr_t)pc - 1 - (uintptr_t)module.dli_fbase));
    else if (tl_fiber->site_file)
        snprintf(site, room, "; this thread's access is at %s:%u", shown_file(tl_fiber->site_file),
                 tl_fiber->site_line);
}

inline void fail(const char *fmt, ...) {
    Worker &w = worker();
    char what[768];  // the message, leaving room in SimResult::message for the kernel and thread
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    if (!tl_fiber) {  // the scheduler's own check (a copy landing, the block's end)
        snprintf(w.result->message, sizeof w.result->message, "%s: %s (block (%u,%u,%u))", w.launch->kernel, what,
                 w.block_idx.x, w.block_idx.y, w.block_idx.z);
        siglongjmp(*w.cluster->jmp, 2);
    }
    uint3 t = tl_fiber->tid;
    // The access that failed a check, by its offset in this module: the host names its line
    // (kernel/src/sim/site.rs); or the instruction an emulation was running, by its line.
    char site[192];
    access_site(site, sizeof site);
    tl_fiber->access_pc = nullptr;
    tl_fiber->site_file = nullptr;
    snprintf(w.result->message, sizeof w.result->message, "%s: %s%s (thread (%u,%u,%u) of block (%u,%u,%u))",
             w.launch->kernel, what, site, t.x, t.y, t.z, w.block_idx.x, w.block_idx.y, w.block_idx.z);
    siglongjmp(*w.cluster->jmp, 2);
}

// The emulation of an instruction of the kernel's source (a WMMA load, an inline ldmatrix),
// from its call's file and line (`__builtin_FILE()`, `__builtin_LINE()`, which `#line` keeps
// the kernel file's): a failure while it runs names that line.
struct SourceSite {
    SourceSite(const char *file, unsigned line) {
        if (Fiber *f = tl_fiber) f->site_file = file, f->site_line = line;
    }
    ~SourceSite() {
        if (Fiber *f = tl_fiber) f->site_file = nullptr;
    }
    SourceSite(const SourceSite &) = delete;
    SourceSite &operator=(const SourceSite &) = delete;
};

// The file and line of a call, as written: the defaulted last parameter of a lab header's
// function (lab/hopper.h) or of __syncthreads(), which then names its caller's line (a
// SourceSite) in a failure or a deadlock.
struct Caller {
    const char *file;
    unsigned line;
    Caller(const char *f = __builtin_FILE(), unsigned l = __builtin_LINE()) : file(f), line(l) {}
};

// While an instruction issued earlier runs (a wgmma at the wait that covers it), a failure
// names the line it was issued at (when known) rather than the caller's.
struct IssuedAt {
    IssuedAt(const char *file, unsigned line) : f(tl_fiber) {
        if (!f) return;
        file0 = f->site_file, line0 = f->site_line;
        if (file) f->site_file = file, f->site_line = line;
    }
    ~IssuedAt() {
        if (f) f->site_file = file0, f->site_line = line0;
    }
    IssuedAt(const IssuedAt &) = delete;
    IssuedAt &operator=(const IssuedAt &) = delete;

  private:
    Fiber *f;
    const char *file0 = nullptr;
    unsigned line0 = 0;
};

// The grid barrier of a cooperative launch, null for any other launch.
SIM_UNINSTRUMENTED inline SimGrid *grid_barrier() { return tl_worker->launch->grid_sync; }

// A block's arrival at the grid barrier (by one of its threads, after the block's barrier):
// the phase it arrived in. The last block to arrive completes the phase. For the race checker
// of global memory it is what CUDA's grid.sync() does: a fence, then an atomic on the counter.
SIM_UNINSTRUMENTED inline unsigned long long grid_arrive(SimGrid *g) {
    const unsigned *n = tl_worker->launch->grid;
    const unsigned long long blocks = (unsigned long long)n[0] * n[1] * n[2];
    SIM_GLOBAL_FENCE();
    SIM_GLOBAL_ATOMIC(&g->arrived);
    const unsigned long long phase = __atomic_load_n(&g->phase, __ATOMIC_ACQUIRE);
    if (__atomic_add_fetch(&g->arrived, 1, __ATOMIC_ACQ_REL) == blocks) {
        __atomic_store_n(&g->arrived, 0, __ATOMIC_RELAXED);
        __atomic_store_n(&g->phase, phase + 1, __ATOMIC_RELEASE);
    }
    return phase;
}

// Waits until `phase` of the grid barrier has completed: every block of the grid, resident at
// once as a cooperative launch guarantees, yields to the others until then. A block that exits
// without arriving leaves the phase incomplete for ever (a GPU hangs): the waiting block fails
// instead, saying how many did.
SIM_UNINSTRUMENTED inline void grid_wait(SimGrid *g, unsigned long long phase) {
    const unsigned *n = tl_worker->launch->grid;
    const unsigned long long blocks = (unsigned long long)n[0] * n[1] * n[2];
    while (__atomic_load_n(&g->phase, __ATOMIC_ACQUIRE) == phase) {
        const unsigned long long exited = __atomic_load_n(&g->exited, __ATOMIC_ACQUIRE);
        if (exited && __atomic_load_n(&g->arrived, __ATOMIC_ACQUIRE) + exited >= blocks &&
            __atomic_load_n(&g->phase, __ATOMIC_ACQUIRE) == phase)
            fail("grid.sync(): %llu of the grid's %llu blocks exited without arriving, so the barrier can never "
                 "complete (a GPU would hang here): every block must reach every grid.sync()",
                 exited, blocks);
        spin_yield();
    }
    SIM_GLOBAL_FENCE();  // acquires what every block released to the counter
}

// The running block's instance of a static __shared__ variable `v` (a thread-local), which the
// simulator's copy of a source names where its kernels run in clusters (compile.rs,
// per_block_shared): the block's copy of the TLS block holds it at the offset the TLS block
// does. Elsewhere the copy is the TLS block itself.
template <class T_>
SIM_UNINSTRUMENTED_INLINE T_ &block_shared(T_ &v) {
    const Worker &w = *tl_worker;
    return *reinterpret_cast<T_ *>(w.static_smem + ((uintptr_t)&v - (uintptr_t)w.tls_base));
}

// Whether [p, p + bytes) lies in this block's shared memory (static or dynamic).
inline bool in_shared_of(const Worker &o, const void *p, size_t bytes);
inline bool is_shared(const void *p, size_t bytes) { return in_shared_of(worker(), p, bytes); }

// ---- Named barriers ----

// bar.sync / barrier.sync (wait) and bar.arrive / barrier.arrive (not) on barrier `id` with a
// thread count (PTX ISA 9.7.13.1): the phase completes when `count` threads have arrived, and
// the threads waiting at it run again. `count` 0: every thread of the block. Arrivals are
// counted per thread, as sm_70 and later do. The race checker orders everything before the
// completion with everything after it, in every thread of the block: a named barrier orders
// only its participants, so this can miss a race, never invent one.
// A barrier for the whole block does not wait for threads that have exited (PTX ISA, exit),
// as __syncthreads() does not: it completes when every thread left has arrived.
inline bool named_complete(const Worker &w, unsigned id) {
    const unsigned arrived = w.named_arrived[id];
    return arrived && (arrived == w.named_expected[id] || (w.named_whole[id] && arrived + w.exited >= w.n));
}

inline void named_release(Worker &w, unsigned id) {
    w.named_arrived[id] = 0;
    w.race_epoch++;
    for (unsigned k = 0; k < w.n; ++k) {
        unsigned i = w.order[k];
        if (w.fibers[i].state == AT_NAMED && w.fibers[i].named_id == id) {
            w.at_named--;
            push_ready(w, i);
        }
    }
}

inline void named_barrier(unsigned id, unsigned count, bool wait, const char *what) {
    Worker &w = worker();
    Fiber &f = fiber();
    const unsigned threads = (w.n + 31) / 32 * 32;
    if (id >= kNamedBarriers) fail("%s: barrier %u; a block has barriers 0 to %u", what, id, kNamedBarriers - 1);
    const bool whole = count == 0;
    if (whole) count = threads;
    if (count % 32 || count > threads)
        fail("%s: a count of %u threads; it must be a multiple of the warp size, at most the block's %u", what,
             count, threads);
    if (w.named_arrived[id] == 0) w.named_expected[id] = count, w.named_whole[id] = whole;
    else if (w.named_expected[id] != count)
        fail("%s: barrier %u with a count of %u threads while %u threads wait there with a count of %u", what, id,
             count, w.named_arrived[id], w.named_expected[id]);
    ++w.named_arrived[id];
    if (named_complete(w, id)) {
        named_release(w, id);
        f.switches++;  // like warp_wait's last lane, the completing thread goes on
        return;
    }
    if (!wait) return;
    f.state = AT_NAMED;
    f.named_id = (unsigned char)id;
    w.at_named++;
    yield_to_scheduler();
}

// ---- Thread block clusters (PTX ISA 9.7.13.2, 9.7.9.23) ----

// The block of rank `rank` in the calling thread's cluster.
inline Worker &cluster_block(unsigned rank, const char *what) {
    Cluster &c = *worker().cluster;
    if (rank >= c.size) fail("%s: rank %u, in a cluster of %u block(s)", what, rank, c.size);
    return *c.cta[rank];
}

// Whether [p, p + bytes) lies in block `o`'s shared memory: its static __shared__ variables
// (its own copy, in a cluster) or its dynamic buffer.
inline bool in_shared_of(const Worker &o, const void *p, size_t bytes) {
    const char *c = (const char *)p;
    auto inside = [&](const char *lo, size_t n) { return lo && c >= lo && c + bytes <= lo + n; };
    return inside(o.static_smem, o.static_smem_bytes) || inside(o.dyn_smem, o.launch->dynamic_smem);
}

// mapa: the address in block `rank`'s shared memory of what `p` addresses in the calling
// block's, static __shared__ variables (each block of a cluster has its own copy) or dynamic.
inline void *cluster_map(const void *p, unsigned rank, const char *what) {
    Worker &w = worker();
    Worker &to = cluster_block(rank, what);
    const char *c = (const char *)p;
    if (w.dyn_smem && c >= w.dyn_smem && c < w.dyn_smem + w.launch->dynamic_smem)
        return to.dyn_smem + (c - w.dyn_smem);
    if (w.static_smem && c >= w.static_smem && c < w.static_smem + w.static_smem_bytes)
        return to.static_smem + (c - w.static_smem);
    fail("%s: %p is not in this block's shared memory", what, p);
}

// The block of the calling thread's cluster whose shared memory holds [p, p + bytes): its own
// or another's; null when none does.
inline Worker *shared_owner(const void *p, size_t bytes) {
    Worker &w = worker();
    if (is_shared(p, bytes)) return &w;
    Cluster &cl = *w.cluster;
    for (unsigned r = 0; r < cl.size; ++r)
        if (in_shared_of(*cl.cta[r], p, bytes)) return cl.cta[r];
    return nullptr;
}

// What another block of the cluster does to `to` needs `to` to be running: on a GPU the
// shared memory of a block whose threads have all exited may already belong to another block.
inline void require_running(Worker &to, const char *what) {
    if (&to != tl_worker && to.exited == to.n)
        fail("%s targets block (%u,%u,%u) of the cluster, whose threads have all exited (its shared memory is "
             "gone: end both blocks with a cluster barrier)",
             what, to.block_idx.x, to.block_idx.y, to.block_idx.z);
}

// barrier.cluster: a phase completes when every thread of the cluster that has not exited
// has arrived; the threads waiting in it then run again, after everything the cluster did
// before (a new race-check interval in every block).
inline void cluster_release_if_complete(Cluster &c) {
    bool any = false;
    for (unsigned r = 0; r < c.size; ++r) {
        Worker &w = *c.cta[r];
        for (unsigned i = 0; i < w.n; ++i) {
            const Fiber &f = w.fibers[i];
            bool arrived = f.cluster_arrived && f.cluster_phase == c.phase;
            if (f.state != DONE && !arrived) return;
            any |= arrived;
        }
    }
    if (!any) return;
    c.phase++;
    for (unsigned r = 0; r < c.size; ++r) {
        Worker &w = *c.cta[r];
        w.race_epoch++;
        for (unsigned k = 0; k < w.n; ++k) {
            unsigned i = w.order[k];
            if (w.fibers[i].state == AT_CLUSTER) {
                w.at_cluster--;
                push_ready(w, i);
            }
        }
    }
}

// Where a unit that had to stop was (the watchdog, or the host asking): the first of its
// threads still running, in `res`.
inline void name_running(const Cluster &c, SimResult *res) {
    for (unsigned k = 0; k < c.size; ++k) {
        const Worker &w = *c.cta[k];
        for (unsigned i = 0; i < w.n; ++i) {
            if (w.fibers[i].state == DONE) continue;
            res->block[0] = w.block_idx.x;
            res->block[1] = w.block_idx.y;
            res->block[2] = w.block_idx.z;
            res->has_thread = 1;
            res->spinning = 1;  // every thread it has yields, spinning or waiting on one that does
            res->thread[0] = w.fibers[i].tid.x;
            res->thread[1] = w.fibers[i].tid.y;
            res->thread[2] = w.fibers[i].tid.z;
            return;
        }
    }
}

inline bool cluster_has_waiters(const Cluster &c) {
    for (unsigned r = 0; r < c.size; ++r)
        if (c.cta[r]->at_cluster) return true;
    return false;
}

// barrier.cluster.arrive
inline void cluster_arrive() {
    Fiber &f = fiber();
    Cluster &c = *worker().cluster;
    if (f.cluster_arrived)
        fail("barrier.cluster.arrive twice without a barrier.cluster.wait between them (PTX ISA 9.7.13.2)");
    f.cluster_arrived = true;
    f.cluster_phase = c.phase;
    cluster_release_if_complete(c);
}

// barrier.cluster.wait: until the phase the thread arrived in has completed.
inline void cluster_wait() {
    Fiber &f = fiber();
    Worker &w = worker();
    if (!f.cluster_arrived) fail("barrier.cluster.wait without a barrier.cluster.arrive before it (PTX ISA 9.7.13.2)");
    cluster_release_if_complete(*w.cluster);  // threads that exited since the arrival count too
    if (f.cluster_phase == w.cluster->phase) {
        f.state = AT_CLUSTER;
        w.at_cluster++;
        yield_to_scheduler();
    }
    f.cluster_arrived = false;
}

// ---- racecheck (instrumented builds) ----
//
// Two accesses to the same byte of shared memory by different threads, at least one a write,
// race unless something orders them: a __syncthreads() (or a completed mbarrier phase: both
// start a new barrier interval of the whole block) or, for two lanes of one warp, a warp-wide
// synchronization (__syncwarp, a shuffle, a vote, a warp-wide instruction). Each byte keeps
// its last write and one read (the last, unless an earlier one is unordered with it); an
// access is checked against both. Keeping one read can miss a race, never invent one.
// Atomics are not checked.

// Whether two accesses are ordered: `m` earlier, by thread `m.thread - 1`; the current one by
// thread `me - 1` of warp `warp` in interval `epoch`, warp interval `warp_epoch`.
// The writer of what the block's asynchronous units (TMA) land: ordered with every thread by
// the mbarrier the copy completes.
constexpr uint16_t kAsyncUnit = 0xFFFF;
// The reader of a wgmma's operands: the warpgroup's one operation (kWgmmaUnit + warpgroup),
// with the wgmma's number in the mark's warp_epoch. It has read them for all four warps once
// any wait covers it, so a thread is ordered after those reads by its own warp's wait (or by
// a barrier after the read), not by a wait of another warp of its warpgroup.
constexpr uint16_t kWgmmaUnit = 0xFFF0;

SIM_UNINSTRUMENTED_INLINE bool is_wgmma_reader(uint16_t thread) { return thread >= kWgmmaUnit && thread < kAsyncUnit; }

SIM_UNINSTRUMENTED_INLINE bool race_ordered(const RaceMark &m, uint32_t epoch, uint16_t me, unsigned warp, uint16_t warp_epoch,
                                            uint16_t wgmma_done) {
    if (m.thread == 0 || m.thread == kAsyncUnit || m.thread == me || m.epoch != epoch) return true;
    if (is_wgmma_reader(m.thread))
        return warp / 4 == (unsigned)(m.thread - kWgmmaUnit) && (int16_t)(wgmma_done - m.warp_epoch) > 0;
    return (unsigned)(m.thread - 1) / 32 == warp && m.warp_epoch != warp_epoch;
}

// Names the `__shared__` variable at `offset` of this module's TLS block (where they live) from
// the module's symbol table: "As in tiled<false>, byte 12". Empty when it cannot tell.
inline void shared_variable_at(size_t offset, char *out, size_t room, bool *compiler_state = nullptr) {
    out[0] = 0;
    if (compiler_state) *compiler_state = false;
    Dl_info self;
    if (!dladdr((void *)&shared_variable_at, &self) || !self.dli_fname) return;
    int fd = open(self.dli_fname, O_RDONLY);
    if (fd < 0) return;
    struct stat st;
    void *map = fstat(fd, &st) == 0 ? mmap(nullptr, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0) : MAP_FAILED;
    close(fd);
    if (map == MAP_FAILED) return;
    const char *base = (const char *)map;
    const auto *eh = (const Elf64_Ehdr *)base;
    const auto *sh = (const Elf64_Shdr *)(base + eh->e_shoff);
    for (unsigned i = 0; i < eh->e_shnum && !out[0]; ++i) {
        if (sh[i].sh_type != SHT_SYMTAB) continue;
        const auto *sym = (const Elf64_Sym *)(base + sh[i].sh_offset);
        const char *names = base + sh[sh[i].sh_link].sh_offset;
        for (size_t k = 0; k < sh[i].sh_size / sizeof(Elf64_Sym); ++k) {
            if (ELF64_ST_TYPE(sym[k].st_info) != STT_TLS) continue;
            if (offset < sym[k].st_value || offset >= sym[k].st_value + sym[k].st_size) continue;
            const char *mangled = names + sym[k].st_name;
            // A guard variable (_ZGV...) of a static the compiler initializes at run time: the
            // runtime's state, not the kernel's shared memory.
            if (compiler_state) *compiler_state = strncmp(mangled, "_ZGV", 4) == 0;
            int status = 0;
            char *plain = abi::__cxa_demangle(mangled, nullptr, nullptr, &status);
            const char *name = status == 0 && plain ? plain : mangled;
            // "f<...>(args)::As" (or "f::As" for an extern "C" f) reads as "'As' (in f<...>)".
            const char *var = strrchr(name, ':'), *paren = strchr(name, '(');
            // The name a kernel's source gives it, without the prefix of its per-block rewrite.
            const char *shown = var ? var + 1 : name;
            if (strncmp(shown, "__sim_shared_", 13) == 0) shown += 13;
            const char *owner_end = paren && var && paren < var ? paren : var ? var - 1 : nullptr;
            if (owner_end && owner_end > name)
                snprintf(out, room, "'%s' (in %.*s), byte %zu", shown, (int)(owner_end - name), name,
                         offset - (size_t)sym[k].st_value);
            else
                snprintf(out, room, "'%s', byte %zu", shown, offset - (size_t)sym[k].st_value);
            free(plain);
            break;
        }
    }
    munmap(map, (size_t)st.st_size);
}

inline void describe_shared(Worker &w, size_t cell, char *where, size_t room);

[[noreturn]] inline void race_report(Worker &w, size_t cell, bool write, const RaceMark &other, bool other_write,
                                     const void *other_pc) {
    char where[200];
    describe_shared(w, cell, where, sizeof where);
    // The other access by its offset in this module, which the host names by its line
    // (kernel/src/sim/site.rs), as it does this thread's.
    char at[64] = "";
    Dl_info module;
    if (other_pc && dladdr(other_pc, &module) && module.dli_fbase)
        snprintf(at, sizeof at, " {{other 0x%lx}}", (unsigned long)((uintptr_t)other_pc - 1 - (uintptr_t)module.dli_fbase));
    if (is_wgmma_reader(other.thread)) {
        const unsigned g = other.thread - kWgmmaUnit;
        fail("race on shared memory: this thread %s %s, which warpgroup %u's wgmma.mma_async (its warps' wgmma "
             "number %u) reads, and neither a wgmma.wait_group of this thread's warp covering that wgmma nor a "
             "barrier after it orders this access after the read (a GPU may still be reading it)",
             write ? "writes" : "reads", where, g, (unsigned)other.warp_epoch);
    }
    const Fiber &o = w.fibers[other.thread - 1];
    fail("race on shared memory: this thread %s %s, which thread (%u,%u,%u) %s%s in the same barrier interval, "
         "with no __syncthreads(), __syncwarp() or mbarrier wait between them (a GPU runs them in any order)",
         write ? "writes" : "reads", where, o.tid.x, o.tid.y, o.tid.z, other_write ? "wrote" : "read", at);
}

// A thread's pending write after write (Fiber::waw_pending), now that its store has landed:
// the bytes the other thread wrote, written again, are no hazard; others are the race.
inline void settle_write(Worker &w, Fiber &f) {
    f.waw_pending = false;
    const char *p = f.waw_cell < w.static_smem_bytes ? w.static_smem + f.waw_cell
                                                       : w.dyn_smem + (f.waw_cell - w.static_smem_bytes);
    if (memcmp(p, f.waw_before, f.waw_n) != 0) {
        f.access_pc = f.waw_pc;
        race_report(w, f.waw_cell, true, RaceMark{0, 0, f.waw_other}, true, f.waw_other_pc);
    }
}

// A block starts: cells for all of its shared memory, none of them marked in this interval.
inline void race_block_start(Worker &w) {
    size_t need = w.static_smem_bytes + w.launch->dynamic_smem;
    if (need > w.race_cells) {
        free(w.race);
        free(w.async_cells);
        w.race = (RaceCell *)calloc(need, sizeof(RaceCell));
        w.async_cells = (unsigned char *)malloc(need);
        if (!w.async_cells) free(w.race), w.race = nullptr;
        w.race_cells = w.race ? need : 0;
    }
    // Copies a thread of the previous block left pending are dropped (start_block).
    if (w.race_cells) memset(w.async_cells, 0, w.race_cells);
    w.race_block_epoch = ++w.race_epoch;
    for (unsigned k = 0; k < (w.n + 31) / 32; ++k) w.warps[k].epoch = w.warps[k].wgmma_done = 0;
    w.wgmma_reader = 0;  // a failed wgmma's run may have left it set
}

// Where a shared-memory byte lies, for messages: the variable and byte, or the offset.
inline void describe_shared(Worker &w, size_t cell, char *where, size_t room) {
    if (cell >= w.static_smem_bytes) {
        snprintf(where, room, "byte %zu of dynamic shared memory (extern __shared__)", cell - w.static_smem_bytes);
        return;
    }
    char var[160];
    shared_variable_at(cell, var, sizeof var);
    if (var[0]) snprintf(where, room, "__shared__ %s", var);
    else snprintf(where, room, "byte %zu of the __shared__ variables", cell);
}

// initcheck: a read of shared memory that nothing of this block has written. A correct kernel
// may make one: a guarded GEMM that loads no rows past M into its tile still multiplies them,
// into accumulators its guarded store drops. So the run goes on, the value read being the
// poison (NaN where it is a float), and the first such read is noted for the host, which
// gives it when the output fails its check. A write by another thread later in the same
// barrier interval is a race the checker reports on its own.
inline void uninitialized_note(Worker &w, size_t cell) {
    if (w.result->note[0]) return;
    char where[200], site[192];
    describe_shared(w, cell, where, sizeof where);
    access_site(site, sizeof site);
    const uint3 t = tl_fiber->tid;
    snprintf(w.result->note, sizeof w.result->note,
             "%s: uninitialized shared memory: thread (%u,%u,%u) of block (%u,%u,%u) reads %s, which no thread of "
             "its block had written%s (the simulator fills shared memory with NaN bytes at block start; a GPU "
             "leaves what was there): if another thread writes it later, a __syncthreads() between that write "
             "and this read is missing; if the value goes unused, the output does not show it",
             w.launch->kernel, t.x, t.y, t.z, w.block_idx.x, w.block_idx.y, w.block_idx.z, where, site);
}

// Each block's dynamic shared memory is followed by a red zone no correct access reaches: an
// access there is past the end of what the launch gave (`smem=`), and is reported as such
// (race_check) instead of landing in the next block's memory or the allocator's.
constexpr size_t kDynRedZone = 4096;
inline size_t dyn_stride(size_t bytes) { return (bytes + kDynRedZone + 1023) & ~(size_t)1023; }

// The module's TLS block holds its __shared__ variables and the runtime's thread-locals (the
// current block and thread, the traffic hooks' state): each variable's extent, from the
// module's symbol table, read once. An access that leaves its variable's extent, or lands
// where no variable is, is out of bounds.
struct TlsExtent {
    size_t lo, hi;
    bool runtime;
    bool guard;  // bytes nothing may touch: before the runtime's locals, a redzone between variables
};
struct TlsExtents {
    TlsExtent *all = nullptr;
    size_t n = 0;
};
SIM_UNINSTRUMENTED inline const TlsExtents &tls_extents() {
    static const TlsExtents table = [] {
        TlsExtents t;
        Dl_info self;
        if (!dladdr((void *)&tls_extents, &self) || !self.dli_fname) return t;
        int fd = open(self.dli_fname, O_RDONLY);
        if (fd < 0) return t;
        struct stat st;
        void *map = fstat(fd, &st) == 0 ? mmap(nullptr, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0) : MAP_FAILED;
        close(fd);
        if (map == MAP_FAILED) return t;
        const char *base = (const char *)map;
        const auto *eh = (const Elf64_Ehdr *)base;
        const auto *sh = (const Elf64_Shdr *)(base + eh->e_shoff);
        for (int pass = 0; pass < 2; ++pass) {
            size_t k = 0;
            for (unsigned i = 0; i < eh->e_shnum; ++i) {
                if (sh[i].sh_type != SHT_SYMTAB) continue;
                const auto *sym = (const Elf64_Sym *)(base + sh[i].sh_offset);
                const char *names = base + sh[sh[i].sh_link].sh_offset;
                for (size_t j = 0; j < sh[i].sh_size / sizeof(Elf64_Sym); ++j) {
                    if (ELF64_ST_TYPE(sym[j].st_info) != STT_TLS || sym[j].st_size == 0) continue;
                    const char *mangled = names + sym[j].st_name;
                    // The runtime's locals are two extents: their guard, then the rest.
                    const bool locals = strcmp(mangled, "_ZN3sim9tl_localsE") == 0;
                    if (pass == 1) {
                        TlsExtent &e = t.all[k];
                        e.lo = sym[j].st_value;
                        e.hi = sym[j].st_value + sym[j].st_size;
                        e.runtime = strncmp(mangled, "_ZN3sim", 7) == 0 || strncmp(mangled, "_ZN11sim_traffic", 16) == 0;
                        // The source's rewrite declares one after each __shared__ variable
                        // (kernel/src/sim/compile.rs, add_shared_redzones).
                        e.guard = strstr(mangled, "__sim_redzone_") != nullptr;
                        if (locals) {
                            t.all[k + 1] = e;
                            t.all[k + 1].lo = e.lo + kTlsGuard;
                            e.hi = e.lo + kTlsGuard;
                            e.guard = true;
                        }
                    }
                    k += locals ? 2 : 1;
                }
            }
            if (pass == 0) {
                t.all = (TlsExtent *)calloc(k ? k : 1, sizeof(TlsExtent));
                if (!t.all) break;
                t.n = k;
            }
        }
        munmap(map, (size_t)st.st_size);
        // By offset, for the binary search.
        for (size_t i = 1; i < t.n; ++i)
            for (size_t j = i; j > 0 && t.all[j - 1].lo > t.all[j].lo; --j) std::swap(t.all[j - 1], t.all[j]);
        return t;
    }();
    return table;
}

// The variable of the TLS block holding byte `offset`; null when none does (padding, or past
// the last one).
SIM_UNINSTRUMENTED inline const TlsExtent *tls_extent_at(size_t offset) {
    const TlsExtents &t = tls_extents();
    size_t lo = 0, hi = t.n;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (t.all[mid].hi <= offset) lo = mid + 1;
        else hi = mid;
    }
    return lo < t.n && t.all[lo].lo <= offset ? &t.all[lo] : nullptr;
}

// The name shared_variable_at gives the variable starting at `lo`, without its ", byte 0".
SIM_UNINSTRUMENTED inline void shared_variable_name(size_t lo, char *out, size_t room) {
    shared_variable_at(lo, out, room);
    char *comma = strrchr(out, ',');
    if (comma) *comma = 0;
}

// A kernel's access that leaves its __shared__ variable: named by the variable it starts in or
// the last one before it ("'red' (in rowsoft), 8 bytes"), and, when it lands between two, by
// the next one too (a negative index of that one lands there as well).
[[noreturn]] SIM_UNINSTRUMENTED inline void static_overrun(size_t cell, unsigned long n, int write, const TlsExtent *in) {
    const TlsExtents &t = tls_extents();
    const TlsExtent *before = nullptr, *next = nullptr;
    for (size_t i = 0; i < t.n; ++i) {
        if (t.all[i].runtime || t.all[i].guard) continue;
        if (t.all[i].lo <= cell && (!before || t.all[i].lo > before->lo)) before = &t.all[i];
        if (t.all[i].lo > cell && (!next || t.all[i].lo < next->lo)) next = &t.all[i];
    }
    const TlsExtent *named = in && !in->runtime && !in->guard ? in : before;
    char var[160] = "", other[200] = "";
    if (named) shared_variable_name(named->lo, var, sizeof var);
    if (!named)
        fail("%s %lu bytes at byte %zu of the __shared__ variables, before the first of them: out of bounds",
             write ? "writes" : "reads", n, cell);
    if (named != in && next && cell + n <= next->lo) {
        char name[160];
        shared_variable_name(next->lo, name, sizeof name);
        snprintf(other, sizeof other, ", or %zu bytes before %s", next->lo - cell, name);
    }
    fail("%s %lu bytes at byte %zu of __shared__ %s, which has %zu bytes%s: out of bounds (a GPU would read or "
         "overwrite other shared memory, or fault)",
         write ? "writes" : "reads", n, cell - named->lo, var, named->hi - named->lo, other);
}

// An access past the end of block `o`'s dynamic shared memory, by a thread of block `w`; `n`
// bytes, or 0 where the size is not known (a fault).
[[noreturn]] SIM_UNINSTRUMENTED inline void dynamic_overrun(const Worker &w, const Worker &o, const char *b, unsigned long n,
                                                            int write) {
    const size_t dyn = o.launch->dynamic_smem;
    char whose[64] = "", size[32] = "";
    if (&o != &w) snprintf(whose, sizeof whose, " of block (%u,%u,%u)", o.block_idx.x, o.block_idx.y, o.block_idx.z);
    if (n) snprintf(size, sizeof size, " %lu bytes", n);
    fail("%s%s at byte %ld of the dynamic shared memory (extern __shared__)%s, which the launch gives %zu "
         "bytes: out of bounds%s",
         write ? "writes" : "reads", size, (long)(b - o.dyn_smem), whose, dyn,
         dyn == 0 ? " (no smem= was given)" : " (is smem= what the kernel needs?)");
}

// The race checker's cell of the shared-memory byte at `p` of block `w` (static variables
// first, then dynamic shared memory); false when `p` is not that block's shared memory.
SIM_UNINSTRUMENTED_INLINE bool race_cell(const Worker &w, const void *p, size_t &cell) {
    const char *c = (const char *)p;
    if (w.static_smem && c >= w.static_smem && c < w.static_smem + w.static_smem_bytes)
        cell = (size_t)(c - w.static_smem);
    else if (w.dyn_smem && c >= w.dyn_smem && c < w.dyn_smem + w.launch->dynamic_smem)
        cell = w.static_smem_bytes + (size_t)(c - w.dyn_smem);
    else
        return false;
    return true;
}

// gcc's -fsanitize=bounds checks each index into an array whose size it knows (a local array,
// a static __shared__ one, a member array), and -fsanitize=object-size each access through a
// pointer whose object it can see once the callee is inlined (a local array passed to a
// __device__ function, a float4 cast over a float array); the module is built without the
// sanitizer's runtime, and these are the handlers its checks call. The layouts are those of
// gcc's and clang's libubsan. A report starts `FILE:LINE:COLUMN: `; the simulator's Rust side
// quotes that line and names the array from the column.
struct UbsanLocation {
    const char *file;
    unsigned line, column;
};
struct UbsanType {
    unsigned short kind, info;  // kind 0: an integer; info: its log2(bits) << 1 | signed
    char name[1];               // "'float [8]'"
};
struct UbsanOutOfBounds {
    UbsanLocation loc;
    const UbsanType *array;
    const UbsanType *index;
};
struct UbsanTypeMismatch {
    UbsanLocation loc;
    const UbsanType *type;
    unsigned char log_alignment;
    unsigned char check_kind;  // 0 a load, 1 a store, others (member access, binding) an access
};

// The index a check passed, as the signed or unsigned integer of its type.
SIM_UNINSTRUMENTED inline long long ubsan_index(const UbsanType *t, void *value) {
    const unsigned bits = 1u << (t->info >> 1);
    unsigned long long v = (unsigned long long)(uintptr_t)value;
    if (bits < 64) v &= (1ull << bits) - 1;
    if ((t->info & 1) && bits < 64 && (v >> (bits - 1)) & 1) v |= ~0ull << bits;  // sign
    return (long long)v;
}

}  // namespace sim

extern "C" SIM_UNINSTRUMENTED __attribute__((weak)) void __ubsan_handle_out_of_bounds(void *data, void *value) {
    const sim::UbsanOutOfBounds *d = (const sim::UbsanOutOfBounds *)data;
    const long long i = sim::ubsan_index(d->index, value);
    char index[32];
    snprintf(index, sizeof index, (d->index->info & 1) ? "%lld" : "%llu", i);
    sim::fail("%s:%u:%u: index %s is outside the array (of type %s) it indexes; a GPU reads or writes whatever "
              "lies there, another variable or nothing",
              d->loc.file, d->loc.line, d->loc.column, index, d->array->name);
}

extern "C" SIM_UNINSTRUMENTED __attribute__((weak)) void __ubsan_handle_out_of_bounds_abort(void *data, void *value) {
    __ubsan_handle_out_of_bounds(data, value);
}

// Called only for object-size: the module is built without the alignment and null checks
// that share this handler.
extern "C" SIM_UNINSTRUMENTED __attribute__((weak)) void __ubsan_handle_type_mismatch_v1(void *data, void *) {
    const sim::UbsanTypeMismatch *d = (const sim::UbsanTypeMismatch *)data;
    const char *what = d->check_kind == 0 ? "a read" : d->check_kind == 1 ? "a write" : "an access";
    sim::fail("%s:%u:%u: %s of %s goes past the end of the array or variable its pointer points into; a GPU "
              "reads or writes whatever lies there, another variable or nothing",
              d->loc.file, d->loc.line, d->loc.column, what, d->type->name);
}

extern "C" SIM_UNINSTRUMENTED __attribute__((weak)) void __ubsan_handle_type_mismatch_v1_abort(void *data, void *ptr) {
    __ubsan_handle_type_mismatch_v1(data, ptr);
}

namespace sim {

// The calling thread's block and fiber, and where the two thread-locals that hold them lie
// (in the TLS block, beside the __shared__ variables). Each address of a thread-local in a
// dlopen'ed module is a call: the hot paths take them once.
struct Current {
    Worker *const *worker_at;
    Fiber *const *fiber_at;
    Worker *w;
    Fiber *f;
};
SIM_UNINSTRUMENTED_INLINE Current current() {
    Worker *const *wa = &tl_worker;
    Fiber *const *fa = &tl_fiber;
    // gcc would compute each address again at every use (a call each): held in registers.
    asm("" : "+r"(wa), "+r"(fa));
    return Current{wa, fa, *wa, *fa};
}

// Whether `p` is one of the runtime's own two thread-locals.
SIM_UNINSTRUMENTED_INLINE bool runtime_local(const Current &c, const void *p) {
    const char *a = (const char *)p, *tw = (const char *)c.worker_at, *tf = (const char *)c.fiber_at;
    return (a >= tw && a < tw + sizeof(Worker *)) || (a >= tf && a < tf + sizeof(Fiber *));
}

// An access of shared byte `cell` that a cp.async has not landed in: on a GPU it may come
// before or after the copy, so the thread reads either byte, or its write may be overwritten.
[[noreturn]] inline void unlanded_copy_report(Worker &w, size_t cell, bool write) {
    char where[200];
    describe_shared(w, cell, where, sizeof where);
    for (unsigned t = 0; t < w.n; ++t) {
        const Fiber &o = w.fibers[t];
        for (unsigned i = 0; i < o.async_pending; ++i) {
            size_t c;
            if (!race_cell(w, o.async[i].dst, c) || cell < c || cell >= c + o.async[i].bytes) continue;
            const bool own = &o == tl_fiber;
            char by[96];
            if (own) snprintf(by, sizeof by, "this thread");
            else snprintf(by, sizeof by, "thread (%u,%u,%u)", o.tid.x, o.tid.y, o.tid.z);
            const char *why = o.async[i].group < o.async_groups
                                  ? "its group was committed, but no cp.async.wait_group since has completed it "
                                    "(wait_group N leaves the newest N committed groups in flight)"
                                  : "no cp.async.commit_group came after it, and a wait_group completes committed "
                                    "groups only (wait_all commits first)";
            fail("cp.async not landed: this thread %s %s, where a cp.async issued by %s has not landed yet: %s. On "
                 "a GPU the copy lands at any moment until %s waits for it%s",
                 write ? "writes" : "reads", where, by, why, own ? "the thread" : "its thread",
                 own ? "" : ", and another thread sees it only after that wait and a barrier");
        }
    }
    fail("cp.async not landed: this thread %s %s, where a cp.async has not landed yet",
         write ? "writes" : "reads", where);
}

// Fails an access of `n` bytes at `p`, shared cell `cell` of `w`, that leaves its __shared__
// variable (or lands where none is) or passes the end of the dynamic buffer.
SIM_UNINSTRUMENTED_INLINE void shared_bounds(const Worker &w, size_t cell, const void *p, unsigned long n, int write) {
    if (cell >= w.static_smem_bytes) {
        if (cell + n > w.static_smem_bytes + w.launch->dynamic_smem) dynamic_overrun(w, w, (const char *)p, n, write);
        return;
    }
    const TlsExtent *e = tls_extent_at(cell);
    if (!e || e->guard || (!e->runtime && cell + n > e->hi)) static_overrun(cell, n, write, e);
}

// An ldmatrix or stmatrix row of 16 bytes at `p`, checked against its __shared__ variable by
// the lane that gives it (instrumented builds), before the warp's collective accesses every
// lane's row at once as the lane that completes it.
SIM_UNINSTRUMENTED_INLINE void shared_row_bounds(const void *p, int write) {
#ifdef SIM_INSTRUMENTED
    const Worker &w = worker();
    size_t cell;
    if (race_cell(w, p, cell)) shared_bounds(w, cell, p, 16, write);
#else
    (void)p, (void)write;
#endif
}

// Checks and records `n` bytes at `p` by the calling thread if they are its block's shared
// memory.
SIM_UNINSTRUMENTED_INLINE void race_check(const Current &c, const void *p, unsigned long n, int write) {
    Worker *w = c.w;
    Fiber *f = c.f;
    size_t cell;
    if (!w || !f || !w->race) return;
    // The thread's previous store has landed by its next access.
    if (f->waw_pending) settle_write(*w, *f);
    if (!race_cell(*w, p, cell)) {
        // Another block's shared memory, reached through mapa: it must still be running.
        const char *b = (const char *)p;
        for (unsigned r = 0; r < w->cluster->size; ++r) {
            const Worker *o = w->cluster->cta[r];
            const size_t dyn = o->launch->dynamic_smem;
            if (o->dyn_smem && b + n > o->dyn_smem + dyn && b < o->dyn_smem + dyn_stride(dyn))
                dynamic_overrun(*w, *o, b, n, write);
            if (o == w || o->exited != o->n || !in_shared_of(*o, p, n)) continue;
            fail("%s %lu bytes of the shared memory of block (%u,%u,%u) of the cluster, whose threads have all "
                 "exited (its shared memory is gone: end the blocks with a cluster barrier)",
                 write ? "writes" : "reads", n, o->block_idx.x, o->block_idx.y, o->block_idx.z);
        }
        // A write into another block's shared memory (distributed shared memory) is written
        // for that block's initcheck, as a TMA copy is; the cluster barrier ordering it with
        // the owner's reads is not checked.
        Worker *o = write ? shared_owner(p, n) : nullptr;
        if (o && o != w && o->race && race_cell(*o, p, cell))
            for (size_t i = cell; i < cell + n && i < o->race_cells; ++i)
                o->race[i].write = RaceMark{o->race_epoch, 0, kAsyncUnit}, o->race[i].write_pc = nullptr;
        return;
    }
    shared_bounds(*w, cell, p, n, write);
    // (The runtime's own thread-locals are written by its instrumented code too: an access
    // that lands in one is let be.)
    if (cell < w->static_smem_bytes && runtime_local(c, p)) return;
    uint16_t me = (uint16_t)(f - w->fibers) + 1;
    uint16_t we = w->warps[f->warp].epoch;
    uint32_t epoch = w->race_epoch;
    size_t end = cell + n < w->race_cells ? cell + n : w->race_cells;
    for (size_t i = cell; i < end; ++i)
        if (w->async_cells[i]) unlanded_copy_report(*w, i, write);
    // The bytes of one access mostly hold the same marks: a byte marked as the one before it
    // was is checked and marked as it was.
    RaceCell before{}, after{};
    bool repeat = false;
    for (size_t i = cell; i < end; ++i) {
        RaceCell &r = w->race[i];
        if (repeat && memcmp(&r, &before, sizeof r) == 0) {
            r = after;
            continue;
        }
        before = r;
        // A read of what this block has not written: the byte's variable decides, so the
        // next byte is looked at afresh.
        repeat = write || !(r.write.thread == 0 || r.write.epoch < w->race_block_epoch);
        if (!repeat) {
            char var[160];
            bool compiler_state = false;
            if (i < w->static_smem_bytes) shared_variable_at(i, var, sizeof var, &compiler_state);
            if (!compiler_state && !f->fragment_load) uninitialized_note(*w, i);
            // Looked at once a block: a later read of the byte is no news (an ldmatrix's read
            // of the fill leaves it to a later plain read to note).
            if (!f->fragment_load) r.write = RaceMark{epoch, 0, kAsyncUnit}, r.write_pc = nullptr;
        }
        const uint16_t done = w->warps[f->warp].wgmma_done;
        bool read_ordered = race_ordered(r.read, epoch, me, f->warp, we, done);
        if (!race_ordered(r.write, epoch, me, f->warp, we, done)) {
            // Write after another thread's write: judged by what this store leaves
            // (settle_write), when the access is one the record can hold.
            const bool deferrable = write && r.write.thread != 0 && r.write.thread <= w->n &&
                                    n <= sizeof f->waw_before;
            if (deferrable && !f->waw_pending) {
                f->waw_pending = true;
                f->waw_n = (unsigned char)n;
                f->waw_other = r.write.thread;
                f->waw_other_pc = r.write_pc;
                f->waw_pc = f->access_pc;
                f->waw_cell = cell;
                memcpy(f->waw_before, p, n);
            } else if (!(deferrable && f->waw_cell == cell)) {
                race_report(*w, i, write, r.write, true, r.write_pc);
            }
        }
        if (write && !read_ordered) race_report(*w, i, true, r.read, false, r.read_pc);
        // A read unordered with this one stays recorded: it, not this thread's own, is what a
        // later write by this thread would race with.
        if (write) {
            r.write = RaceMark{epoch, we, me};
            r.write_fences = f->proxy_fences;
            r.write_pc = f->access_pc;
        } else if (w->wgmma_reader) {
            r.read = RaceMark{epoch, w->wgmma_seq, w->wgmma_reader};
            r.read_pc = nullptr;
        } else if (read_ordered) {
            r.read = RaceMark{epoch, we, me};
            r.read_pc = f->access_pc;
        }
        after = r;
    }
}

// The bank model's view of the calling thread accessing `p` (sim_banks.h).
SIM_UNINSTRUMENTED_INLINE bool bank_thread(const Current &c, const void *p, SimBankThread *out) {
    Worker *w = c.w;
    Fiber *f = c.f;
    if (!w || !f || f->quiet || runtime_local(c, p)) return false;
    out->thread = w->rank * kMaxThreads + (unsigned)(f - w->fibers);
    out->warp = w->rank * (kMaxThreads / 32) + f->warp;
    out->lane = f->lane;
    out->lanes = (unsigned)__builtin_popcount(w->warps[f->warp].present);
    out->switches = f->switches;
    return true;
}

}  // namespace sim

// The emulation's own shared-memory writes (SIM_SHARED_WRITE): checked and recorded by the
// race checker if they are this block's shared memory. Uninstrumented, so its own accesses
// are not checked.
extern "C" SIM_UNINSTRUMENTED void sim_race_access(const void *p, unsigned long n, int write) {
    sim::race_check(sim::current(), p, n, write);
}

// The bank model's view of the calling thread, for what the emulation reports (ldmatrix
// rows, cp.async destinations).
extern "C" SIM_UNINSTRUMENTED int sim_bank_thread(const void *p, SimBankThread *out) {
    return sim::bank_thread(sim::current(), p, out);
}

// A plain access of the kernel to shared memory, from the instrumentation's hooks: the race
// checker's and, with `who`, the bank model's view of the thread (1 if it has one). One call
// and one look at the thread-locals for the two models every such access feeds. `pc`: the
// access's code address (null where the hook does not know it).
extern "C" SIM_UNINSTRUMENTED int sim_shared_access(const void *p, unsigned long n, int write, SimBankThread *who,
                                                     const void *pc) {
    const sim::Current c = sim::current();
    // The runtime's own instrumented code, reporting a failure, reads its thread-locals in
    // the TLS block, which counts as shared memory: such a nested call keeps the access's pc.
    const void *outer = c.f ? c.f->access_pc : nullptr;
    if (c.f) c.f->access_pc = pc;
    sim::race_check(c, p, n, write);
    if (c.f) c.f->access_pc = outer;
    return who && sim::bank_thread(c, p, who);
}

// A plain access of the kernel to shared memory at an address not a multiple of its size (the
// hooks' alignment check, sim_traffic.h): named like a race, by its variable.
extern "C" SIM_UNINSTRUMENTED void sim_misaligned_shared(const void *p, unsigned long n, int write, const void *pc) {
    const sim::Current c = sim::current();
    size_t cell;
    if (!c.w || !c.f || sim::runtime_local(c, p) || !sim::race_cell(*c.w, p, cell)) return;
    char where[200];
    sim::describe_shared(*c.w, cell, where, sizeof where);
    if (pc) c.f->access_pc = pc;
    sim::fail("misaligned address: this thread %s %lu bytes at %s, whose address is not a multiple of %lu (a GPU "
              "faults on an access that is not aligned to its size: a cast to a vector type such as float4 or "
              "__half2 needs an index that is a multiple of its width)",
              write ? "writes" : "reads", n, where, n);
}

// A volatile access or an atomic, from the instrumentation's hooks: what a spin-wait repeats.
extern "C" SIM_UNINSTRUMENTED void sim_poll(void) { sim::poll(); }

// The race checker of global memory's view of the calling thread (sim_global.h).
extern "C" SIM_UNINSTRUMENTED int sim_global_thread(SimGlobalThread *out) {
    const sim::Current c = sim::current();
    if (!c.w || !c.f) return 0;
    const sim::Worker &w = *c.w;
    out->block = w.block_idx.x + w.grid_dim.x * (w.block_idx.y + w.grid_dim.y * w.block_idx.z) + 1;
    out->epoch = w.race_epoch;
    out->thread = (uint16_t)(c.f - w.fibers) + 1;
    out->warp_epoch = w.warps[c.f->warp].epoch;
    out->block_dim[0] = w.block_dim.x;
    out->block_dim[1] = w.block_dim.y;
    out->block_dim[2] = w.block_dim.z;
    return 1;
}

extern "C" SIM_UNINSTRUMENTED void sim_global_fail(const char *message, const void *pc) {
    if (tl_fiber && pc) tl_fiber->access_pc = pc;
    sim::fail("%s", message);
}

// What a TMA copy lands: written, by no thread that could race (its mbarrier orders it).
extern "C" SIM_UNINSTRUMENTED void sim_race_async_write(const void *p, unsigned long n) {
    using namespace sim;
    Worker *w = tl_worker ? shared_owner(p, n) : nullptr;  // a multicast lands in other blocks too
    size_t cell;
    if (!w || !w->race || !race_cell(*w, p, cell)) return;
    size_t end = cell + n < w->race_cells ? cell + n : w->race_cells;
    for (size_t i = cell; i < end; ++i) w->race[i].write = RaceMark{w->race_epoch, 0, kAsyncUnit}, w->race[i].write_pc = nullptr;
}

// What the async proxy reads (wgmma's operands, a bulk store's source): shared memory a thread
// wrote through the generic proxy (a store, a landed cp.async) is visible to the async proxy
// only after a fence.proxy.async on the way from the write to the read (PTX ISA 9.7.15.4, 8.6
// "Proxies"); without it the async proxy may read what was there before. A byte passes when
// its last writer has fenced since it wrote (the fence, then a barrier, hands it over), or
// when the reading thread fenced after a barrier that followed the write (a fence is
// cumulative: it covers the writes its thread has observed). Checked when the simulator runs
// the wgmma (at the wait that covers it), so a fence between issue and wait passes here
// though it is too late on a GPU: this can miss a bug, never invent one.
extern "C" SIM_UNINSTRUMENTED void sim_proxy_read(const void *p, unsigned long n, const char *what) {
    using namespace sim;
    Worker *w = tl_worker;
    size_t cell;
    if (!w || !w->race || !race_cell(*w, p, cell)) return;
    const uint32_t reader_fence = tl_fiber ? tl_fiber->fence_epoch : 0;
    size_t end = cell + n < w->race_cells ? cell + n : w->race_cells;
    for (size_t i = cell; i < end; ++i) {
        const RaceCell &r = w->race[i];
        if (r.write.thread == 0 || r.write.thread == kAsyncUnit || r.write.epoch < w->race_block_epoch) continue;
        if (reader_fence > r.write.epoch) continue;
        const Fiber &o = w->fibers[r.write.thread - 1];
        if (o.proxy_fences != r.write_fences) continue;
        char where[200];
        describe_shared(*w, i, where, sizeof where);
        fail("%s reads %s, which thread (%u,%u,%u) wrote through the generic proxy (a store or a cp.async) with "
             "no fence.proxy.async between that write and this read: the async proxy may not see it. The writing "
             "thread fences its writes before a barrier that this thread passes before the read, or this thread "
             "fences after such a barrier; a fence with no barrier between it and this read, as when each thread "
             "fences and one issues the read at once, orders nothing for this thread",
             what, where, o.tid.x, o.tid.y, o.tid.z);
    }
}

namespace sim {

// ---- cp.async: per-thread queues of copies, completed by commit groups ----

// Counts `by` more (or fewer) copies not landed into each byte of [dst, dst + bytes), for
// race_check (instrumented builds).
SIM_UNINSTRUMENTED inline void async_cells_add(const void *dst, unsigned bytes, int by) {
#ifdef SIM_INSTRUMENTED
    Worker &w = *tl_worker;
    size_t cell;
    if (!w.race || !race_cell(w, dst, cell)) return;
    for (size_t i = cell; i < cell + bytes && i < w.race_cells; ++i) w.async_cells[i] = (unsigned char)(w.async_cells[i] + by);
#else
    (void)dst, (void)bytes, (void)by;
#endif
}

// Issues one copy of `bytes` (4, 8 or 16) from global `src` to shared `dst`; only the first
// `src_bytes` are read, the rest is zeros (cp.async's zero-fill form).
SIM_UNINSTRUMENTED inline void async_copy(void *dst, const void *src, unsigned bytes, unsigned src_bytes) {
    Fiber &f = fiber();
    if ((uintptr_t)src % bytes)
        fail("cp.async of %u bytes from %p, %zu bytes past a %u-byte boundary: both addresses must be %u-byte "
             "aligned",
             bytes, src, (size_t)((uintptr_t)src % bytes), bytes, bytes);
    if ((uintptr_t)dst % bytes)
        fail("cp.async of %u bytes to shared memory at %p, %zu bytes past a %u-byte boundary: both addresses "
             "must be %u-byte aligned",
             bytes, dst, (size_t)((uintptr_t)dst % bytes), bytes, bytes);
    if (!is_shared(dst, bytes)) fail("cp.async destination %p is not in this block's shared memory", dst);
    if (src_bytes > bytes) fail("cp.async src-size %u is larger than its cp-size %u", src_bytes, bytes);
    if (f.async_pending == kMaxAsyncCopies)
        fail("more than %u cp.async copies pending in one thread (the simulator's limit): wait for older groups first",
             kMaxAsyncCopies);
    AsyncCopy &c = f.async[f.async_pending++];
    c.dst = (unsigned char *)dst;
    c.group = f.async_groups;
    c.bytes = bytes;
    memset(c.data, 0, sizeof c.data);
    memcpy(c.data, src, src_bytes);
    SIM_GLOBAL_READ(src, src_bytes);
    SIM_BANK_REPORT(SIM_BANK_LDGSTS, dst, bytes, 0);
    // The copy may land at any moment until its wait: a write from its issue (and again at
    // the wait, below), and no access of its bytes by any thread until then.
    SIM_SHARED_WRITE(dst, bytes);
    async_cells_add(dst, bytes, 1);
}

// cp.async.commit_group: the copies issued since the last commit become one group (possibly
// empty).
inline void async_commit() { fiber().async_groups++; }

// cp.async.wait_group N: completes, in issue order, every copy of the committed groups except
// the newest `n`. Copies not committed yet stay pending (cp.async.wait_all commits first).
inline void async_wait(unsigned n) {
    Fiber &f = fiber();
    if (f.async_groups < n) return;
    unsigned older_than = f.async_groups - n, done = 0;
    while (done < f.async_pending && f.async[done].group < older_than) {
        AsyncCopy &c = f.async[done++];
        memcpy(c.dst, c.data, c.bytes);
        async_cells_add(c.dst, c.bytes, -1);
        SIM_SHARED_WRITE(c.dst, c.bytes);
    }
    memmove(f.async, f.async + done, (f.async_pending - done) * sizeof(AsyncCopy));
    f.async_pending -= done;
}

// Completes every pending copy, committed or not, leaving the groups as they are: the copies
// libcu++ ties to a barrier or a block-scope pipeline stage land before the calling thread's
// arrival on it (a copy may land at any moment before the wait that covers it).
inline void async_land_all() {
    Fiber &f = fiber();
    for (unsigned i = 0; i < f.async_pending; ++i) {
        memcpy(f.async[i].dst, f.async[i].data, f.async[i].bytes);
        async_cells_add(f.async[i].dst, f.async[i].bytes, -1);
        SIM_SHARED_WRITE(f.async[i].dst, f.async[i].bytes);
    }
    f.async_pending = 0;
}

// ---- Warp-wide instructions (ldmatrix, mma.sync) ----

// Every lane of the warp publishes `in`; the lane that completes the warp calls
// `f(const In ins[32], Out outs[32])` once, at that instant, before any lane goes on (so what
// it reads of shared memory is what the warp saw when the instruction executed); each lane
// then receives outs[lane]. Like the `.sync.aligned` instructions it models, it needs all 32
// lanes: a partial warp is an error, a lane that never arrives a deadlock.
template <class Out, class In, class F_>
inline Out warp_collective(const char *what, const In &in, F_ &&f, bool front = false) {
    static_assert(sizeof(In) <= kSlotBytes && sizeof(Out) <= 16, "a warp_collective moves at most 48 bytes in and 16 out per lane");
    static_assert(std::is_trivially_copyable_v<In> && std::is_trivially_copyable_v<Out>);
    Worker &w = worker();
    Fiber &fb = fiber();
    Warp &wp = w.warps[fb.warp];
    if (wp.present != 0xFFFFFFFFu)
        fail("%s needs all 32 lanes of a warp; warp %u of this block has %d (make the block a multiple of 32 threads)",
             what, fb.warp, __builtin_popcount(wp.present));
    if (wp.exited)
        fail("%s needs all 32 lanes of a warp; lane %d of warp %u has exited (returned before it)", what,
             __builtin_ctz(wp.exited), fb.warp);
    unsigned p = fb.parity;
    fb.parity ^= 1;
    memcpy(wp.slot[p][fb.lane], &in, sizeof(In));
    if (warp_wait(0xFFFFFFFFu, front, false)) {
        In ins[32];
        Out outs[32];
        for (unsigned l = 0; l < 32; ++l) memcpy(&ins[l], wp.slot[p][l], sizeof(In));
        fb.quiet++;  // the instruction's own reads: its emulation reports them to the bank model
        f(static_cast<const In *>(ins), static_cast<Out *>(outs));
        fb.quiet--;
        for (unsigned l = 0; l < 32; ++l) memcpy(wp.result[p][l], &outs[l], sizeof(Out));
    }
    Out out;
    memcpy(&out, wp.result[p][fb.lane], sizeof(Out));
    return out;
}

// ---- Block execution ----

// Finds this module's TLS block of the calling thread, to poison `__shared__` variables.
struct TlsBlock { void *data; size_t size; };
inline int tls_callback(struct dl_phdr_info *info, size_t, void *arg) {
    auto *want = static_cast<std::pair<void *, TlsBlock> *>(arg);
    if ((void *)info->dlpi_addr != want->first) return 0;
    for (int i = 0; i < info->dlpi_phnum; ++i)
        if (info->dlpi_phdr[i].p_type == PT_TLS) {
            want->second.data = info->dlpi_tls_data;
            want->second.size = info->dlpi_phdr[i].p_memsz;
        }
    return 1;
}

// The calling OS thread's instance of this module's TLS block: the __shared__ variables, the
// runtime's two thread-locals and the traffic hooks' state of the unit running.
SIM_UNINSTRUMENTED inline TlsBlock tls_block() {
    Dl_info self;
    std::pair<void *, TlsBlock> want{nullptr, {nullptr, 0}};
    if (dladdr((void *)&tls_block, &self)) {
        want.first = self.dli_fbase;
        dl_iterate_phdr(tls_callback, &want);
    }
    return want.second;
}

// 0xFF bytes are NaN as f32 and f16: a read before any write shows in the result. The TLS
// block also holds the traffic counter's state, so it is set again here, before any counted
// access can read it (and this function is not instrumented).
// Done once for the blocks of a cluster, whose dynamic shared memory lies in the first
// block's buffer, `stride` bytes apart.
// `static_span`: the bytes before each block's dynamic memory in the cluster's buffer that hold
// its copy of the TLS block (static_copies), none where it uses the TLS block itself.
SIM_UNINSTRUMENTED inline void poison_shared(const TlsBlock &tls, Cluster &c, size_t stride, size_t static_span,
                                             SimTraffic *traffic) {
    Worker *saved_w = tl_worker;
    if (tls.data) memset(tls.data, 0xFF, tls.size);
    tl_worker = saved_w;
    tl_fiber = nullptr;
    Worker &first = *c.cta[0];
    for (unsigned r = 0; r < c.size; ++r) {
        Worker &w = *c.cta[r];
        w.tls_base = (char *)tls.data;
        // The copy lies at the TLS block's offset in a 1024-byte period, which keeps each
        // variable's alignment (alignas(1024) included) and swizzle phase.
        w.static_smem = static_span ? first.dyn_alloc + r * stride + ((uintptr_t)tls.data & 1023) : (char *)tls.data;
        w.static_smem_bytes = tls.size;
    }
    if (first.dyn_cap) memset(first.dyn_alloc, 0xFF, first.dyn_cap);
#ifdef SIM_INSTRUMENTED
    // The red zones count as shared memory, so that an access there reaches the checker.
    if (static_span) sim_traffic_begin(traffic, nullptr, 0, first.dyn_alloc, stride * c.size);
    else sim_traffic_begin(traffic, first.static_smem, first.static_smem_bytes, first.dyn_smem, stride * c.size);
#else
    (void)static_span;
    (void)traffic;
    (void)stride;
#endif
}

inline uint64_t mix(uint64_t x) {
    x += 0x9E3779B97F4A7C15ull;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    return x ^ (x >> 31);
}

// Forward, reverse or seeded random: one schedule alone can hide a race.
inline void make_order(Worker &w, uint64_t seed) {
    for (unsigned i = 0; i < w.n; ++i) w.order[i] = i;
    switch (seed % 3) {
        case 0: break;
        case 1:
            for (unsigned i = 0; i < w.n / 2; ++i) std::swap(w.order[i], w.order[w.n - 1 - i]);
            break;
        default:
            for (unsigned i = w.n; i > 1; --i) {
                seed = mix(seed);
                std::swap(w.order[i - 1], w.order[seed % i]);
            }
    }
}

// Sets the guard pages of the first n stacks, each on its first use. Every guard splits the
// stack mapping, costing two of the process's memory mappings (vm.max_map_count, 65530 by
// default); guarding all kMaxThreads stacks up front cost 2048 per worker of every loaded
// module, and a few dozen kernel modules ran out of mappings.
inline void guard_stacks(Worker &w, unsigned n) {
    for (; w.guarded < n; ++w.guarded)
        mprotect(w.stacks + (size_t)w.guarded * (kStackBytes + kGuardBytes), kGuardBytes, PROT_NONE);
}

inline void start_fiber(Worker &w, unsigned i) {
    char *top = w.stacks + (size_t)(i + 1) * (kStackBytes + kGuardBytes);
    uint64_t *sp = (uint64_t *)((uintptr_t)top & ~(uintptr_t)15) - 9;
    memset(sp, 0, 9 * sizeof(uint64_t));
    uint32_t csr[2] = {0x1F80, 0x037F};  // default MXCSR and x87 control word
    memcpy(sp, csr, sizeof csr);
    sp[7] = (uint64_t)(uintptr_t)&fiber_main;
    w.fibers[i].sp = sp;
}

// Appends to w's message the lines its waiting threads wait at, as the calls that wait set
// them (SourceSite), the most waited-at first: "; waiting at k.cu:6 (40 threads), k.cu:9 (8
// threads)".
inline void describe_wait_sites(Worker &w) {
    constexpr unsigned kSites = 3;
    const char *file[kSites] = {};
    unsigned line[kSites] = {}, count[kSites] = {}, sites = 0, other = 0;
    for (unsigned i = 0; i < w.n; ++i) {
        const Fiber &f = w.fibers[i];
        if (f.state == READY || f.state == DONE || !f.site_file) continue;
        unsigned k = 0;
        while (k < sites && (line[k] != f.site_line || strcmp(file[k], f.site_file) != 0)) ++k;
        if (k == sites && sites == kSites) {
            other++;
            continue;
        }
        if (k == sites) file[k] = f.site_file, line[k] = f.site_line, sites++;
        count[k]++;
    }
    for (unsigned a = 0; a < sites; ++a)  // the most waited-at first
        for (unsigned b = a + 1; b < sites; ++b)
            if (count[b] > count[a]) {
                std::swap(file[a], file[b]);
                std::swap(line[a], line[b]);
                std::swap(count[a], count[b]);
            }
    for (unsigned k = 0; k < sites; ++k) {
        size_t used = strlen(w.result->message);
        if (used + 1 >= sizeof w.result->message) return;
        snprintf(w.result->message + used, sizeof w.result->message - used, "%s%s:%u (%u thread%s)",
                 k == 0 ? "; waiting at " : ", ", shown_file(file[k]), line[k], count[k], count[k] == 1 ? "" : "s");
    }
    size_t used = strlen(w.result->message);
    if (other && used + 1 < sizeof w.result->message)
        snprintf(w.result->message + used, sizeof w.result->message - used, ", %u elsewhere", other);
}

inline void describe_block_deadlock(Worker &w) {
    // An .inc waiting for registers first: only a .dec gives them, whatever else waits.
    const char *where = w.at_regs     ? "setmaxnreg.inc"
                        : w.at_block  ? "__syncthreads"
                        : w.at_warp   ? "a warp operation (__shfl*_sync, __syncwarp, __ballot_sync)"
                        : w.at_mbar   ? "an mbarrier wait"
                        : w.at_named  ? "a named barrier (bar.sync with an id)"
                        : w.at_wgmma  ? "wgmma.wait_group"
                                      : "barrier.cluster.wait";
    int len = snprintf(w.result->message, sizeof w.result->message,
                       "%s: deadlock at %s in block (%u,%u,%u): ", w.launch->kernel, where,
                       w.block_idx.x, w.block_idx.y, w.block_idx.z);
    if (len < 0 || (size_t)len >= sizeof w.result->message) return;
    char *out = w.result->message + len;
    size_t room = sizeof w.result->message - len;
    // (setmaxnreg.inc only where a thread waits there: few kernels have it.)
    char regs[40] = "";
    if (w.at_regs) snprintf(regs, sizeof regs, ", %u in setmaxnreg.inc", w.at_regs);
    if ((w.at_block != 0) + (w.at_warp != 0) + (w.at_mbar != 0) + (w.at_cluster != 0) + (w.at_named != 0) +
            (w.at_wgmma != 0) + (w.at_regs != 0) >
        1)
        len = snprintf(out, room,
                       "%u threads wait at __syncthreads, %u at a warp operation, %u on an mbarrier, %u at "
                       "barrier.cluster.wait, %u at named barriers, %u in wgmma.wait_group%s, %u exited",
                       w.at_block, w.at_warp, w.at_mbar, w.at_cluster, w.at_named, w.at_wgmma, regs, w.exited);
    else {
        unsigned waiting = w.at_block + w.at_warp + w.at_mbar + w.at_cluster + w.at_named + w.at_wgmma + w.at_regs;
        len = snprintf(out, room, "%u %s, %u exited", waiting, waiting == 1 ? "thread waits" : "threads wait", w.exited);
    }
    if ((w.at_mbar || w.at_wgmma || w.at_regs) && len > 0 && (size_t)len < room) hopper_describe(w, out + len, room - len);
    for (unsigned b = 0; b < kNamedBarriers && w.at_named; ++b) {
        size_t used = strlen(w.result->message);
        if (w.named_arrived[b] == 0 || used + 1 >= sizeof w.result->message) continue;
        snprintf(w.result->message + used, sizeof w.result->message - used, "; named barrier %u: %u of %u threads arrived",
                 b, w.named_arrived[b], w.named_expected[b]);
    }
}

// A block's deadlock: what its threads wait at, and the lines they wait at.
inline void describe_deadlock(Worker &w) {
    describe_block_deadlock(w);
    describe_wait_sites(w);
}

// A cluster's deadlock: the first block still running, then where the others are.
inline void describe_deadlock(Cluster &c) {
    unsigned stuck = 0;
    while (stuck + 1 < c.size && c.cta[stuck]->exited == c.cta[stuck]->n) stuck++;
    Worker &w = *c.cta[stuck];
    tl_worker = &w;
    describe_deadlock(w);
    for (unsigned r = 0; r < c.size; ++r) {
        if (r == stuck) continue;
        const Worker &o = *c.cta[r];
        size_t len = strlen(w.result->message);
        if (len + 1 >= sizeof w.result->message) return;
        char regs[40] = "";
        if (o.at_regs) snprintf(regs, sizeof regs, ", %u in setmaxnreg.inc", o.at_regs);
        snprintf(w.result->message + len, sizeof w.result->message - len,
                 "; block (%u,%u,%u) of its cluster: %u of %u threads exited, %u at __syncthreads, %u at a warp "
                 "operation, %u on an mbarrier, %u at barrier.cluster.wait, %u at named barriers, %u in "
                 "wgmma.wait_group%s",
                 o.block_idx.x, o.block_idx.y, o.block_idx.z, o.exited, o.n, o.at_block, o.at_warp, o.at_mbar,
                 o.at_cluster, o.at_named, o.at_wgmma, regs);
    }
}

// A block's __syncthreads() completes when all its threads that have not exited wait there:
// they run again. Exited threads do not hold it up (PTX ISA, exit: "If the exiting threads
// are holding up the barrier, the barrier is released"), so `if (i >= n) return;` before the
// block's barriers is well defined.
inline bool release_block_barrier(Worker &w) {
    if (w.at_block == 0 || w.at_block + w.exited != w.n) return false;
    unsigned done = 0;
    for (unsigned i = 0; i < w.n; ++i)
        if (w.fibers[i].state == AT_BLOCK) {
            done = w.fibers[i].bar_parity;
            break;
        }
    w.bar_threads[done] = w.at_block;
    w.at_block = 0;
    w.race_epoch++;
    w.bar_count[done ^ 1] = 0;  // the next barrier's accumulator starts empty
    for (unsigned k = 0; k < w.n; ++k)
        if (w.fibers[w.order[k]].state == AT_BLOCK) push_ready(w, w.order[k]);
    return true;
}

// Puts back in line the threads that yielded spinning; returns whether there were any.
inline bool requeue_spinners(Cluster &c) {
    bool any = false;
    for (unsigned r = 0; r < c.size; ++r) {
        Worker &w = *c.cta[r];
        for (unsigned k = 0; k < w.n_spun; ++k) push_ready(w, w.spun[k]);
        any |= w.n_spun != 0;
        w.n_spun = 0;
    }
    return any;
}

enum Outcome { FINISHED, STALLED, DEADLOCK };

// Runs the fibers of the cluster's blocks: each block's runnable fibers in turn, block
// `c.first` first, until none can run; then a block whose threads all wait at __syncthreads
// goes on, or TMA copies in flight land. With `c.run_ahead` a block also passes its own
// __syncthreads before the next block runs, so that it gets ahead of its partners (what it
// does to them before they are ready shows). FINISHED when every thread has exited; STALLED
// after a round in which every thread that ran only spun (it waits for another unit: resuming
// goes on where it stopped); DEADLOCK when nothing can run (the message written).
inline Outcome schedule(Cluster &c) {
    for (;;) {
        bool ran = false, progressed = false;
        for (unsigned j = 0; j < c.size; ++j) {
            Worker &w = *c.cta[(c.first + j) % c.size];
            tl_worker = &w;
            do {
                while (w.head != w.tail) {
                    unsigned i = w.queue[w.head++ % kMaxThreads];
                    const unsigned spun = w.n_spun;
                    tl_fiber = &w.fibers[i];
                    sim_ctx_switch(&w.sched_sp, w.fibers[i].sp);
                    hopper_switched(w);
                    ran = true;
                    progressed |= w.n_spun == spun;
                }
                tl_fiber = nullptr;
            } while (c.run_ahead && release_block_barrier(w));
        }
        if (ran) {
            // A block may have woken another's threads, or a spinning thread another's.
            if (requeue_spinners(c) && !progressed) {
                bool landed = false;
                for (unsigned r = 0; r < c.size; ++r) {
                    tl_worker = c.cta[r];
                    landed |= hopper_progress(*c.cta[r]);
                }
                if (!landed) return STALLED;
            }
            continue;
        }
        bool finished = true, released = false;
        for (unsigned r = 0; r < c.size; ++r) {
            finished &= c.cta[r]->exited == c.cta[r]->n;
            released |= release_block_barrier(*c.cta[r]);
        }
        if (finished) {
            for (unsigned r = 0; r < c.size; ++r) {
                tl_worker = c.cta[r];
                hopper_block_end(*c.cta[r]);
            }
            return FINISHED;
        }
        if (released) continue;
        bool landed = false;
        for (unsigned r = 0; r < c.size; ++r) {
            tl_worker = c.cta[r];
            landed |= hopper_progress(*c.cta[r]);
        }
        if (landed) continue;
        describe_deadlock(c);
        return DEADLOCK;
    }
}

inline std::mutex &pool_lock() {
    static std::mutex m;
    return m;
}
inline Worker *&pool_head() {
    static Worker *head = nullptr;
    return head;
}

constexpr size_t kAsyncSpan = (size_t)kMaxThreads * kMaxAsyncCopies * sizeof(AsyncCopy);

inline Worker *acquire_worker() {
    {
        std::lock_guard<std::mutex> g(pool_lock());
        if (Worker *w = pool_head()) {
            pool_head() = w->next_free;
            return w;
        }
    }
    Worker *w = new Worker();
    size_t span = (size_t)kMaxThreads * (kStackBytes + kGuardBytes);
    void *m = mmap(nullptr, span, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (m == MAP_FAILED) {
        delete w;
        return nullptr;
    }
    w->stacks = (char *)m;
    w->guarded = 0;
#ifdef SIM_INSTRUMENTED
    {
        std::lock_guard<std::mutex> g(pool_lock());
        sim_stacks_add(m, span);
    }
#endif
    // Pages are touched only by threads that use cp.async.
    void *q = mmap(nullptr, kAsyncSpan, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (q == MAP_FAILED) {
        munmap(w->stacks, (size_t)kMaxThreads * (kStackBytes + kGuardBytes));
        delete w;
        return nullptr;
    }
    w->async_copies = (AsyncCopy *)q;
    return w;
}

// The address space left inaccessible after a worker's dynamic shared memory: an index that
// runs past the buffer and its red zones faults there (sim_fault names it) rather than landing
// in the allocator's memory, up to this far: about four times a GPU's most shared memory a block.
// (A guard of 16 MiB or more left the fiber stacks' guard pages unmerged after trim_pool, and
// a process of many modules with thousands more mappings; kernel/tests/sim_mappings.rs.)
constexpr size_t kDynGuard = (size_t)1 << 20;
inline size_t page_round(size_t n) { return (n + 4095) & ~(size_t)4095; }

inline void free_dyn_smem(Worker &w) {
    if (w.dyn_alloc) munmap(w.dyn_alloc, page_round(w.dyn_cap) + kDynGuard);
    w.dyn_alloc = nullptr;
    w.dyn_cap = 0;
}

// Page aligned, so that in the shared window (sim_hopper.h) each block's dynamic buffer starts
// where a GPU starts it modulo 1024 (the launch's dyn_lead past a 1024-byte boundary), which
// kernels with 128-byte swizzled tiles rely on; its guard right after its last page, so that a
// buffer is not reused for another size.
inline bool ensure_dyn_smem(Worker &w, size_t bytes) {
    if (w.dyn_alloc && page_round(bytes) == page_round(w.dyn_cap)) {
        w.dyn_cap = bytes;
        return true;
    }
    free_dyn_smem(w);
    const size_t span = page_round(bytes);
    void *m = mmap(nullptr, span + kDynGuard, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (m == MAP_FAILED) return false;
    if (mprotect(m, span, PROT_READ | PROT_WRITE) != 0) {
        munmap(m, span + kDynGuard);
        return false;
    }
    w.dyn_alloc = (char *)m;
    w.dyn_cap = bytes;
    return true;
}

// Frees the pool when the module is unloaded (each worker maps fiber stacks for 1024 threads).
struct PoolReaper {
    ~PoolReaper() {
        std::lock_guard<std::mutex> g(pool_lock());
        while (Worker *w = pool_head()) {
            pool_head() = w->next_free;
            munmap(w->stacks, (size_t)kMaxThreads * (kStackBytes + kGuardBytes));
            munmap(w->async_copies, kAsyncSpan);
            free_dyn_smem(*w);
            free(w->race);
            free(w->async_cells);
            free(w->memo);
            hopper_free(*w);
            delete w;
        }
    }
};
inline PoolReaper pool_reaper;

inline void release_worker(Worker *w) {
    std::lock_guard<std::mutex> g(pool_lock());
    w->next_free = pool_head();
    pool_head() = w;
}

// Gives back what the idle workers of the pool hold beyond one mapping each: their guard
// pages, each of which splits the stacks' mapping in two (a pool that ran 1024-thread blocks
// holds two thousand mappings, and a process that loads many modules reaches the kernel's
// limit on mappings, vm.max_map_count), and the stack pages their fibers touched. The stacks
// keep their addresses, so the instrumented hooks' table of stack ranges stays true; the next
// block a worker runs guards its stacks again. Workers in use are not in the pool.
inline void trim_pool() {
    const size_t span = (size_t)kMaxThreads * (kStackBytes + kGuardBytes);
    std::lock_guard<std::mutex> g(pool_lock());
    for (Worker *w = pool_head(); w; w = w->next_free) {
        if (w->guarded) {
            mprotect(w->stacks, span, PROT_READ | PROT_WRITE);
            w->guarded = 0;
        }
        madvise(w->stacks, span, MADV_DONTNEED);
    }
}

// Whether `addr` is in the guard after the dynamic shared memory of `w`'s cluster.
inline bool in_dyn_guard(const Worker &w, uint64_t addr) {
    const Worker &first = *w.cluster->cta[0];
    const uint64_t end = (uint64_t)(uintptr_t)first.dyn_alloc + page_round(first.dyn_cap);
    return first.dyn_alloc && addr >= end && addr - end < kDynGuard;
}

// Sets up block `b` (x fastest) of the launch on worker `w`, its fibers ready to start.
inline void start_block(Worker &w, const SimLaunch *l, uint3 b, uint64_t seed, SimResult *res) {
    w.launch = l;
    w.result = res;
    w.block_dim = dim3(l->block[0], l->block[1], l->block[2]);
    w.grid_dim = dim3(l->grid[0], l->grid[1], l->grid[2]);
    w.block_idx = b;
    w.n = l->block[0] * l->block[1] * l->block[2];
    w.head = w.tail = w.at_block = w.at_warp = w.exited = w.at_mbar = w.at_cluster = w.n_spun = 0;
    w.at_named = w.at_wgmma = w.at_regs = 0;
    for (unsigned b = 0; b < kNamedBarriers; ++b) w.named_arrived[b] = 0;
    w.bar_count[0] = w.bar_count[1] = 0;
    guard_stacks(w, w.n);
    for (unsigned i = 0; i < w.n; ++i) {
        Fiber &f = w.fibers[i];
        f.tid = uint3{i % l->block[0], i / l->block[0] % l->block[1], i / l->block[0] / l->block[1]};
        f.lane = i % 32;
        f.warp = i / 32;
        f.parity = f.bar_parity = 0;
        f.memo_seq = 0;
        f.cluster_arrived = false;
        f.switches = f.quiet = f.polls = 0;
        f.deliver = f.waw_pending = f.fragment_load = false;
        f.access_pc = nullptr;
        f.site_file = nullptr;
        // Copies a thread of the previous block left pending are dropped, never completed.
        f.async = w.async_copies + (size_t)i * kMaxAsyncCopies;
        f.async_pending = f.async_groups = 0;
        f.bulk_groups = 0;
        start_fiber(w, i);
    }
    for (unsigned k = 0; k < (w.n + 31) / 32; ++k) {
        unsigned lanes = w.n - k * 32 >= 32 ? 32 : w.n - k * 32;
        w.warps[k].present = lanes == 32 ? 0xFFFFFFFFu : (1u << lanes) - 1;
        w.warps[k].arrived = w.warps[k].exited = 0;
        memset(w.warps[k].read_exited, 0, sizeof w.warps[k].read_exited);
    }
    make_order(w, seed);
#ifdef SIM_INSTRUMENTED
    race_block_start(w);
#endif
    hopper_block_start(w, seed);
}

}  // namespace sim

// ---- Exported to the host ----

// After a launch: the idle workers' guard pages and touched stack pages given back.
SIM_EXPORT void sim_trim(void) { sim::trim_pool(); }

namespace sim {

// A unit (a cluster, or a block) that has started on this OS thread and not finished.
struct Resident {
    Cluster c;
    char *image;      // its part of the TLS block while another unit's is loaded
    unsigned stalls;  // its turns in a row that ended with only spinning threads
};

// What one OS thread runs of a launch: its units side by side (one, unless they spin).
struct Runner {
    const SimLaunch *l;
    SimResult *res;
    TlsBlock tls;
    size_t stride;       // between the shared memory of a cluster's blocks in its buffer
    size_t static_span;  // of that, each block's copy of the TLS block's (static_copies)
    unsigned count, max;
    Resident *units[kMaxResident];
    Resident *loaded;  // the unit whose state the TLS block holds (null: none worth keeping)
    int watchdog;
    Strike strike;
    sigjmp_buf jmp;
};

// Makes `r`'s __shared__ variables and traffic state the TLS block's, keeping the loaded
// unit's aside: all units of an OS thread share its one TLS block. The runtime's own two
// thread-locals stay as they are.
SIM_UNINSTRUMENTED inline bool load_unit(Runner &run, Resident *r) {
    if (run.loaded == r) return true;
    Resident *out = run.loaded;
    if (out && !out->image && !(out->image = (char *)malloc(run.tls.size))) return false;
    Worker *w = tl_worker;
    Fiber *f = tl_fiber;
    if (out) memcpy(out->image, run.tls.data, run.tls.size);
    if (r->image) memcpy(run.tls.data, r->image, run.tls.size);
    tl_worker = w;
    tl_fiber = f;
    run.loaded = r;
    return true;
}

// The bytes each block of a launch's clusters takes for its own copy of the TLS block, before
// its dynamic shared memory in the cluster's buffer: the blocks of a cluster run on one OS
// thread, whose one TLS block would be one copy of the static __shared__ variables for all.
// None for blocks that run alone, whose copy is the TLS block.
inline size_t static_copies(const SimLaunch *l, const TlsBlock &tls) {
    if (l->cluster[0] * l->cluster[1] * l->cluster[2] == 1 || !tls.data) return 0;
    return (((uintptr_t)tls.data & 1023) + tls.size + 1023) & ~(size_t)1023;
}

// Gives a unit's workers back to the pool and frees what it held.
inline void free_unit(Runner &run, Resident *r) {
    tl_worker = nullptr;
    tl_fiber = nullptr;
    for (unsigned i = 0; i < r->c.size; ++i) release_worker(r->c.cta[i]);
    free(r->image);
    if (run.loaded == r) run.loaded = nullptr;
    delete r;
}

// Ends the run of every unit: the loaded one's traffic counted, each unit's workers back in
// the pool. The traffic hooks' state of the others, kept in their images, is flushed too.
inline void release_units(Runner &run) {
    tl_worker = nullptr;
    tl_fiber = nullptr;
    for (unsigned k = 0; k < run.count; ++k) {
        Resident *r = run.units[k];
#ifdef SIM_INSTRUMENTED
        if (run.loaded == r || (r->image && load_unit(run, r))) sim_traffic_flush();
#endif
        free_unit(run, r);
    }
    run.count = 0;
}

inline int run_failed(Runner &run, const char *what) {
    snprintf(run.res->message, sizeof run.res->message, "%s: %s", run.l->kernel, what);
    release_units(run);
    return run.res->code = SIM_ERROR;
}

// Starts unit `unit` (linear, x fastest, over the grid of clusters): its workers, its
// poisoned shared memory, its threads ready to run.
inline int start_unit(Runner &run, uint64_t unit, uint64_t seed) {
    const SimLaunch *l = run.l;
    const unsigned *cd = l->cluster;
    const unsigned size = cd[0] * cd[1] * cd[2];
    tl_worker = nullptr;
    Resident *r = new (std::nothrow) Resident{};
    if (!r) return run_failed(run, "out of memory for a block");
    Cluster &c = r->c;
    c.size = size;
    for (unsigned k = 0; k < size; ++k) {
        c.cta[k] = acquire_worker();
        if (!c.cta[k] || (k == 0 && !ensure_dyn_smem(*c.cta[0], run.stride * size))) {
            for (unsigned i = 0; i <= k; ++i)
                if (c.cta[i]) release_worker(c.cta[i]);
            delete r;
            return run_failed(run, "out of memory for fiber stacks");
        }
        c.cta[k]->cluster = &c;
        c.cta[k]->rank = k;
        c.cta[k]->launch = l;
        c.cta[k]->result = run.res;
        c.cta[k]->dyn_smem =
            c.cta[0]->dyn_alloc ? c.cta[0]->dyn_alloc + k * run.stride + run.static_span + l->dyn_lead : nullptr;
    }
    c.jmp = &run.jmp;
    c.watchdog = run.watchdog;
    c.strike = &run.strike;
    run.units[run.count++] = r;
    if (!load_unit(run, r)) return run_failed(run, "out of memory for a block's shared memory");
    tl_worker = c.cta[0];
    poison_shared(run.tls, c, run.stride, run.static_span, l->traffic);
    const unsigned gcx = l->grid[0] / cd[0], gcy = l->grid[1] / cd[1];
    const unsigned ux = (unsigned)(unit % gcx), uy = (unsigned)(unit / gcx % gcy), uz = (unsigned)(unit / gcx / gcy);
    for (unsigned k = 0; k < size; ++k) {
        uint3 b{ux * cd[0] + k % cd[0], uy * cd[1] + k / cd[0] % cd[1], uz * cd[2] + k / cd[0] / cd[1]};
        tl_worker = c.cta[k];
        start_block(*c.cta[k], l, b, k == 0 ? seed : mix(seed + k), run.res);
    }
    const uint64_t pick = mix(seed ^ 0xC1);
    c.first = (unsigned)(pick % size);
    c.run_ahead = size > 1 && (pick >> 32) % 2;
    for (unsigned k = 0; k < size; ++k)
        for (unsigned i = 0; i < c.cta[k]->n; ++i) push_ready(*c.cta[k], c.cta[k]->order[i]);
    return SIM_OK;
}

// The unit at `k`, the loaded one, has finished: its traffic counted, its workers back in
// the pool; what the TLS block holds is of no unit now.
inline void finish_unit(Runner &run, unsigned k) {
#ifdef SIM_INSTRUMENTED
    sim_traffic_flush();
#endif
    if (SimGrid *g = run.l->grid_sync) __atomic_add_fetch(&g->exited, run.units[k]->c.size, __ATOMIC_ACQ_REL);
    free_unit(run, run.units[k]);
    run.units[k] = run.units[--run.count];
}

}  // namespace sim

// Runs units of a launch on the calling OS thread, as `next` hands them out, until none is
// left: a unit is a cluster of blocks with __cluster_dims__, else one block. One unit runs
// at a time, to its end, unless its threads only spin (they wait for another unit: a flag
// between blocks, a split-K semaphore); then the next unit starts beside it, up to
// `max_resident` of them, and the units take turns. The host's `watchdog` signal, which ends
// the run from wherever a thread is, is let through only while threads run: the
// bookkeeping between (the pool's lock, the TLS block's images) is never cut off halfway.
SIM_EXPORT int sim_run_units(const SimLaunch *l, SimNextUnit next, void *ctx, unsigned max_resident, int watchdog,
                             SimResult *res) {
    using namespace sim;
    memset(res, 0, sizeof *res);
    unsigned n = l->block[0] * l->block[1] * l->block[2];
    if (n == 0 || n > kMaxThreads) {
        snprintf(res->message, sizeof res->message, "%s: %u threads per block (the limit is %u)",
                 l->kernel, n, kMaxThreads);
        return res->code = SIM_ERROR;
    }
    const unsigned *cd = l->cluster;
    const unsigned size = cd[0] * cd[1] * cd[2];
    if (size == 0 || size > kMaxCluster || l->grid[0] % cd[0] || l->grid[1] % cd[1] || l->grid[2] % cd[2]) {
        snprintf(res->message, sizeof res->message,
                 "%s: cluster dims (%u,%u,%u) for grid (%u,%u,%u): at most %u blocks, dividing the grid", l->kernel,
                 cd[0], cd[1], cd[2], l->grid[0], l->grid[1], l->grid[2], kMaxCluster);
        return res->code = SIM_ERROR;
    }
    // On the heap, and reached through a pointer that never changes: after a fault's
    // siglongjmp, what the loop changed is read from memory.
    Runner *const run = new (std::nothrow) Runner{};
    if (!run) {
        snprintf(res->message, sizeof res->message, "%s: out of memory", l->kernel);
        return res->code = SIM_ERROR;
    }
    run->l = l;
    run->res = res;
    // A module's TLS block is allocated in a thread at its first use there: before it is
    // looked up, a use.
    tl_worker = nullptr;
    tl_fiber = nullptr;
    run->tls = tls_block();
    run->static_span = static_copies(l, run->tls);
    // A dynamic buffer placed past its 1024-byte boundary (dyn_lead) keeps its whole red zone
    // (dyn_stride) before the next block's memory.
    run->stride = run->static_span + (l->dyn_lead ? 1024 : 0) + dyn_stride(l->dynamic_smem);
    run->max = max_resident < 1 ? 1 : max_resident > kMaxResident ? kMaxResident : max_resident;
    run->watchdog = watchdog;
    sigset_t threads_only, before;
    sigemptyset(&threads_only);
    sigaddset(&threads_only, watchdog);
    pthread_sigmask(SIG_BLOCK, &threads_only, &before);
    // A fault in the kernel (caught by the host's SIGSEGV handler, or the watchdog's signal)
    // comes back here with 1, the watchdog blocked again, a misuse the emulation detected
    // (sim::fail, the message already written) with 2.
    if (int why = sigsetjmp(run->jmp, 1)) {
        release_units(*run);
        delete run;
        pthread_sigmask(SIG_SETMASK, &before, nullptr);
        return res->code = why == 2 ? SIM_ERROR : SIM_FAULT;
    }
    int code = SIM_OK;
    uint64_t unit, seed;
    for (unsigned k = 0;;) {
        if (run->count == 0) {
            int got = next(ctx, 1, &unit, &seed);
            if (got <= 0) {
                code = got < 0 ? SIM_STOPPED : SIM_OK;
                break;
            }
            if ((code = start_unit(*run, unit, seed)) != SIM_OK) break;
            k = 0;
        }
        Resident *r = run->units[k];
        if (!load_unit(*run, r)) {
            code = run_failed(*run, "out of memory for a block's shared memory");
            break;
        }
        pthread_sigmask(SIG_UNBLOCK, &threads_only, nullptr);
        Outcome o = schedule(r->c);
        pthread_sigmask(SIG_BLOCK, &threads_only, nullptr);
        if (o == DEADLOCK) {
            code = SIM_ERROR;
            break;
        }
        if (o == FINISHED) {
            finish_unit(*run, k);
            if (k >= run->count) k = 0;
            continue;
        }
        if (++r->stalls < kStallRounds) continue;
        r->stalls = 0;
        int got = next(ctx, run->count < run->max, &unit, &seed);
        if (got < 0) {
            name_running(r->c, res);
            code = SIM_STOPPED;
            break;
        }
        if (got > 0) {
            if ((code = start_unit(*run, unit, seed)) != SIM_OK) break;
            k = run->count - 1;
        } else {
            k = (k + 1) % run->count;
        }
    }
    release_units(*run);
    delete run;
    pthread_sigmask(SIG_SETMASK, &before, nullptr);
    return res->code = code;
}

namespace sim {
// The calling OS thread's CPU time (clock_gettime is async-signal-safe).
inline long long thread_cpu_ns() {
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return (long long)t.tv_sec * 1000000000ll + t.tv_nsec;
}

// Whether `f` is the thread the first strike found, neither switched out nor polled since.
inline bool unmoved(const Strike &s, const Fiber *f) {
    return f && s.fiber == f && s.switches == f->switches && s.polls == f->polls;
}
}  // namespace sim

// Defined by the traffic hooks (sim_traffic.h) of an instrumented build, absent from a plain
// one: fails the row naming the last 16-byte access 8 bytes off its alignment, when the code
// at `pc` that faulted is that access's.
extern "C" __attribute__((weak)) void sim_misaligned_suspect(uint64_t pc);

// Called by the host's signal handler on the alternate stack when the calling thread faults
// inside sim_run_units: records where and unwinds to sim_run_units. The watchdog's first
// signal only notes which thread runs; a later one (the host repeats it) unwinds, once it can
// tell whether that thread spins (Strike).
SIM_EXPORT void sim_fault(int sig, uint64_t addr, int is_write, uint64_t pc) {
    using namespace sim;
    Worker *w = tl_worker;
    if (!w) return;
    Strike &strike = *w->cluster->strike;
    const bool watchdog = sig == w->cluster->watchdog;
    // A fault with no address is a general-protection fault: an aligned vector move (a float4
    // load) at an address off its 16 bytes, if the traffic hooks saw one just before.
    if (!watchdog && addr == 0 && sim_misaligned_suspect) sim_misaligned_suspect(pc);
    // An index past the end of the dynamic shared memory and its red zones: said as the red
    // zones' checker says it, at the faulting instruction's line.
    if (!watchdog && in_dyn_guard(*w, addr)) {
        if (tl_fiber && pc) tl_fiber->access_pc = (const void *)(pc + 1);
        const Cluster &c = *w->cluster;
        dynamic_overrun(*w, *c.cta[c.size - 1], (const char *)(uintptr_t)addr, 0, is_write);
    }
    if (watchdog) {
        Fiber *f = tl_fiber;
        if (strike.count++ == 0) {
            strike.fiber = f;
            strike.switches = f ? f->switches : 0;
            strike.polls = f ? f->polls : 0;
            strike.polled_at = strike.polled;
            strike.cpu_ns = thread_cpu_ns();
            return;
        }
        // Between two threads (the scheduler passing a barrier): the next signal finds one,
        // whose switches and polls tell a wait on memory from work left.
        if (!f && strike.count < kStrikeMax) return;
        if (unmoved(strike, f) && thread_cpu_ns() - strike.cpu_ns < kStrikeCpuNs &&
            strike.count < kStrikeMax)
            return;
    }
    SimResult *r = w->result;
    r->signal = sig;
    r->addr = addr;
    r->is_write = is_write;
    // The faulting instruction, by its offset in this module: the host names its line when it
    // is the kernel's (kernel/src/sim/site.rs).
    Dl_info module;
    if (!watchdog && pc && dladdr((const void *)pc, &module) && module.dli_fbase)
        snprintf(r->message, sizeof r->message, " {{site 0x%lx}}", (unsigned long)(pc - (uintptr_t)module.dli_fbase));
    // The line of the kernel's instruction the simulator was emulating, if any (a cp.async
    // whose copy faults in the runtime's memcpy): the host names it where the instruction's
    // own is not the kernel's.
    if (!watchdog && tl_fiber && tl_fiber->site_file) {
        const size_t used = strlen(r->message);
        snprintf(r->message + used, sizeof r->message - used, " {{at %s:%u}}", shown_file(tl_fiber->site_file),
                 tl_fiber->site_line);
    }
    r->block[0] = w->block_idx.x;
    r->block[1] = w->block_idx.y;
    r->block[2] = w->block_idx.z;
    if (Fiber *f = tl_fiber) {
        r->has_thread = 1;
        // 0: looping without a switch; 1: switching and polling memory; 2: switching at
        // barriers without a volatile access or an atomic (counted in an instrumented build).
        r->spinning = unmoved(strike, f) ? 0 : strike.polled != strike.polled_at ? 1 : 2;
        r->thread[0] = f->tid.x;
        r->thread[1] = f->tid.y;
        r->thread[2] = f->tid.z;
    } else if (watchdog) {
        name_running(*w->cluster, r);  // between two of its threads: one still running
        r->spinning = strike.polled != strike.polled_at ? 1 : 2;
    }
    siglongjmp(*w->cluster->jmp, 1);
}
