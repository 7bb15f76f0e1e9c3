// sim_global.h: what the runtime (sim_runtime.h) and the traffic hooks (sim_traffic.h) share
// of the race checker of global memory, which sim_traffic.h implements.
//
// Two accesses to the same byte of a launch's buffers, at least one a plain write, race unless
// something orders them. Within a block that is what orders shared memory: a __syncthreads()
// (or a completed mbarrier phase), or a warp-wide synchronization for two lanes of one warp.
// Between blocks, which a GPU runs in any order and at once, it is the PTX memory model's
// release and acquire patterns through an atomic: the writing block's __threadfence() after
// the write, then an atomic on some address, then, in the other block, an atomic on that
// address that reads it and a __threadfence() after that before the access. The simulator
// keeps, for each block, what it is ordered after: for each other block, how many of that
// block's fences reached it this way (a vector clock). The blocks of a cluster count as one:
// what orders them (barrier.cluster, mbarriers) is not modelled for global memory, so their
// accesses to each other's bytes are taken as ordered.
//
// Each byte keeps its last write and one read, as in shared memory: this can miss a race,
// never invent one. So do two other simplifications, which only add order: a fence orders
// what every thread of its block (of its cluster) did before it (a GPU: what that thread did,
// and what a barrier handed it), and an acquiring fence takes in everything released to the
// atomic's address by then, not only what the atomic read. As in shared memory too, a write
// of the bytes another thread wrote, unordered with it, is no race when it writes the same
// bytes again (every lane of a warp storing the warp's result): it is judged once the store
// has landed. Atomics are not checked, and
// neither are strong accesses, which PTX orders as it orders atomics: volatile loads and stores
// of global memory (PTX's ld.volatile is ld.relaxed.sys) and inline PTX's ld and st with
// .volatile, .relaxed, .acquire or .release. In shared memory volatile accesses are checked as
// plain ones (sim_traffic.h says why).
#pragma once

#include <stdint.h>

// The accessing thread as the race checker of global memory needs it.
struct SimGlobalThread {
    uint32_t block;       // its block's linear index in the grid (x fastest) + 1
    uint32_t epoch;       // its block's barrier interval (the shared-memory race checker's)
    uint16_t thread;      // its linear index in the block + 1
    uint16_t warp_epoch;  // its warp's warp-wide synchronizations so far
    uint32_t block_dim[3];
};

// Defined by the runtime: the calling thread, or false outside a block's thread.
extern "C" int sim_global_thread(SimGlobalThread *out);
// Defined by the runtime: a volatile access or an atomic by the calling thread, which yields
// to the other threads when it repeats them (a spin-wait).
extern "C" void sim_poll(void);
// Defined by the runtime: ends the calling thread's block with `message` as its error, naming
// the line of the access at code address `pc` (null: none).
extern "C" [[noreturn]] void sim_global_fail(const char *message, const void *pc);
// Defined by the hooks: __threadfence() (and __threadfence_system()) by the calling thread.
extern "C" void sim_global_fence();
// Defined by the hooks: the calling thread switches out, its last store landed: a store over
// another thread's unordered write is a race unless it wrote the same bytes again.
extern "C" void sim_global_settle();
