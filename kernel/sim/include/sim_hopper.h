// sim_hopper.h: the asynchronous units of a Hopper SM, on the simulator's fibers. Section
// numbers are those of the PTX ISA (9.1).
//
// - The shared-memory window: the 32-bit shared address space cvta.to.shared gives, which
//   matrix descriptors and `.shared` instructions take (5.1.4).
// - mbarrier (9.7.13.15): the state lives in the barrier's 8 bytes of shared memory; a wait
//   on a phase that has not completed blocks the fiber, so a phase that never completes ends
//   as a deadlock report naming the barrier's state instead of a hang.
// - TMA tensor copies (cp.async.bulk.tensor.1d-.5d, 9.7.9.27.1.2; tiled mode 5.5.3; swizzle
//   5.5.7): a load's box is read at issue and lands in shared memory later, swizzled, with one
//   complete-tx of its bytes on its mbarrier. By the block's seed a copy lands either at once
//   or only when no thread can run: a read that no mbarrier wait covers sees the poison. A
//   store keeps what shared memory held at issue and completes at the bulk-group wait that
//   covers it, failing if the buffer was written in between; a reduction
//   (cp.reduce.async.bulk) is a store that reduces each element into global
//   memory atomically.
// - Clusters: an mbarrier of another block of the cluster takes arrivals (mbarrier.arrive on
//   a mapa address) and a TMA copy may be multicast (.multicast::cluster): the box lands at
//   the same offset in each block of its mask, with a complete-tx on the mbarrier at the same
//   offset in each. Either one aimed at a block whose threads have all exited is an error,
//   and such a block's shared memory is poisoned while its partners run on.
// - wgmma.mma_async (9.7.15): descriptors decoded field by field (9.7.15.5.1.2.2), operands
//   read through the canonical layouts with their swizzle, accumulators in the m64nNk16
//   fragment layout (9.7.15.5.1.1), FP32 or FP16 (two a register). A wgmma is one operation of its warpgroup: the first
//   wgmma.wait_group that covers it (once all four warps have issued it) runs every warp's
//   part, reading shared memory then: a stage released before any wait covered its reads is
//   caught. A warp's accumulators stay the wgmma's until a wait of that warp covers it: an
//   access before then fails, whichever warp's wait ran it. A warp waiting for partners that
//   never issue the wgmma is a deadlock naming them.
#pragma once

#include "mma.h"  // half and bfloat16 conversions, TF32 rounding
#include "sim_fp8_value.h"
#include "sim_runtime.h"

// cuda.h's tensor map: 128 opaque bytes. The simulator's host writes its own encoding
// (SimTensorMap below) into them.
typedef struct alignas(64) CUtensorMap_st {
    unsigned long long opaque[16];
} CUtensorMap;
#define __grid_constant__

namespace sim {

// ---- The shared-memory window ----
//
// A block's static __shared__ variables and its dynamic buffer lie anywhere in the host's
// address space. The window numbers them from 0 like a GPU's shared memory: the static block
// first, then the dynamic buffer past the next 1024-byte boundary, as far past it as a GPU
// starts it (the launch's dyn_lead: ptxas's count of the entry's static bytes, modulo 1024).
// Each address is congruent to its host address modulo 1024, so alignment tests and swizzle
// phases agree in both spaces.
struct SharedRegion {
    uintptr_t host;
    uint32_t addr;
    size_t bytes;
};

inline void shared_regions(SharedRegion out[2]) {
    Worker &w = worker();
    uintptr_t s = (uintptr_t)w.static_smem, d = (uintptr_t)w.dyn_smem;
    uint32_t sa = (uint32_t)(s & 1023);
    uint32_t da = (uint32_t)(((sa + w.static_smem_bytes + 1023) & ~(size_t)1023) + (d & 1023));
    out[0] = {s, sa, w.static_smem ? w.static_smem_bytes : 0};
    out[1] = {d, da, w.dyn_smem ? (size_t)w.launch->dynamic_smem : 0};
}

// The window address of [p, p + bytes), or false when that is not all in shared memory.
inline bool shared_addr(const void *p, size_t bytes, uint32_t *out) {
    SharedRegion r[2];
    shared_regions(r);
    uintptr_t h = (uintptr_t)p;
    for (const SharedRegion &x : r)
        if (x.bytes && h >= x.host && h + bytes <= x.host + x.bytes) {
            *out = x.addr + (uint32_t)(h - x.host);
            return true;
        }
    return false;
}

// The host address of window range [a, a + bytes), or nullptr when it is not all in shared
// memory.
inline void *shared_ptr(uint64_t a, size_t bytes) {
    SharedRegion r[2];
    shared_regions(r);
    for (const SharedRegion &x : r)
        if (x.bytes && a >= x.addr && a + bytes <= (uint64_t)x.addr + x.bytes) return (void *)(x.host + (a - x.addr));
    return nullptr;
}

// What cvta.to.shared and __cvta_generic_to_shared give a generic pointer. On a GPU the
// conversion is arithmetic and faults nothing: an address no instruction uses may point
// anywhere, as the row addresses of the lanes an ldmatrix .x1 or .x2 ignores often do. A
// pointer into a block's shared memory (or just past its end) gets its window address; any
// other gets a stray address, one no window holds, that tells an instruction using it where
// it came from (stray_shared_note). A stray address is congruent to its pointer modulo 1024,
// as window addresses are, so alignment checks read the same. Near a region (within 64 MiB):
// kStrayNear + region << 28 + kStrayMid + its window offset, which may be negative; nowhere
// near shared memory (a global or local pointer): kStrayFar + its low 20 bits.
constexpr uint64_t kStrayNear = 0x40000000u, kStrayMid = 1u << 27, kStrayFar = 0x80000000u;

inline bool is_stray_shared(uint64_t a) { return a >= kStrayNear && a < kStrayFar + (1u << 20); }

inline uint32_t shared_addr_of(const void *p) {
    uint32_t a;
    if (shared_addr(p, 0, &a)) return a;
    SharedRegion r[2];
    shared_regions(r);
    const int64_t h = (int64_t)(uintptr_t)p;
    int best = -1;
    int64_t best_dist = 0;
    for (int i = 0; i < 2; ++i) {
        if (!r[i].bytes) continue;
        const int64_t off = h - (int64_t)r[i].host;
        const int64_t dist = off < 0 ? -off : off - (int64_t)r[i].bytes;
        if (dist < (int64_t)kStrayMid / 2 && (best < 0 || dist < best_dist)) best = i, best_dist = dist;
    }
    if (best < 0) return (uint32_t)(kStrayFar + ((uint64_t)h & 0xFFFFF));
    const int64_t window = (int64_t)r[best].addr + (h - (int64_t)r[best].host);
    return (uint32_t)(kStrayNear + ((uint64_t)best << 28) + (uint64_t)((int64_t)kStrayMid + window));
}

// The region `i` of shared_regions, for messages: its static variables are the module's
// whole block of them (with the simulator's own), so only the dynamic buffer's size is given.
inline void shared_region_name(const SharedRegion *r, unsigned i, char *out, size_t room) {
    if (i == 0) snprintf(out, room, "this block's static __shared__ variables");
    else snprintf(out, room, "this block's dynamic shared memory (the launch gives it %zu bytes)", r[1].bytes);
}

// "N bytes past the end of __shared__ 'tile' (in k)": offset `at` of the static block after
// the last of the kernel's own __shared__ variables that ends at or before it (the block holds
// the simulator's state after them); false when none does.
inline bool past_static_variable(int64_t at, char *out, size_t room) {
    const TlsExtents &t = tls_extents();
    const TlsExtent *last = nullptr;
    for (size_t i = 0; i < t.n; ++i) {
        const TlsExtent &e = t.all[i];
        if (!e.runtime && !e.guard && (int64_t)e.hi <= at && (!last || e.hi > last->hi)) last = &e;
    }
    if (!last) return false;
    char name[160];
    shared_variable_name(last->lo, name, sizeof name);
    snprintf(out, room, "%lld bytes past the end of __shared__ %s", (long long)(at - (int64_t)last->hi), name);
    return true;
}

// Why window address `a` (an access of `bytes`) is not in shared memory, for the message of
// the instruction that used it: where its pointer lay if cvta.to.shared made it a stray
// address, where it lies beside the regions if it is a window address, and otherwise that it
// looks like a generic pointer.
inline void shared_address_place(uint64_t a, size_t bytes, char *out, size_t room) {
    static const char *const kConverted = "it was converted (cvta.to.shared, __cvta_generic_to_shared) from a pointer";
    SharedRegion r[2];
    shared_regions(r);
    char region[128], past[200];
    if (a >= kStrayFar && is_stray_shared(a)) {
        snprintf(out, room, "%s nowhere near this block's shared memory (a global or local address?)", kConverted);
        return;
    }
    if (is_stray_shared(a)) {
        const unsigned i = (unsigned)((a - kStrayNear) >> 28) & 1;
        const int64_t off = (int64_t)((a - kStrayNear) & ((1u << 28) - 1)) - (int64_t)kStrayMid - r[i].addr;
        shared_region_name(r, i, region, sizeof region);
        if (off < 0) snprintf(out, room, "%s %lld bytes before the start of %s", kConverted, (long long)-off, region);
        else if (i == 0 && past_static_variable(off, past, sizeof past))
            snprintf(out, room, "%s %s", kConverted, past);
        else
            snprintf(out, room, "%s %lld bytes past the end of %s", kConverted, (long long)(off - (int64_t)r[i].bytes),
                     region);
        return;
    }
    // A window address: past the end of the region below it, or before the first one.
    int below = -1;
    for (int i = 0; i < 2; ++i)
        if (r[i].bytes && a >= r[i].addr && (below < 0 || r[i].addr > r[below].addr)) below = i;
    if (below >= 0 && a - r[below].addr < (256u << 10)) {
        const uint64_t end = r[below].addr + r[below].bytes;
        shared_region_name(r, (unsigned)below, region, sizeof region);
        if (a < end)
            snprintf(out, room, "its last %llu bytes lie past the end of %s", (unsigned long long)(a + bytes - end),
                     region);
        else if (below == 0 && past_static_variable((int64_t)(a - r[0].addr), past, sizeof past))
            snprintf(out, room, "it starts %s", past);
        else if (a == end) snprintf(out, room, "it starts at the end of %s", region);
        else snprintf(out, room, "it starts %llu bytes past the end of %s", (unsigned long long)(a - end), region);
        return;
    }
    if (below < 0 && (r[0].bytes || r[1].bytes)) {
        const unsigned first = r[0].bytes ? 0 : 1;
        shared_region_name(r, first, region, sizeof region);
        snprintf(out, room, "it lies %llu bytes before the start of %s", (unsigned long long)(r[first].addr - a), region);
        return;
    }
    snprintf(out, room, "a generic pointer where a cvta.to.shared address belongs?");
}

// shared_address_place, and where the launch gives no dynamic shared memory, that too: a
// kernel's extern __shared__ array then has no bytes, and a pointer into it lies in none of
// the regions (the usual cause: no smem= given).
inline void shared_address_note(uint64_t a, size_t bytes, char *out, size_t room) {
    shared_address_place(a, bytes, out, room);
    if (worker().launch->dynamic_smem == 0) {
        const size_t used = strlen(out);
        snprintf(out + used, room - used, " (the launch gives no dynamic shared memory: no smem= was given)");
    }
}

inline uint32_t shared_addr_or_fail(const void *p, size_t bytes, const char *what) {
    uint32_t a;
    if (!shared_addr(p, bytes, &a)) fail("%s: %p is not an address in this block's shared memory", what, p);
    return a;
}

// ---- Per-block state of the units ----

constexpr unsigned kMaxWgmmaOps = 64;  // wgmma.mma_async a warp may have in flight
constexpr unsigned kWgLog = 64;        // issues remembered per warpgroup to compare descriptors
constexpr unsigned kMaxBars = 64;      // mbarriers per block whose end state is checked

enum class WgType : unsigned char { f16, bf16, tf32, e4m3, e5m2 };

inline bool wg_fp8(WgType t) { return t == WgType::e4m3 || t == WgType::e5m2; }
inline unsigned wg_bytes(WgType t) { return t == WgType::tf32 ? 4 : wg_fp8(t) ? 1 : 2; }

// One warp's share of one wgmma.mma_async, waiting for the wgmma.wait_group that runs it.
struct WgmmaOp {
    uint64_t desc_a, desc_b;
    uint32_t a_regs[32][4];  // A from registers (the RS form)
    float *d[32];            // each lane's accumulators
    unsigned group;
    unsigned seq;  // the warp's wgmma number: the same instruction has the same in every warp
    unsigned short n;
    WgType type, type_b;  // A's and B's: FP8 may mix E4M3 and E5M2
    bool a_in_regs, scale_d, trans_a, trans_b;
    bool d_f16;  // FP16 accumulators, two a 32-bit register, where d points at N/4 of them
    bool ran;  // a wait has run it (perhaps a partner's): in flight for this warp until its own
    signed char scale_a, scale_b;
    const char *site_file;  // the line that issued it (inline PTX's), or null
    unsigned site_line;
};

struct WarpWgmma {
    WgmmaOp *ops;  // kMaxWgmmaOps, allocated on first use
    unsigned pending, committed, issued;
    // Per commit group (ring of kMaxWgmmaOps), the warp's wgmma issued by its commit: the
    // group's wgmma and every earlier one are those numbered below it.
    unsigned group_end[kMaxWgmmaOps];
    bool fenced;
};

struct WgIssue {
    unsigned seq, warp;
    uint64_t desc_a, desc_b;
    unsigned short n;
    bool valid;
};

struct TmaStore;  // a TMA store in flight (below)

// A TMA copy in flight: the box's bytes in their final (swizzled) order.
struct TmaCopy {
    unsigned char *dst;
    unsigned char *image;
    unsigned bytes;
    uint64_t *bar;
    unsigned fiber;  // the issuing thread, named if landing fails
    const char *site_file;  // the line that issued it, named if landing fails, or null
    unsigned site_line;
};

struct HopperState {
    const void *waiting_on[kMaxThreads];  // the mbarrier of each fiber in AT_MBAR
    // setmaxnreg: how many each thread executed, and a signature of their counts in order
    // (every thread of a warpgroup executes the same ones: .sync.aligned).
    unsigned maxnreg_calls[kMaxThreads];
    uint32_t maxnreg_sig[kMaxThreads];
    bool maxnreg_used;
    // setmaxnreg's register pool, by warpgroup (one instruction of its 128 threads): the
    // setmaxnreg it has completed, the count a thread holds after the last (0 before the
    // first: the launch's count at entry), the count an .inc it waits in asks for (0 when
    // none), and the registers the block's .dec gave back that no .inc has taken yet.
    unsigned wg_granted[kMaxThreads / 128];
    unsigned short wg_nreg[kMaxThreads / 128];
    unsigned short wg_wanted[kMaxThreads / 128];
    long long regs_free;
    // The mbarrier and parity of each fiber's last try_wait that returned false (mbar_try).
    const void *tried_on[kMaxThreads];
    unsigned char tried_parity[kMaxThreads];
    long long wgmma_awaited[kMaxThreads / 32];  // the wgmma a warp in AT_WGMMA waits for
    unsigned char wait_parity[kMaxThreads];
    WarpWgmma warps[kMaxThreads / 32];
    WgIssue log[kMaxThreads / 128][kWgLog];
    TmaCopy *copies;
    unsigned n_copies, cap_copies;
    TmaStore *stores;  // TMA stores not yet completed, in issue order
    unsigned n_stores, cap_stores;
    uint64_t *bars[kMaxBars];  // the mbarriers initialized, checked when the block ends
    unsigned bar_gen[kMaxBars];  // the cluster barriers completed when each was initialized
    unsigned n_bars;
    // The block's schedule of the asynchronous units, from its seed. Eager: a TMA copy lands
    // as soon as the issuing thread switches out, the threads a completed phase wakes run
    // next, and a warp leaving a wgmma instruction runs on ahead of the other warps, so a
    // stage refilled before a wait has covered the wgmma reading it is overwritten under them.
    // Lazy: copies land only when no thread can run and woken threads queue behind the
    // others, so a read no wait covers sees the poison.
    bool eager;
};

inline HopperState &hopper() {
    Worker &w = worker();
    if (!w.hopper) {
        w.hopper = (HopperState *)calloc(1, sizeof(HopperState));
        if (!w.hopper) fail("out of memory for the Hopper units' state");
    }
    return *w.hopper;
}

inline void drop_copies(HopperState &h);

}  // namespace sim

// ---- mbarrier (9.7.13.15) ----
//
// The 64-bit object holds the state, as on a GPU: pending arrivals (bits 0-19), expected
// arrivals (20-39), tx-count (40-60, signed), the current phase's parity (61), and in bits
// 62-63 the pattern 10, which the shared-memory poison (all ones) and zeros do not have.
namespace sim {

struct Mbar {
    unsigned pending, expected, phase;
    int tx;
};

constexpr uint64_t kMbarMark = 2ull << 62;
constexpr uint64_t kMbarInvalid = 1ull << 62;  // what mbarrier.inval leaves
constexpr int kTxLimit = (1 << 20) - 1;  // 9.7.13.15.2

inline uint32_t mbar_addr(const void *bar) {
    uint32_t a = 0;
    shared_addr(bar, 8, &a);
    return a;
}

// The shared address of `bar` in the window of block `owner` (another of the cluster's).
inline uint32_t mbar_addr_in(Worker &owner, const void *bar) {
    Worker *self = tl_worker;
    tl_worker = &owner;
    const uint32_t a = mbar_addr(bar);
    tl_worker = self;
    return a;
}

inline uint64_t *mbar_object(void *bar, const char *what) {
    if ((uintptr_t)bar % 8 || !is_shared(bar, 8))
        fail("%s: %p is not an 8-byte aligned mbarrier in this block's shared memory", what, bar);
    return (uint64_t *)bar;
}

// The mbarrier object is updated atomically on a GPU: its accesses are not race-checked.
SIM_UNINSTRUMENTED inline Mbar mbar_load(uint64_t *bar, const char *what) {
    uint64_t v = *bar;
    if (v == kMbarInvalid)
        fail("%s on the mbarrier at shared address 0x%x, which mbarrier.inval has invalidated (mbarrier.init makes "
             "it one again)",
             what, mbar_addr(bar));
    if ((v >> 62) != 2)
        fail("%s on the mbarrier at shared address 0x%x, which mbarrier.init has not initialized (it holds 0x%016llx)",
             what, mbar_addr(bar), (unsigned long long)v);
    Mbar m;
    m.pending = (unsigned)(v & 0xFFFFF);
    m.expected = (unsigned)((v >> 20) & 0xFFFFF);
    m.tx = (int)((int64_t)(v << 3) >> 43);  // bits 40-60, sign-extended
    m.phase = (unsigned)((v >> 61) & 1);
    return m;
}

SIM_UNINSTRUMENTED inline void mbar_store(uint64_t *bar, const Mbar &m) {
    *bar = kMbarMark | ((uint64_t)m.phase << 61) | (((uint64_t)(uint32_t)m.tx & 0x1FFFFF) << 40) |
           ((uint64_t)m.expected << 20) | m.pending;
}

// A phase completes when no arrival and no transaction byte is pending (9.7.13.15.6): the
// phase flips, the arrival count is reloaded, and the threads waiting on it run again.
// `w`: the block whose shared memory holds the barrier (another of the cluster's, for an
// arrival on a mapa address or a multicast copy's complete-tx).
inline void mbar_settle(Worker &w, uint64_t *bar, Mbar &m) {
    if (m.pending != 0 || m.tx != 0) {
        mbar_store(bar, m);
        return;
    }
    m.phase ^= 1;
    m.pending = m.expected;
    mbar_store(bar, m);
    w.race_epoch++;  // what its waiters do next is ordered after what came before
    if (!w.hopper) return;  // nothing of that block has waited
    HopperState &h = *w.hopper;
    for (unsigned k = 0; k < w.n; ++k) {
        unsigned i = w.order[k];
        if (w.fibers[i].state == AT_MBAR && h.waiting_on[i] == bar) {
            h.waiting_on[i] = nullptr;
            w.at_mbar--;
            if (h.eager) push_front(w, i);
            else push_ready(w, i);
        }
    }
}

inline void mbar_tx(uint64_t *bar, Mbar &m, long long delta, const char *what) {
    long long tx = m.tx + delta;
    if (tx > kTxLimit || tx < -kTxLimit)
        fail("%s: the tx-count of the mbarrier at shared address 0x%x would be %lld, outside the range +-(2^20 - 1)",
             what, mbar_addr(bar), tx);
    m.tx = (int)tx;
}

inline void mbar_init(void *p, unsigned count) {
    uint64_t *bar = mbar_object(p, "mbarrier.init");
    if (count < 1 || count > (1u << 20) - 1)
        fail("mbarrier.init with an expected arrival count of %u (1 to 2^20 - 1)", count);
    Mbar m{count, count, 0, 0};
    mbar_store(bar, m);
    HopperState &h = hopper();
    const unsigned gen = worker().cluster ? worker().cluster->phase : 0;
    for (unsigned i = 0; i < h.n_bars; ++i)
        if (h.bars[i] == bar) {
            h.bar_gen[i] = gen;
            return;
        }
    if (h.n_bars < kMaxBars) {
        h.bar_gen[h.n_bars] = gen;
        h.bars[h.n_bars++] = bar;
    }
}

// An mbarrier of block `owner` that another block of its cluster arrives on or lands copies
// on: its init must be ordered before that by a cluster barrier passed since (mbarrier.init,
// fence.mbarrier_init.release.cluster, then barrier.cluster.arrive.release and wait.acquire
// in both blocks; PTX ISA 9.7.13.4, as CUTLASS's pipelines do it). Without one, the other
// block may not see the init yet on a GPU, and an init landing after its arrival or its
// copy's bytes wipes them: a hang or lost data.
inline void require_published(Worker &owner, uint64_t *bar, const char *what) {
    if (&owner == &worker() || !owner.hopper || !owner.cluster) return;
    const HopperState &h = *owner.hopper;
    for (unsigned i = 0; i < h.n_bars; ++i) {
        if (h.bars[i] != bar || owner.cluster->phase > h.bar_gen[i]) continue;
        fail("%s on the mbarrier at shared address 0x%x of the cluster's block of rank %u, and no cluster barrier "
             "has completed since that block's mbarrier.init: on a GPU this block may not see the init yet, and "
             "an init landing after an arrival or a copy's bytes wipes them (initialize, then "
             "fence.mbarrier_init.release.cluster, then barrier.cluster.arrive and wait in both blocks: the "
             "simulator takes only a cluster barrier as publishing an init)",
             what, mbar_addr_in(owner, bar), owner.rank);
    }
}

// mbarrier.inval: the object stops being an mbarrier, its memory free for other uses. Bytes
// still expected on it, or a TMA copy still to complete on it, would land on whatever the
// memory holds next.
inline void mbar_inval(void *p, const char *what) {
    uint64_t *bar = mbar_object(p, what);
    const Mbar m = mbar_load(bar, what);
    if (m.tx != 0)
        fail("%s of the mbarrier at shared address 0x%x, whose tx-count is %d: %s", what, mbar_addr(bar), m.tx,
             m.tx > 0 ? "bytes an expect_tx announced have not landed" : "bytes landed that no expect_tx announced");
    const HopperState &h = hopper();
    for (unsigned i = 0; i < h.n_copies; ++i)
        if (h.copies[i].bar == bar)
            fail("%s of the mbarrier at shared address 0x%x while a TMA copy that completes on it is in flight", what,
                 mbar_addr(bar));
    *bar = kMbarInvalid;
}

inline void mbar_arrive(void *p, unsigned count, unsigned tx_bytes, const char *what) {
    uint64_t *bar = mbar_object(p, what);
    Mbar m = mbar_load(bar, what);
    mbar_tx(bar, m, tx_bytes, what);
    if (count > m.pending)
        fail("%s on the mbarrier at shared address 0x%x: %u arrival(s), but only %u of %u are pending in this phase "
             "(phase parity %u, tx-count %d)",
             what, mbar_addr(bar), count, m.pending, m.expected, m.phase, m.tx);
    m.pending -= count;
    mbar_settle(worker(), bar, m);
}

// mbarrier.arrive_drop: one arrival, and one fewer expected in every later phase.
inline void mbar_arrive_drop(void *p, const char *what) {
    uint64_t *bar = mbar_object(p, what);
    Mbar m = mbar_load(bar, what);
    if (m.pending == 0 || m.expected == 0)
        fail("%s on the mbarrier at shared address 0x%x: no arrival is pending in this phase", what, mbar_addr(bar));
    m.pending -= 1;
    m.expected -= 1;
    mbar_settle(worker(), bar, m);
}

// mbarrier.arrive.shared::cluster on the barrier at `p`'s offset in block `rank` of the
// cluster (mapa, then a remote arrive: a consumer releasing a stage that another block's
// producer refills by multicast).
inline void mbar_arrive_cluster(void *p, unsigned rank) {
    const char *what = "mbarrier.arrive.shared::cluster";
    mbar_object(p, what);  // an mbarrier of the calling block, mapped to the other's
    Worker &to = cluster_block(rank, what);
    require_running(to, what);
    uint64_t *bar = (uint64_t *)cluster_map(p, rank, what);
    require_published(to, bar, what);
    Worker *self = tl_worker;
    tl_worker = &to;  // the barrier's state and address are that block's
    Mbar m = mbar_load(bar, what);
    tl_worker = self;
    const uint32_t at = mbar_addr_in(to, bar);
    if (m.pending == 0)
        fail("%s on the mbarrier at shared address 0x%x of the cluster's block of rank %u: no arrival is pending in "
             "this phase (phase parity %u, %u expected, tx-count %d)",
             what, at, rank, m.phase, m.expected, m.tx);
    m.pending -= 1;
    mbar_settle(to, bar, m);
}

inline void mbar_expect_tx(void *p, unsigned tx_bytes) {
    uint64_t *bar = mbar_object(p, "mbarrier.expect_tx");
    Mbar m = mbar_load(bar, "mbarrier.expect_tx");
    mbar_tx(bar, m, tx_bytes, "mbarrier.expect_tx");
    mbar_settle(worker(), bar, m);
}

// mbarrier.complete_tx: `bytes` more have landed.
inline void mbar_complete_tx(void *p, unsigned bytes) {
    uint64_t *bar = mbar_object(p, "mbarrier.complete_tx");
    Mbar m = mbar_load(bar, "mbarrier.complete_tx");
    mbar_tx(bar, m, -(long long)bytes, "mbarrier.complete_tx");
    mbar_settle(worker(), bar, m);
}

// try_wait.parity / test_wait.parity: whether the phase of this parity has completed, that is
// the current phase has the other parity (9.7.13.15.16).
inline bool mbar_test(void *p, unsigned parity, const char *what) {
    uint64_t *bar = mbar_object(p, what);
    return mbar_load(bar, what).phase != (parity & 1);
}

// Blocks the calling thread until the phase of this parity has completed. A GPU's try_wait
// loop spins (suspending in hardware for a while); here the fiber sleeps until the phase
// completes, and if it never does the block ends as a deadlock naming the barrier.
inline void mbar_wait(void *p, unsigned parity, const char *what) {
    while (!mbar_test(p, parity, what)) {
        Worker &w = worker();
        Fiber &f = fiber();
        HopperState &h = hopper();
        const unsigned me = fiber_index();
        h.waiting_on[me] = p;
        h.wait_parity[me] = (unsigned char)(parity & 1);
        f.state = AT_MBAR;
        w.at_mbar++;
        yield_to_scheduler();
    }
}

// try_wait.parity, as the simulator runs it wherever a kernel writes it (inline PTX, the lab's
// mbar_try_wait): a GPU suspends the thread up to a time limit of its own and returns false if
// the phase has not completed by then (9.7.13.15.16), so a kernel must try again. Here a try
// on a phase not yet complete lets the block's other threads run (the suspension) and returns
// false; the same thread's next try on the same barrier and parity, a retry loop's, sleeps
// until the phase completes (or the block ends as a deadlock naming the barrier). A kernel
// that takes one try for the wait goes on before its data has landed and reads the poison; a
// loop that alternates between barriers tries each again after the others have run.
inline bool mbar_try(void *p, unsigned parity, const char *what) {
    HopperState &h = hopper();
    const unsigned me = fiber_index();
    if (mbar_test(p, parity, what)) {
        h.tried_on[me] = nullptr;
        return true;
    }
    if (h.tried_on[me] == p && h.tried_parity[me] == (parity & 1)) {
        h.tried_on[me] = nullptr;
        mbar_wait(p, parity, what);
        return true;
    }
    h.tried_on[me] = p;
    h.tried_parity[me] = (unsigned char)(parity & 1);
    spin_yield();
    return false;
}

// ---- TMA: cp.async.bulk.tensor (9.7.9.27.1.2) ----

// The simulator's contents of a CUtensorMap, as kernel/src/tma.rs writes them: the fields of
// cuTensorMapEncodeTiled for rank 1 to 5.
struct SimTensorMap {
    uint64_t magic;           // kTensorMapMagic
    uint64_t global;          // global address
    uint64_t dims[5];         // elements, innermost first
    uint64_t strides[4];      // bytes between consecutive indices of dimensions 1 to 4
    uint32_t box[5];          // box edges, innermost first
    uint8_t elem_strides[5];
    uint8_t rank;
    uint8_t dtype;            // CUtensorMapDataType
    uint8_t swizzle;          // CUtensorMapSwizzle: 0 none, 1 32B, 2 64B, 3 128B
    uint8_t oob_fill;         // 0 zeros, 1 NaN
    uint8_t interleave;
    uint32_t elem_bytes;
};
static_assert(offsetof(SimTensorMap, box) == 88 && offsetof(SimTensorMap, rank) == 113 &&
                  offsetof(SimTensorMap, elem_bytes) == 120 && sizeof(SimTensorMap) == sizeof(CUtensorMap),
              "the layout kernel/src/tma.rs writes");
constexpr uint64_t kTensorMapMagic = 0x4b4c544d41503032ull;  // "KLTMAP02"

// The swizzle of 5.5.7 (CuTe Swizzle<log2 W, 4, 3>): the 16-byte chunk of each 128-byte line
// moves to chunk XOR (line mod W), W = span / 16; none when span is 0.
inline uint64_t swizzle_addr(uint64_t a, unsigned span) {
    if (span == 0) return a;
    unsigned w = span / 16;
    return a ^ (((a >> 7) & (w - 1)) << 4);
}

inline void tma_land(const TmaCopy &c) {
    Worker &w = worker();
    Fiber *saved = tl_fiber;
    tl_fiber = &w.fibers[c.fiber];  // a failure names the thread that issued the copy
    // and the line it issued it at (none where unknown), not the access that thread has gone
    // on to make since
    const void *pc = tl_fiber->access_pc;
    const char *file = tl_fiber->site_file;
    const unsigned line = tl_fiber->site_line;
    tl_fiber->access_pc = nullptr;
    tl_fiber->site_file = c.site_file, tl_fiber->site_line = c.site_line;
    Worker *to = shared_owner(c.bar, 8);  // this block's, or another's of the cluster for a multicast
    if (!to) fail("the complete-tx of a TMA copy: its mbarrier %p is in no shared memory of the cluster", c.bar);
    require_running(*to, "a multicast TMA copy");
    memcpy(c.dst, c.image, c.bytes);
#ifdef SIM_INSTRUMENTED
    sim_race_async_write(c.dst, c.bytes);
#endif
    Mbar m = mbar_load(c.bar, "the complete-tx of a TMA copy");
    mbar_tx(c.bar, m, -(long long)c.bytes, "the complete-tx of a TMA copy");
    tl_fiber->access_pc = pc;
    tl_fiber->site_file = file, tl_fiber->site_line = line;
    tl_fiber = saved;
    mbar_settle(*to, c.bar, m);
}

// Grows the array `a` of `n` used entries out of `cap` (plain structs) so that one more fits.
template <class T_>
inline void room_for_one(T_ *&a, unsigned n, unsigned &cap, const char *what) {
    if (n < cap) return;
    unsigned more = cap ? 2 * cap : 16;
    T_ *grown = (T_ *)realloc(a, more * sizeof(T_));
    if (!grown) fail("%s: out of memory", what);
    a = grown;
    cap = more;
}

// The map at `map_ptr` for a copy of `rank` dimensions, checked.
inline SimTensorMap tma_map(const void *map_ptr, unsigned rank, const char *what) {
    SimTensorMap map;
    memcpy(&map, map_ptr, sizeof map);
    if (map.magic != kTensorMapMagic)
        fail("%s: %p is not a tensor map the host encoded (pass the kernel's CUtensorMap parameter)", what, map_ptr);
    if (map.rank != rank)
        fail("%s: a %uD copy through a tensor map of %u dimensions", what, rank, (unsigned)map.rank);
    for (unsigned d = 0; d < rank; ++d)
        if (map.elem_strides[d] != 1 || map.interleave != 0)
            fail("%s: element strides other than 1 and interleaved layouts are not emulated", what);
    const unsigned span = map.swizzle == 0 ? 0 : 16u << map.swizzle;
    if (span && map.box[0] * map.elem_bytes != span)
        fail("%s: a box of %u-byte rows in the %uB swizzle: the simulator emulates swizzled boxes whose rows are "
             "exactly the swizzle's width (what other widths do on a GPU is not documented)",
             what, map.box[0] * map.elem_bytes, span);
    return map;
}

inline unsigned tma_box_bytes(const SimTensorMap &map) {
    unsigned n = map.elem_bytes;
    for (unsigned d = 0; d < map.rank; ++d) n *= map.box[d];
    return n;
}

// Calls f(global element or nullptr outside the tensor, its byte offset in shared memory from
// `da`) for each element of the box at element coordinates `c` (innermost first). Shared
// memory holds the box densely, innermost dimension fastest, in the map's swizzle.
template <class F_>
inline void tma_box(const SimTensorMap &map, const int *c, uint32_t da, F_ f) {
    const unsigned e = map.elem_bytes, span = map.swizzle == 0 ? 0 : 16u << map.swizzle;
    const unsigned total = tma_box_bytes(map) / e;
    unsigned char *g = (unsigned char *)map.global;
    for (unsigned n = 0; n < total; ++n) {
        unsigned rest = n;
        bool inside = true;
        uint64_t at = 0;
        for (unsigned d = 0; d < map.rank; ++d) {
            long long x = (long long)c[d] + rest % map.box[d];
            rest /= map.box[d];
            if (x < 0 || (uint64_t)x >= map.dims[d]) inside = false;
            else at += d == 0 ? (uint64_t)x * e : (uint64_t)x * map.strides[d - 1];
        }
        f(inside ? g + at : nullptr, (unsigned)(swizzle_addr(da + n * e, span) - da));
    }
}

// Where a copy of `bytes` lands: dst in this block or, with `multicast`, dst's offset in each
// block of the cluster whose rank is a bit of `mask`, each counting its bytes on the mbarrier
// at bar's offset there. `to` and `at` get each block's destination and mbarrier; returns the
// mask (this block's bit without multicast). `align`: the destination's required alignment.
inline unsigned copy_targets(void *dst, void *bar_ptr, unsigned bytes, unsigned align, bool multicast, unsigned mask,
                             void **to, void **at, const char *what) {
    const unsigned blocks = worker().cluster->size;
    if (multicast && (mask == 0 || mask >> blocks))
        fail("%s: ctaMask 0x%x names no block or a rank beyond the cluster's %u%s", what, mask, blocks,
             blocks == 1 ? " (the launch has no clusters: a cluster size set by host code, through "
                           "cudaLaunchKernelEx's cudaLaunchAttributeClusterDimension, is not seen; the "
                           "kernel's own __cluster_dims__(X, Y, Z) is)"
                         : "");
    if (!multicast) mask = 1u << worker().rank;
    for (unsigned r = 0; r < blocks; ++r)
        if (mask >> r & 1) {
            to[r] = r == worker().rank ? dst : cluster_map(dst, r, what);
            at[r] = r == worker().rank ? bar_ptr : cluster_map(bar_ptr, r, what);
            if (r != worker().rank) require_published(cluster_block(r, what), (uint64_t *)at[r], what);
        }
    uint32_t da = shared_addr_or_fail(dst, bytes, what);
    if (da % align) fail("%s: the destination (shared address 0x%x) must be %u-byte aligned", what, da, align);
    uint64_t *bar = mbar_object(bar_ptr, what);
    (void)mbar_load(bar, what);  // fails unless initialized
    return mask;
}

// Queues `image` (malloc'ed, taken over) to land at each target copy_targets gave.
inline void queue_copies(unsigned mask, void **to, void **at, unsigned char *image, unsigned bytes,
                         const char *what) {
    HopperState &h = hopper();
    Worker &w = worker();
    for (unsigned r = 0; r < w.cluster->size; ++r) {
        if (!(mask >> r & 1)) continue;
        unsigned char *img = image;
        if (mask >> (r + 1)) {  // not the last destination: a copy of its own
            img = (unsigned char *)malloc(bytes);
            if (!img) fail("%s: out of memory", what);
            memcpy(img, image, bytes);
        }
        TmaCopy copy{(unsigned char *)to[r], img, bytes, (uint64_t *)at[r], (unsigned)(tl_fiber - w.fibers),
                     tl_fiber->site_file, tl_fiber->site_line};
        room_for_one(h.copies, h.n_copies, h.cap_copies, what);
        h.copies[h.n_copies++] = copy;
    }
}

// cp.async.bulk.tensor.Nd.shared::cluster.global.tile.mbarrier::complete_tx::bytes
// [dst], [map, {c0, ...}], [bar]: the box at element coordinates c (innermost first), elements
// outside the tensor filled (5.5.3.3), written to dst in the map's swizzle; with `multicast`
// (.multicast::cluster), into every block of `mask`.
SIM_UNINSTRUMENTED inline void tma_load(void *dst, const void *map_ptr, void *bar_ptr, const int *c, unsigned rank,
                                        bool multicast = false, unsigned mask = 1) {
    char what[64];
    snprintf(what, sizeof what, "cp.async.bulk.tensor.%ud%s", rank, multicast ? " (multicast::cluster)" : "");
    const SimTensorMap map = tma_map(map_ptr, rank, what);
    const unsigned e = map.elem_bytes, bytes = tma_box_bytes(map);
    void *to[kMaxCluster], *at[kMaxCluster];
    mask = copy_targets(dst, bar_ptr, bytes, 128, multicast, mask, to, at, what);
    const uint32_t da = shared_addr_or_fail(dst, bytes, what);
    unsigned char *image = (unsigned char *)malloc(bytes);
    if (!image) fail("%s: out of memory", what);
    // The box from global memory (read now: a bad map faults at the instruction), each element
    // placed where the swizzle of its shared address puts it.
    unsigned char fill[4];
    uint32_t nan32 = 0x7FC00000u;
    uint16_t nan16 = map.dtype == 9 ? 0x7FC0 : 0x7E00;  // bf16 or f16 quiet NaN
    if (map.oob_fill == 1 && e == 4) memcpy(fill, &nan32, 4);
    else if (map.oob_fill == 1 && e == 2) memcpy(fill, &nan16, 2);
    else memset(fill, 0, sizeof fill);
    tma_box(map, c, da, [&](const unsigned char *from, unsigned to) {
        if (from) {
            memcpy(image + to, from, e);
            SIM_GLOBAL_READ(from, e);
        } else
            memcpy(image + to, fill, e);
    });
    queue_copies(mask, to, at, image, bytes, what);
}

// cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [dst], [src], size, [bar]:
// `size` contiguous bytes (a multiple of 16, both addresses 16-byte aligned), read now, landing
// as a TMA box does; with `multicast`, into every block of `mask`.
SIM_UNINSTRUMENTED inline void bulk_load(void *dst, const void *src, unsigned size, void *bar_ptr, bool multicast,
                                         unsigned mask) {
    const char *what = multicast ? "cp.async.bulk (multicast::cluster)" : "cp.async.bulk";
    if (size == 0 || size % 16 || (uintptr_t)src % 16)
        fail("%s: %u bytes from %p; the size must be a positive multiple of 16 and the source 16-byte aligned", what,
             size, src);
    void *to[kMaxCluster], *at[kMaxCluster];
    mask = copy_targets(dst, bar_ptr, size, 16, multicast, mask, to, at, what);
    unsigned char *image = (unsigned char *)malloc(size);
    if (!image) fail("%s: out of memory", what);
    memcpy(image, src, size);
    SIM_GLOBAL_READ(src, size);
    queue_copies(mask, to, at, image, size, what);
}

// The 2-D load the lab's rungs issue (lab/hopper.h).
inline void tma_load_2d(void *dst, const void *map_ptr, void *bar_ptr, int c0, int c1, bool multicast = false,
                        unsigned mask = 1) {
    const int c[2] = {c0, c1};
    tma_load(dst, map_ptr, bar_ptr, c, 2, multicast, mask);
}

// ---- TMA stores: cp.async.bulk.tensor.Nd.global.shared::cta.bulk_group (9.7.9.27.1.2) ----
//
// The TMA reads the box from shared memory some time after the instruction and writes it to
// global memory; the issuing thread's cp.async.bulk.commit_group closes a bulk async-group and
// its cp.async.bulk.wait_group{.read} N waits until at most N of its groups are pending
// (9.7.9.27.3). Here the store keeps the bytes shared memory held at issue and completes at
// that wait (or when the block ends): shared memory that changed in between was written while
// the TMA could still be reading it, which fails the row. The global writes happen then too.

// What a bulk store does with each element it brings to global memory: copies it, or
// reduces it into what is there (cp.reduce.async.bulk's .redOp).
enum RedOp : uint8_t { RED_COPY, RED_ADD, RED_MIN, RED_MAX, RED_INC, RED_DEC, RED_AND, RED_OR, RED_XOR };
enum RedType : uint8_t { RED_F16, RED_BF16, RED_F32, RED_F64, RED_U32, RED_S32, RED_U64, RED_S64 };

inline const char *red_op_name(RedOp op) {
    static const char *names[] = {"copy", "add", "min", "max", "inc", "dec", "and", "or", "xor"};
    return names[op];
}
inline const char *red_type_name(RedType t) {
    static const char *names[] = {"f16", "bf16", "f32", "f64", "u32", "s32", "u64", "s64"};
    return names[t];
}

// A TMA store in flight: a box of a tensor map, or (map.rank 0) `bytes` contiguous bytes.
struct TmaStore {
    SimTensorMap map;
    int c[5];
    unsigned char *global;  // a plain bulk store's destination
    unsigned bytes;
    const unsigned char *src;
    unsigned char *image;  // what shared memory held at issue
    uint32_t da;
    unsigned fiber;
    unsigned group;  // the issuing thread's bulk groups committed before it
    RedOp op;        // a reduction (cp.reduce.async.bulk) into global memory, or RED_COPY
    RedType type;    // its element type
    const char *site_file;  // the line that issued it (inline PTX's), or null
    unsigned site_line;
};

// The element types of a reduction: the tensor map's (CUtensorMapDataType) or the
// instruction's.
inline RedType red_type_of_map(const SimTensorMap &m, const char *what) {
    switch (m.dtype) {
        case 2: return RED_U32;
        case 3: return RED_S32;
        case 4: return RED_U64;
        case 5: return RED_S64;
        case 6: return RED_F16;
        case 7: return RED_F32;
        case 8: return RED_F64;
        case 9: return RED_BF16;
        default: fail("%s: a reduction into a tensor map of data type %u is not emulated", what, m.dtype);
    }
}

inline unsigned red_bytes(RedType t) {
    return t == RED_F16 || t == RED_BF16 ? 2 : t == RED_F32 || t == RED_U32 || t == RED_S32 ? 4 : 8;
}

// Which operations an element type takes, as ptxas accepts them for cp.reduce.async.bulk: .add
// on 16-bit floats, .f32, .f64, .u32, .s32, .u64; .min and .max on 16-bit floats and the
// integers; .inc and .dec on .u32; the bitwise ones on integers (.b32, .b64). A tensor map's
// element type is known only when the copy runs, so this is checked then.
inline void red_check(RedOp op, RedType t, const char *what) {
    const bool half = t == RED_F16 || t == RED_BF16, integer = t >= RED_U32;
    bool valid;
    switch (op) {
        case RED_ADD: valid = t != RED_S64; break;
        case RED_MIN:
        case RED_MAX: valid = half || integer; break;
        case RED_INC:
        case RED_DEC: valid = t == RED_U32; break;
        default: valid = integer;
    }
    if (!valid) fail("%s: .%s is not an operation on .%s elements", what, red_op_name(op), red_type_name(t));
}

template <class T_>
inline T_ red_int(RedOp op, T_ old, T_ v) {
    switch (op) {
        case RED_ADD: return (T_)(old + v);
        case RED_MIN: return old < v ? old : v;
        case RED_MAX: return old > v ? old : v;
        case RED_INC: return old >= v ? 0 : (T_)(old + 1);
        case RED_DEC: return (old == 0 || old > v) ? v : (T_)(old - 1);
        case RED_AND: return old & v;
        case RED_OR: return old | v;
        case RED_XOR: return old ^ v;
        default: return v;
    }
}

inline double red_float(RedOp op, double old, double v) {
    return op == RED_ADD ? old + v : op == RED_MIN ? (old < v ? old : v) : (old > v ? old : v);
}

// Applies `op` with the element at `src` to the element at `dst`, atomically (blocks of other
// OS threads may reduce into the same element).
SIM_UNINSTRUMENTED inline void red_element(unsigned char *dst, const unsigned char *src, RedOp op, RedType t) {
    auto cas = [&](auto zero, auto combine) {
        using U_ = decltype(zero);
        U_ v, old;
        memcpy(&v, src, sizeof v);
        __atomic_load(reinterpret_cast<U_ *>(dst), &old, __ATOMIC_RELAXED);
        U_ want;
        do want = combine(old, v);
        while (!__atomic_compare_exchange(reinterpret_cast<U_ *>(dst), &old, &want, false, __ATOMIC_SEQ_CST,
                                          __ATOMIC_RELAXED));
    };
    switch (t) {
        case RED_F16:
        case RED_BF16:
            cas((uint16_t)0, [&](uint16_t o, uint16_t v) {
                const bool bf = t == RED_BF16;
                auto wide = [&](uint16_t h) {
                    return bf ? __bfloat162float(__ushort_as_bfloat16(h)) : __half2float(__ushort_as_half(h));
                };
                const float r = (float)red_float(op, wide(o), wide(v));
                return bf ? __bfloat16_as_ushort(__float2bfloat16(r)) : __half_as_ushort(__float2half(r));
            });
            break;
        case RED_F32:
            cas((uint32_t)0, [&](uint32_t o, uint32_t v) {
                float a, b;
                memcpy(&a, &o, 4), memcpy(&b, &v, 4);
                const float r = op == RED_ADD ? a + b : (float)red_float(op, a, b);
                uint32_t out;
                memcpy(&out, &r, 4);
                return out;
            });
            break;
        case RED_F64:
            cas((uint64_t)0, [&](uint64_t o, uint64_t v) {
                double a, b;
                memcpy(&a, &o, 8), memcpy(&b, &v, 8);
                const double r = red_float(op, a, b);
                uint64_t out;
                memcpy(&out, &r, 8);
                return out;
            });
            break;
        case RED_U32: cas((uint32_t)0, [&](uint32_t o, uint32_t v) { return red_int(op, o, v); }); break;
        case RED_S32: cas((int32_t)0, [&](int32_t o, int32_t v) { return red_int(op, o, v); }); break;
        case RED_U64: cas((uint64_t)0, [&](uint64_t o, uint64_t v) { return red_int(op, o, v); }); break;
        case RED_S64: cas((int64_t)0, [&](int64_t o, int64_t v) { return red_int(op, o, v); }); break;
    }
}

// Writes `bytes` from `from` to `to`: copied, or reduced element by element.
SIM_UNINSTRUMENTED inline void store_bytes(unsigned char *to, const unsigned char *from, unsigned bytes, RedOp op,
                                           RedType t) {
    if (op == RED_COPY) {
        memcpy(to, from, bytes);
        return;
    }
    const unsigned e = red_bytes(t);
    for (unsigned i = 0; i + e <= bytes; i += e) red_element(to + i, from + i, op, t);
}

SIM_UNINSTRUMENTED inline void tma_store_complete(Worker &w, TmaStore &s) {
    if (memcmp(s.src, s.image, s.bytes) != 0) {
        unsigned at = 0;
        while (s.src[at] == s.image[at]) ++at;
        const Fiber &f = w.fibers[s.fiber];
        char site[160] = "", writer[80] = "";
        if (s.site_file) snprintf(site, sizeof site, " at %s:%u", shown_file(s.site_file), s.site_line);
        // The writer, where the race checker keeps the byte's last write.
        size_t cell;
        if (w.race && race_cell(w, s.src + at, cell) && w.race[cell].write.thread != 0 &&
            w.race[cell].write.thread <= w.n) {
            const Fiber &o = w.fibers[w.race[cell].write.thread - 1];
            snprintf(writer, sizeof writer, " by thread (%u,%u,%u)", o.tid.x, o.tid.y, o.tid.z);
        }
        fail("shared address 0x%x, which a %s issued by thread (%u,%u,%u)%s reads, was written%s before that store "
             "completed: the TMA may read the new bytes. The issuing thread waits with cp.async.bulk.wait_group.read, "
             "then a barrier hands the buffer back",
             s.da + at,
             s.op != RED_COPY ? (s.map.rank ? "TMA reduction (cp.reduce.async.bulk.tensor)"
                                            : "bulk reduction (cp.reduce.async.bulk)")
             : s.map.rank     ? "TMA store (cp.async.bulk.tensor ... global.shared::cta)"
                              : "bulk store (cp.async.bulk.global.shared::cta)",
             f.tid.x, f.tid.y, f.tid.z, site, writer);
    }
    if (s.map.rank == 0) {
        store_bytes(s.global, s.image, s.bytes, s.op, s.type);
    } else {
        const unsigned e = s.map.elem_bytes;
        tma_box(s.map, s.c, s.da, [&](unsigned char *to, unsigned from) {
            // Elements outside the tensor are not written.
            if (to) store_bytes(to, s.image + from, e, s.op, s.type);
        });
    }
    free(s.image);
    s.image = nullptr;
}

// Queues a store of `bytes` from shared memory at `src` (aligned to `align`) in the calling
// thread's open bulk group; the caller fills in what it writes.
inline TmaStore &queue_store(const void *src, unsigned bytes, unsigned align, const char *what) {
    uint32_t da = shared_addr_or_fail(src, bytes, what);
    if (da % align) fail("%s: the source (shared address 0x%x) must be %u-byte aligned", what, da, align);
    SIM_ASYNC_PROXY_READ(src, bytes, what);
    HopperState &h = hopper();
    Worker &w = worker();
    room_for_one(h.stores, h.n_stores, h.cap_stores, what);
    TmaStore &s = h.stores[h.n_stores++];
    memset(&s, 0, sizeof s);
    s.bytes = bytes;
    s.src = (const unsigned char *)src;
    s.image = (unsigned char *)malloc(bytes);
    if (!s.image) fail("%s: out of memory", what);
    memcpy(s.image, src, bytes);
    s.da = da;
    s.fiber = (unsigned)(tl_fiber - w.fibers);
    s.group = tl_fiber->bulk_groups;
    s.site_file = tl_fiber->site_file;
    s.site_line = tl_fiber->site_line;
    return s;
}

// A TMA store (op RED_COPY) or reduction (cp.reduce.async.bulk.tensor, of the map's element
// type) of a box of shared memory at `src` to coordinates `c` of the map.
inline void tma_store(const void *map_ptr, const void *src, const int *c, unsigned rank, RedOp op = RED_COPY) {
    char what[80];
    snprintf(what, sizeof what, "%s.%ud (a TMA %s)", op == RED_COPY ? "cp.async.bulk.tensor" : "cp.reduce.async.bulk.tensor",
             rank, op == RED_COPY ? "store" : "reduction");
    const SimTensorMap map = tma_map(map_ptr, rank, what);
    const RedType type = op == RED_COPY ? RED_U32 : red_type_of_map(map, what);
    if (op != RED_COPY) red_check(op, type, what);
    TmaStore &s = queue_store(src, tma_box_bytes(map), 128, what);
    s.map = map;
    s.op = op;
    s.type = type;
    for (unsigned d = 0; d < rank; ++d) s.c[d] = c[d];
}

// cp.async.bulk.global.shared::cta.bulk_group [dst], [src], size: `size` contiguous bytes (a
// multiple of 16, both addresses 16-byte aligned) back to global memory.
// cp.reduce.async.bulk.global.shared::cta.bulk_group.op.type: the same, each element reduced
// into global memory (`op` not RED_COPY).
inline void bulk_store(void *dst, const void *src, unsigned size, RedOp op = RED_COPY, RedType type = RED_U32) {
    const char *what = op == RED_COPY ? "cp.async.bulk (a bulk store)" : "cp.reduce.async.bulk (a bulk reduction)";
    if (size == 0 || size % 16 || (uintptr_t)dst % 16)
        fail("%s: %u bytes to %p; the size must be a positive multiple of 16 and the destination 16-byte aligned",
             what, size, dst);
    if (op != RED_COPY) red_check(op, type, what);
    TmaStore &s = queue_store(src, size, 16, what);
    s.global = (unsigned char *)dst;
    s.op = op;
    s.type = type;
}

// What a block that failed left in flight.
inline void drop_copies(HopperState &h) {
    for (unsigned i = 0; i < h.n_copies; ++i) free(h.copies[i].image);
    h.n_copies = 0;
    for (unsigned i = 0; i < h.n_stores; ++i) free(h.stores[i].image);
    h.n_stores = 0;
}

// cp.async.bulk.commit_group
inline void bulk_commit() { fiber().bulk_groups++; }

// cp.async.bulk.wait_group{.read} n: completes the calling thread's stores of every committed
// group but the newest n.
inline void bulk_wait(unsigned n) {
    Worker &w = worker();
    if (!w.hopper) return;
    HopperState &h = *w.hopper;
    const unsigned me = (unsigned)(tl_fiber - w.fibers), committed = tl_fiber->bulk_groups;
    for (unsigned i = 0; i < h.n_stores; ++i) {
        TmaStore &s = h.stores[i];
        if (s.fiber == me && s.group + n < committed) tma_store_complete(w, s);  // frees its image
    }
    unsigned kept = 0;
    for (unsigned i = 0; i < h.n_stores; ++i)
        if (h.stores[i].image) h.stores[kept++] = h.stores[i];
    h.n_stores = kept;
}

// ---- wgmma (9.7.15) ----

// A shared-memory matrix descriptor's fields (9.7.15.5.1.2.2).
struct Desc {
    uint32_t start, lbo, sbo;  // bytes
    unsigned base, mode;       // base offset; swizzle: 0 none, 1 128B, 2 64B, 3 32B
    unsigned span() const { return mode == 1 ? 128 : mode == 2 ? 64 : mode == 3 ? 32 : 0; }
};

inline const char *swizzle_name(unsigned mode) {
    return mode == 1 ? "128B swizzle" : mode == 2 ? "64B swizzle" : mode == 3 ? "32B swizzle" : "no swizzle";
}

inline Desc decode_desc(uint64_t d, const char *which) {
    // Reserved: bits 14-15, 30-31, 46-48 and 52-61. Bits 14-15 and 30-31, above the 14-bit
    // start address and leading offset (bits 4-17 of a byte count, all of shared memory), are
    // ignored: public kernels set them (`desc |= 3 << 14`) and their authors report correct
    // results on H100s. The others are refused.
    const uint64_t reserved = (7ull << 46) | (0x3FFull << 52);
    if (d & reserved)
        fail("wgmma: the %s descriptor 0x%016llx sets reserved bits (0x%016llx): a field shifted into its neighbour?",
             which, (unsigned long long)d, (unsigned long long)(d & reserved));
    Desc x;
    x.start = (uint32_t)(d & 0x3FFF) << 4;
    x.lbo = (uint32_t)((d >> 16) & 0x3FFF) << 4;
    x.sbo = (uint32_t)((d >> 32) & 0x3FFF) << 4;
    x.base = (unsigned)((d >> 49) & 7);
    x.mode = (unsigned)(d >> 62);
    if (x.mode) {
        // The swizzle is that of the absolute address, as the TMA writes it. PTX asks a matrix
        // that starts off its pattern's boundary to carry the pattern's phase in the base
        // offset; public kernels leave it 0 there and check correct against cuBLAS on H100s
        // (the fast.cu worklog's kernels 4, 5, 7 and 9, whose static mbarriers put their
        // dynamic tiles 128 bytes past a boundary), as they do for the k-steps inside a
        // swizzled row, which move the start within the pattern. So 0 and the phase both read
        // the absolute swizzle; another base offset is undocumented.
        unsigned w = x.span() / 16, phase = (x.start >> 7) & (w - 1);
        if (x.base != 0 && (x.base & (w - 1)) != phase)
            fail("wgmma: the %s descriptor 0x%016llx starts at shared address 0x%x, phase %u of the %s pattern, but "
                 "its base offset is %u (the phase, or 0 for a tile on a %u-byte boundary)",
                 which, (unsigned long long)d, x.start, phase, swizzle_name(x.mode), x.base, 8 * x.span());
    }
    return x;
}

// The shared address of element (i, k) of a matrix through its descriptor: i along M (A) or
// N (B), k along K, e bytes an element. The canonical layouts of 9.7.15.5.1.2.1 (CuTe
// make_gmma_desc): T = 16 / e elements per 16-byte chunk, W = swizzle span / 16.
inline uint64_t desc_addr(const Desc &x, bool mn_major, unsigned i, unsigned k, unsigned e) {
    const unsigned t = 16 / e, span = x.span();
    uint64_t a;
    if (!mn_major && span)
        a = x.start + (uint64_t)(i % 8) * span + (uint64_t)(i / 8) * x.sbo + (uint64_t)k * e;
    else if (!mn_major)
        a = x.start + (uint64_t)(i % 8) * 16 + (uint64_t)(i / 8) * x.sbo + (uint64_t)(k % t) * e + (uint64_t)(k / t) * x.lbo;
    else if (span) {
        const unsigned row = span / e;  // elements along M/N in one swizzle row
        a = x.start + (uint64_t)(i % row) * e + (uint64_t)(i / row) * x.lbo + (uint64_t)(k % 8) * span +
            (uint64_t)(k / 8) * x.sbo;
    } else
        a = x.start + (uint64_t)(i % t) * e + (uint64_t)(i / t) * x.sbo + (uint64_t)(k % 8) * 16 + (uint64_t)(k / 8) * x.lbo;
    return swizzle_addr(a, span);
}

inline float wg_element(WgType t, const void *p) {
    if (t == WgType::tf32) {
        float f;
        memcpy(&f, p, 4);
        return nvcuda::wmma::__float_to_tf32(f);
    }
    if (wg_fp8(t)) return fp8_value(*(const unsigned char *)p, t == WgType::e5m2);
    unsigned short h;
    memcpy(&h, p, 2);
    return t == WgType::f16 ? __half2float(__ushort_as_half(h)) : __bfloat162float(__ushort_as_bfloat16(h));
}

inline float wg_read(WgType t, const Desc &x, bool mn_major, unsigned i, unsigned k, const char *which,
                     uint64_t desc) {
    const unsigned e = wg_bytes(t);
    uint64_t a = desc_addr(x, mn_major, i, k, e);
    const void *p = shared_ptr(a, e);
    if (!p)
        fail("wgmma: element (%u, %u) of %s lies at shared address 0x%llx, outside this block's shared memory "
             "(descriptor 0x%016llx: start 0x%x, LBO %u, SBO %u, %s, %s-major)",
             i, k, which, (unsigned long long)a, (unsigned long long)desc, x.start, x.lbo, x.sbo,
             swizzle_name(x.mode), mn_major ? (which[0] == 'A' ? "M" : "N") : "K");
    SIM_ASYNC_PROXY_READ(p, e, "wgmma");
    return wg_element(t, p);
}

// The multiply-add of one warp's part of a wgmma, from its operands in floats (A's 16 rows,
// B as Bl[k * 256 + n]) into each lane's accumulators. Uninstrumented: it touches no shared
// or global memory, and the accumulators are the wgmma's own to write.
// FP16 accumulators hold element e in the low (e even) or high half of register e / 2; C is
// widened exactly, the products summed in FP32, and D rounded to FP16 once, as mma.sync's.
SIM_UNINSTRUMENTED inline void wgmma_accumulate(const WgmmaOp &op, const float (*A_)[32], const float *Bl, unsigned K_) {
    for (unsigned l = 0; l < 32; ++l) {
        const unsigned g = l / 4, q = l % 4;
        float *d = op.d[l];
        unsigned short *h = reinterpret_cast<unsigned short *>(op.d[l]);
        for (unsigned j = 0; j < op.n / 8u; ++j)
            for (unsigned a = 0; a < 2; ++a)
                for (unsigned b = 0; b < 2; ++b) {
                    const unsigned row = g + 8 * a, col = 8 * j + 2 * q + b, e = 4 * j + 2 * a + b;
                    float acc = !op.scale_d ? 0.0f : op.d_f16 ? __half2float(__ushort_as_half(h[e])) : d[e];
                    for (unsigned k = 0; k < K_; ++k)
                        acc += (op.scale_a * A_[row][k]) * (op.scale_b * Bl[k * 256 + col]);
                    if (op.d_f16)
                        h[e] = __half_as_ushort(__float2half_rn(acc));
                    else
                        d[e] = acc;
                }
    }
}

// Runs warp `warp`'s share of `op`: rows 16 (warp % 4) .. + 15 of the 64 x N product, reading
// shared memory now, and writes the lanes' accumulators in the m64nNk16 D layout:
// d[4j + 2a + b] = D[16w + g + 8a][8j + 2q + b], g = lane / 4, q = lane % 4 (9.7.15.5.1.1.1).
inline void wgmma_run(const WgmmaOp &op, unsigned warp) {
    const IssuedAt issued(op.site_file, op.site_line);
    // Its reads are the warpgroup's operation's, not the running thread's (race_ordered).
    Worker &w = worker();
    struct Reader {
        Worker &w;
        ~Reader() { w.wgmma_reader = 0; }
    } reader{w};
    w.wgmma_reader = (uint16_t)(kWgmmaUnit + warp / 4);
    w.wgmma_seq = (uint16_t)op.seq;
    const unsigned K_ = 32 / wg_bytes(op.type), N_ = op.n, r0 = 16 * (warp % 4);
    // A's rows of this warp; B as Bl[k * 256 + n], on the fiber's stack up to k16 (16 KiB),
    // on the heap for FP8's k32.
    float A_[16][32], b_k16[16 * 256];
    struct Heap {
        float *p;
        ~Heap() { free(p); }
    } heap{K_ > 16 ? (float *)malloc(sizeof(float) * K_ * 256) : nullptr};
    if (K_ > 16 && !heap.p) fail("out of memory for a wgmma's B");
    float *Bl = heap.p ? heap.p : b_k16;
    if (op.a_in_regs && wg_fp8(op.type)) {
        // 8-bit A in registers: the mma.m16n8k32 A layout, four elements a register, the
        // lowest-indexed in the low byte: register r holds row g + 8 (r % 2), columns
        // 4q + 16 (r / 2) .. + 3.
        for (unsigned l = 0; l < 32; ++l) {
            const unsigned g = l / 4, q = l % 4;
            for (unsigned r = 0; r < 4; ++r)
                for (unsigned j = 0; j < 4; ++j) {
                    const unsigned char byte = (unsigned char)(op.a_regs[l][r] >> (8 * j));
                    A_[g + 8 * (r % 2)][4 * q + j + 16 * (r / 2)] = wg_element(op.type, &byte);
                }
        }
    } else if (op.a_in_regs) {
        // A in registers: the mma.m16n8k16 A layout on the warp's 16 rows (9.7.15.5.1.1.1).
        for (unsigned l = 0; l < 32; ++l) {
            const unsigned g = l / 4, q = l % 4;
            for (unsigned r = 0; r < 4; ++r)
                for (unsigned h = 0; h < 2; ++h) {
                    unsigned short bits = (unsigned short)(op.a_regs[l][r] >> (16 * h));
                    float v = op.type == WgType::f16 ? __half2float(__ushort_as_half(bits))
                                                     : __bfloat162float(__ushort_as_bfloat16(bits));
                    A_[g + 8 * (r % 2)][2 * q + h + 8 * (r / 2)] = v;
                }
        }
    } else {
        Desc da = decode_desc(op.desc_a, "A");
        for (unsigned i = 0; i < 16; ++i)
            for (unsigned k = 0; k < K_; ++k) A_[i][k] = wg_read(op.type, da, op.trans_a, r0 + i, k, "A", op.desc_a);
    }
    Desc db = decode_desc(op.desc_b, "B");
    for (unsigned n = 0; n < N_; ++n)
        for (unsigned k = 0; k < K_; ++k) Bl[k * 256 + n] = wg_read(op.type_b, db, op.trans_b, n, k, "B", op.desc_b);
    wgmma_accumulate(op, A_, Bl, K_);
}

inline WarpWgmma &warp_wgmma() {
    HopperState &h = hopper();
    WarpWgmma &ws = h.warps[fiber().warp];
    if (!ws.ops) {
        ws.ops = (WgmmaOp *)calloc(kMaxWgmmaOps, sizeof(WgmmaOp));
        if (!ws.ops) fail("out of memory for wgmma state");
    }
    return ws;
}

// The four warps of the calling thread's warpgroup must all exist (9.7.15.1).
inline void check_warpgroup(const char *what) {
    Worker &w = worker();
    unsigned first = fiber().warp & ~3u;
    for (unsigned k = first; k < first + 4; ++k)
        if (k * 32 >= w.n || w.warps[k].present != 0xFFFFFFFFu)
            fail("%s needs a whole warpgroup (warps %u-%u, 128 threads); this block has %u threads", what, first,
                 first + 3, w.n);
}

struct WgIn {
    float *d;
    uint32_t a[4];
    uint64_t desc_a, desc_b;
};
struct WgNone {
    char unused;
};

// A warp of the warpgroup of `warp` has issued a wgmma or a thread of it has exited: the
// threads of the warpgroup waiting in wgmma.wait_group for their partners look again.
inline void wake_wgmma_waiters(Worker &w, unsigned warp) {
    if (!w.at_wgmma) return;
    const unsigned first = warp & ~3u;
    for (unsigned k = 0; k < w.n; ++k) {
        unsigned i = w.order[k];
        if (w.fibers[i].state == AT_WGMMA && (w.fibers[i].warp & ~3u) == first) {
            w.at_wgmma--;
            push_ready(w, i);
        }
    }
}

// wgmma.mma_async.sync.aligned.m64nNk{16,8,32}.f32.{f16,bf16,tf32,e4m3/e5m2}: every lane of the
// warp gives its accumulators (N / 2 floats) and, for the RS form, its four A registers.
inline void wgmma_issue(float *d, const uint32_t *a_regs, uint64_t desc_a, uint64_t desc_b, unsigned n, WgType type,
                        bool scale_d, int scale_a, int scale_b, bool trans_a, bool trans_b, WgType type_b,
                        bool d_f16 = false) {
    const char *what = "wgmma.mma_async";
    check_warpgroup(what);
    if (n < 8 || n > 256 || n % 8) fail("%s: N = %u (a multiple of 8 up to 256)", what, n);
    if ((type == WgType::tf32 || wg_fp8(type)) && (trans_a || trans_b))
        fail("%s: tf32 and FP8 operands are K-major only (imm-trans-a and imm-trans-b must be 0)", what);
    if ((scale_a != 1 && scale_a != -1) || (scale_b != 1 && scale_b != -1))
        fail("%s: imm-scale-a/b are 1 or -1 (got %d, %d)", what, scale_a, scale_b);
    WarpWgmma &ws = warp_wgmma();
    if (!ws.fenced)
        fail("%s without a wgmma.fence before the warp's first wgmma (PTX ISA 9.7.15.4: the fence orders the "
             "accumulator registers' earlier writes before the wgmma reads them)",
             what);
    WgIn in{d, {0, 0, 0, 0}, desc_a, desc_b};
    if (a_regs) memcpy(in.a, a_regs, sizeof in.a);
    const unsigned warp = fiber().warp;
    const char *site_file = fiber().site_file;
    const unsigned site_line = fiber().site_line;
    const bool front = hopper().eager;
    warp_collective<WgNone>(what, in, [&](const WgIn *ins, WgNone *) {
        for (unsigned l = 1; l < 32; ++l)
            if (ins[l].desc_a != ins[0].desc_a || ins[l].desc_b != ins[0].desc_b)
                fail("%s: lane %u of warp %u gives descriptors A 0x%016llx B 0x%016llx, lane 0 A 0x%016llx B 0x%016llx",
                     what, l, warp, (unsigned long long)ins[l].desc_a, (unsigned long long)ins[l].desc_b,
                     (unsigned long long)ins[0].desc_a, (unsigned long long)ins[0].desc_b);
        // All four warps of the warpgroup must give the same descriptors (9.7.15.5.2).
        HopperState &h = hopper();
        WgIssue &rec = h.log[warp / 4][ws.issued % kWgLog];
        uint64_t da = a_regs ? 0 : desc_a;
        if (rec.valid && rec.seq == ws.issued) {
            if (rec.desc_a != da || rec.desc_b != desc_b || rec.n != n)
                fail("%s: warp %u's wgmma number %u has descriptors A 0x%016llx B 0x%016llx (N %u), warp %u's "
                     "A 0x%016llx B 0x%016llx (N %u): every warp of a warpgroup must give the same",
                     what, warp, ws.issued, (unsigned long long)da, (unsigned long long)desc_b, n, rec.warp,
                     (unsigned long long)rec.desc_a, (unsigned long long)rec.desc_b, rec.n);
        } else {
            rec = WgIssue{ws.issued, warp, da, desc_b, (unsigned short)n, true};
        }
        ws.issued++;
        wake_wgmma_waiters(worker(), warp);
        if (ws.pending == kMaxWgmmaOps)
            fail("%s: more than %u wgmma in flight in warp %u (the simulator's limit): wait for older groups first",
                 what, kMaxWgmmaOps, warp);
        WgmmaOp &op = ws.ops[ws.pending++];
        SIM_WGMMA_ISSUED();
        op.desc_a = desc_a;
        op.desc_b = desc_b;
        op.a_in_regs = a_regs != nullptr;
        for (unsigned l = 0; l < 32; ++l) {
            op.d[l] = ins[l].d;
            memcpy(op.a_regs[l], ins[l].a, sizeof op.a_regs[l]);
        }
        op.group = ws.committed;
        op.seq = ws.issued - 1;
        op.n = (unsigned short)n;
        op.type = type;
        op.type_b = type_b;
        op.scale_d = scale_d;
        op.trans_a = trans_a;
        op.trans_b = trans_b;
        op.d_f16 = d_f16;
        op.scale_a = (signed char)scale_a;
        op.scale_b = (signed char)scale_b;
        op.site_file = site_file;
        op.site_line = site_line;
        op.ran = false;
    }, front);
}

// The same with A and B of one type.
inline void wgmma_issue(float *d, const uint32_t *a_regs, uint64_t desc_a, uint64_t desc_b, unsigned n, WgType type,
                        bool scale_d, int scale_a, int scale_b, bool trans_a, bool trans_b) {
    wgmma_issue(d, a_regs, desc_a, desc_b, n, type, scale_d, scale_a, scale_b, trans_a, trans_b, type);
}

// fence.proxy.async: this thread's generic-proxy writes so far become visible to the async
// proxy (sim_proxy_read checks that wgmma's operands had one after their last write).
inline void fence_proxy_async() {
    Fiber &f = fiber();
    f.proxy_fences++;
    f.fence_epoch = worker().race_epoch;
}

inline void wgmma_fence() {
    check_warpgroup("wgmma.fence");
    WarpWgmma &ws = warp_wgmma();
    warp_collective<WgNone>("wgmma.fence", WgNone{0}, [&](const WgNone *, WgNone *) { ws.fenced = true; },
                            hopper().eager);
}

// wgmma.commit_group: the warp's uncommitted wgmma become one group (possibly empty).
inline void wgmma_commit() {
    check_warpgroup("wgmma.commit_group");
    WarpWgmma &ws = warp_wgmma();
    warp_collective<WgNone>("wgmma.commit_group", WgNone{0}, [&](const WgNone *, WgNone *) {
        ws.group_end[ws.committed % kMaxWgmmaOps] = ws.issued;
        ws.committed++;
    }, hopper().eager);
}

// wgmma.wait_group N: completes, in issue order, the warp's wgmma of every committed group but
// the newest N (9.7.15.7.3: "committed by the executing threads"). A wgmma is one operation of
// the whole warpgroup: it cannot complete before all four warps have issued it, and when it
// completes it has read its operands for all four. So the wait first lets the other warps
// issue up to the last wgmma it completes, then runs every warp's part of those wgmma, reading
// shared memory now: a warp that waited may release the stage for its warpgroup (as the
// producer/consumer kernels do with one elected thread), and a stage released before any
// warp's wait covered the wgmma that read it is caught.
inline void wgmma_wait(unsigned n) {
    check_warpgroup("wgmma.wait_group");
    WarpWgmma &ws = warp_wgmma();
    const unsigned warp = fiber().warp, first = warp & ~3u;
    HopperState &h = hopper();
    auto last_completed = [&]() -> long long {
        if (ws.committed < n) return -1;
        const unsigned older_than = ws.committed - n;
        long long last = -1;
        for (unsigned i = 0; i < ws.pending && ws.ops[i].group < older_than; ++i) last = ws.ops[i].seq;
        return last;
    };
    Worker &w = worker();
    for (long long last = last_completed();;) {
        bool issued = true;
        for (unsigned k = first; k < first + 4; ++k) {
            if ((long long)h.warps[k].issued > last) continue;
            issued = false;
            bool exited = true;
            for (unsigned l = 0; l < 32; ++l) exited &= w.fibers[k * 32 + l].state == DONE;
            if (exited)
                fail("wgmma.wait_group: warp %u of the warpgroup exited without issuing wgmma number %lld, which "
                     "this warp waits for (a wgmma is one operation of all four warps; 9.7.15.1)",
                     k, last);
        }
        if (issued) break;
        // The other warps have still to issue it: sleep until one of them issues or exits.
        h.wgmma_awaited[warp] = last;
        fiber().state = AT_WGMMA;
        w.at_wgmma++;
        yield_to_scheduler();
    }
    warp_collective<WgNone>("wgmma.wait_group", WgNone{0}, [&](const WgNone *, WgNone *) {
        // This warp's accesses from here are ordered after the reads of every wgmma it has now
        // waited for, whichever warp's wait ran them (race_ordered).
        if (ws.committed > n) w.warps[warp].wgmma_done = (uint16_t)ws.group_end[(ws.committed - n - 1) % kMaxWgmmaOps];
        const long long last = last_completed();
        if (last < 0) return;
        for (unsigned k = first; k < first + 4; ++k) {
            WarpWgmma &o = h.warps[k];
            unsigned done = 0;
            for (; done < o.pending && (long long)o.ops[done].seq <= last; ++done)
                if (!o.ops[done].ran) wgmma_run(o.ops[done], k), o.ops[done].ran = true;
            // A partner's registers are its wgmma's until its own wait covers it: they stay
            // on its list, so that an access of them before then is caught (wgmma_accessed).
            if (k != warp) continue;
            memmove(o.ops, o.ops + done, (o.pending - done) * sizeof(WgmmaOp));
            o.pending -= done;
        }
    }, hopper().eager);
}

// An access of this thread to the accumulators of a wgmma in flight (sim_traffic.h's hook
// sees it, in an instrumented build), at code address `pc`: undefined (9.7.15.7.3). ptxas
// makes some such accesses wait for the wgmma (a WARPGROUP.DEPBAR before a read with no
// wgmma.wait_group between the wgmma and it) but not others (a read after a `wait_group 1`
// that leaves the wgmma in flight), so a GPU may hand out accumulators without its product,
// as this would: the row fails, naming the access and the wgmma.
inline void wgmma_accessed(Worker &w, Fiber &f, const void *p, unsigned long bytes, bool write, const void *pc) {
    const unsigned warp = f.warp, lane = (unsigned)(&f - w.fibers) % 32;
    const WarpWgmma &ws = w.hopper->warps[warp];
    const uintptr_t a = (uintptr_t)p;
    for (unsigned i = ws.pending; i-- > 0;) {
        const WgmmaOp &op = ws.ops[i];
        // N/2 accumulators a lane, floats or halves.
        const unsigned size = op.d_f16 ? 2 : sizeof(float);
        const uintptr_t lo = (uintptr_t)op.d[lane], hi = lo + op.n / 2 * size;
        if (a >= hi || a + bytes <= lo) continue;
        char issued[160] = "";
        if (op.site_file) snprintf(issued, sizeof issued, ", issued at %s:%u,", op.site_file, op.site_line);
        if (pc) f.access_pc = pc;
        fail("wgmma: this thread %s accumulator %u of its warp's wgmma number %u%s before a wgmma.wait_group "
             "covers that wgmma: its registers are the wgmma's until then (PTX ISA 9.7.15.7.3), and a GPU may "
             "hand out the accumulators without its product (ptxas waits for it before some such accesses, "
             "not before all); wait with a wgmma.wait_group that covers it first",
             write ? "writes" : "reads", (unsigned)((a - lo) / size), op.seq, issued);
    }
}

// setmaxnreg.{inc,dec}.sync.aligned.u32 n (9.7.19.5). A block starts with the registers ptxas
// gave each thread times its threads (the launch's `regs`). A warpgroup's .dec gives its
// registers above n back to the block's pool; its .inc waits until the pool has what n asks
// for. The first of its threads to reach the instruction does that for all 128, the others
// go on once it is done. So warpgroups that ask for more than the block was given wait
// forever, reported as a deadlock. Without the count at entry (no NVRTC) only the direction
// is checked, against the warpgroup's previous setmaxnreg. Each thread's sequence is kept for
// the block's end, where every thread of a warpgroup must have executed the same ones
// (setmaxnreg_end).
inline void setmaxnreg(unsigned n, const char *what, const char *file = __builtin_FILE(),
                       unsigned line = __builtin_LINE()) {
    // A deadlock names the line of the inline PTX, or of the lab header's caller (already set).
    const IssuedAt site(fiber().site_file ? nullptr : file, line);
    if (n < 24 || n > 256 || n % 8) fail("%s %u: the count must be a multiple of 8 from 24 to 256", what, n);
    Worker &w = worker();
    HopperState &h = hopper();
    const unsigned me = fiber_index(), wg = me / 128, call = ++h.maxnreg_calls[me];
    const bool inc = strstr(what, ".inc") != nullptr;
    h.maxnreg_sig[me] = h.maxnreg_sig[me] * 1000003u + 2 * n + inc;
    h.maxnreg_used = true;
    if (call <= h.wg_granted[wg]) return;  // a partner thread has done it for the warpgroup
    const unsigned entry = (w.launch->regs + 7) / 8 * 8;  // allocated in units of 8 a thread
    const unsigned held = h.wg_nreg[wg] ? h.wg_nreg[wg] : entry;
    if (held && inc && n < held)
        fail("%s %u by a warpgroup whose threads hold %u registers: .inc raises the count, never lowers it", what,
             n, held);
    if (held && !inc && n > held)
        fail("%s %u by a warpgroup whose threads hold %u registers: .dec lowers the count, never raises it", what,
             n, held);
    const unsigned first = wg * 128, threads = w.n - first < 128 ? w.n - first : 128;
    if (entry && inc) {
        const long long need = (long long)(n - held) * threads;
        while (h.regs_free < need) {
            h.wg_wanted[wg] = (unsigned short)n;
            fiber().state = AT_REGS;
            w.at_regs++;
            yield_to_scheduler();
            if (call <= h.wg_granted[wg]) return;
        }
        h.regs_free -= need;
    } else if (entry) {
        h.regs_free += (long long)(held - n) * threads;
    }
    h.wg_granted[wg] = call;
    h.wg_nreg[wg] = (unsigned short)n;
    h.wg_wanted[wg] = 0;
    // The warpgroup's partners waiting for this, and .inc waiting for what a .dec gave back.
    for (unsigned k = 0; k < w.n && w.at_regs; ++k) {
        const unsigned i = w.order[k];
        if (w.fibers[i].state != AT_REGS) continue;
        w.at_regs--;
        push_ready(w, i);
    }
}

// A deadlock with threads in setmaxnreg.inc: what the block was given and what its warpgroups
// hold or ask for.
inline void describe_register_pool(const Worker &w, const HopperState &h, char *out, size_t room) {
    const unsigned entry = (w.launch->regs + 7) / 8 * 8;
    int len = snprintf(out, room,
                       "; setmaxnreg.inc waits for registers the block's pool does not have: the block was launched "
                       "with %u registers a thread, %u for its %u threads, and its warpgroups hold or ask for",
                       entry, entry * w.n, w.n);
    unsigned long long total = 0;
    bool any_exited = false;
    for (unsigned first = 0; first < w.n && len > 0 && (size_t)len < room; first += 128) {
        out += len, room -= len;
        const unsigned wg = first / 128;
        const unsigned count = h.wg_wanted[wg] ? h.wg_wanted[wg] : h.wg_nreg[wg] ? h.wg_nreg[wg] : entry;
        const unsigned threads = w.n - first < 128 ? w.n - first : 128;
        bool exited = true;
        for (unsigned i = first; i < first + threads; ++i) exited &= w.fibers[i].state == DONE;
        any_exited |= exited;
        total += (unsigned long long)count * threads;
        len = snprintf(out, room, "%s %u%s", first ? "," : "", count, exited ? " (exited)" : "");
    }
    // PTX says only that .dec gives registers back: a warpgroup that exits is taken to keep them.
    if (len > 0 && (size_t)len < room)
        snprintf(out + len, room - len, " a thread (%llu in all%s)", total,
                 any_exited ? "; a warpgroup that exits is not taken to give its registers back" : "");
}

// .sync.aligned: setmaxnreg is a warpgroup's instruction, which all 128 of its threads execute
// with the same count; a warp that skips it, or a block that is not whole warpgroups, leaves
// the register pool in a state no GPU defines.
SIM_UNINSTRUMENTED inline void setmaxnreg_end(Worker &w, const HopperState &h) {
    if (!h.maxnreg_used) return;
    if (w.n % 128)
        fail("setmaxnreg in a block of %u threads: it is executed by whole warpgroups, 128 threads each", w.n);
    for (unsigned i = 0; i < w.n; ++i) {
        const unsigned first = i / 128 * 128;
        if (h.maxnreg_calls[i] == h.maxnreg_calls[first] && h.maxnreg_sig[i] == h.maxnreg_sig[first]) continue;
        const uint3 a = w.fibers[first].tid, b = w.fibers[i].tid;
        if (h.maxnreg_calls[i] != h.maxnreg_calls[first])
            fail("setmaxnreg is .sync.aligned: every thread of a warpgroup executes the same ones, but thread "
                 "(%u,%u,%u) executed %u and thread (%u,%u,%u), in the same warpgroup, %u",
                 a.x, a.y, a.z, h.maxnreg_calls[first], b.x, b.y, b.z, h.maxnreg_calls[i]);
        fail("setmaxnreg is .sync.aligned: every thread of a warpgroup executes the same ones, but threads "
             "(%u,%u,%u) and (%u,%u,%u), in the same warpgroup, executed them with other register counts",
             a.x, a.y, a.z, b.x, b.y, b.z);
    }
}

// ---- The hooks sim_runtime.h calls ----

// Lands every copy in flight, in issue order (landing may complete phases whose waiters
// then run).
inline void land_copies(HopperState &h) {
    unsigned n = h.n_copies;
    for (unsigned i = 0; i < n; ++i) {
        tma_land(h.copies[i]);  // a failure leaves the copies not yet landed to drop_copies
        free(h.copies[i].image);
        h.copies[i].image = nullptr;
    }
    memmove(h.copies, h.copies + n, (h.n_copies - n) * sizeof(TmaCopy));
    h.n_copies -= n;
}

// A fiber has switched out: in an eager schedule its copies land now, before any other thread
// runs (the issuing thread itself still needs its wait).
inline void hopper_switched(Worker &w) {
    if (w.hopper && w.hopper->eager && w.hopper->n_copies) land_copies(*w.hopper);
}

inline void hopper_block_start(Worker &w, uint64_t seed) {
    if (!w.hopper) {
        w.hopper = (HopperState *)calloc(1, sizeof(HopperState));
        if (!w.hopper) return;  // hopper() fails with a message if a kernel needs it
    }
    HopperState &h = *w.hopper;
    drop_copies(h);
    h.n_bars = 0;
    for (const void *&t : h.tried_on) t = nullptr;
    if (h.maxnreg_used) {
        memset(h.maxnreg_calls, 0, sizeof h.maxnreg_calls);
        memset(h.maxnreg_sig, 0, sizeof h.maxnreg_sig);
        memset(h.wg_granted, 0, sizeof h.wg_granted);
        memset(h.wg_nreg, 0, sizeof h.wg_nreg);
        memset(h.wg_wanted, 0, sizeof h.wg_wanted);
        h.regs_free = 0;
        h.maxnreg_used = false;
    }
    for (WarpWgmma &ws : h.warps) ws.pending = ws.committed = ws.issued = 0, ws.fenced = false;
    for (auto &wg : h.log)
        for (WgIssue &r : wg) r.valid = false;
    h.eager = (mix(seed ^ 0x7A3D) >> 11) & 1;
}

// Every thread of the block has exited. A TMA copy still in flight would write into the
// shared memory of a block that is gone; an mbarrier left with a tx-count other than zero
// counted bytes no phase announced (an expect_tx smaller than the copies it covers, whose
// phase then completed before the last copy landed) or announced bytes that never came.
SIM_UNINSTRUMENTED static void hopper_block_end(Worker &w) {
    if (!w.hopper) return;
    HopperState &h = *w.hopper;
    setmaxnreg_end(w, h);
    // TMA stores nobody waited for complete as the block leaves (a GPU finishes them).
    for (unsigned i = 0; i < h.n_stores; ++i) tma_store_complete(w, h.stores[i]);
    h.n_stores = 0;
    if (h.n_copies)
        fail("%u TMA cop%s still in flight when every thread of the block had exited: nothing waited for %s on "
             "its mbarrier",
             h.n_copies, h.n_copies == 1 ? "y was" : "ies were", h.n_copies == 1 ? "it" : "them");
    for (unsigned i = 0; i < h.n_bars; ++i) {
        const uint64_t v = *h.bars[i];
        if ((v >> 62) != 2) continue;  // the memory was used for something else since
        const int tx = (int)((int64_t)(v << 3) >> 43);
        if (tx < 0)
            fail("the mbarrier at shared address 0x%x ends the block with tx-count %d: %d bytes landed on it that "
                 "no expect_tx announced, so a phase completed before its last copy had landed (a transaction "
                 "count smaller than the copies it covers)",
                 mbar_addr(h.bars[i]), tx, -tx);
        if (tx > 0)
            fail("the mbarrier at shared address 0x%x ends the block with tx-count %d: an expect_tx announced %d "
                 "bytes that never landed",
                 mbar_addr(h.bars[i]), tx, tx);
    }
}

inline bool hopper_progress(Worker &w) {
    if (!w.hopper || w.hopper->n_copies == 0) return false;
    land_copies(*w.hopper);
    return true;
}

inline void hopper_exited(Worker &w, unsigned warp) {
    wake_wgmma_waiters(w, warp);
    // The block's last thread, in a cluster whose other blocks run on: its shared memory is
    // gone on a GPU (the SM may hand it to a new block), so what a partner reads of it through
    // mapa from now on is the poison (and, instrumented, a failure naming the block). Not
    // while a TMA store still reads it: that completes when the cluster ends.
    if (w.exited == w.n && w.cluster->size > 1 && !(w.hopper && w.hopper->n_stores)) {
        if (w.dyn_smem) memset(w.dyn_smem, 0xFF, w.launch->dynamic_smem);
        if (w.static_smem != w.tls_base) memset(w.static_smem, 0xFF, w.static_smem_bytes);
    }
}

inline void hopper_describe(Worker &w, char *out, size_t room) {
    if (!w.hopper) return;
    HopperState &h = *w.hopper;
    if (w.at_regs) {
        describe_register_pool(w, h, out, room);
        const size_t len = strlen(out);
        out += len, room -= len;
    }
    // Each warp waiting for its partners' wgmma: which of them have not issued it, and where
    // they are instead.
    for (unsigned warp = 0; warp * 32 < w.n && w.at_wgmma; ++warp) {
        const Fiber &f = w.fibers[warp * 32];
        if (f.state != AT_WGMMA) continue;
        const long long last = h.wgmma_awaited[warp];
        unsigned missing = 0;
        for (unsigned k = warp & ~3u; k < (warp & ~3u) + 4; ++k) missing += (long long)h.warps[k].issued <= last;
        int len = snprintf(out, room, "; warp %u waits in wgmma.wait_group for the warpgroup's wgmma number %lld, "
                           "which warp%s", warp, last, missing > 1 ? "s" : "");
        if (len < 0 || (size_t)len >= room) return;
        out += len, room -= len;
        for (unsigned k = warp & ~3u, shown = 0; k < (warp & ~3u) + 4; ++k) {
            if ((long long)h.warps[k].issued > last) continue;
            const char *sep = shown == 0 ? "" : ++shown == missing ? " and" : ",";
            shown += shown == 0;
            len = snprintf(out, room, "%s %u (%s)", sep, k, state_name(w.fibers[k * 32].state));
            if (len < 0 || (size_t)len >= room) return;
            out += len, room -= len;
        }
        len = snprintf(out, room, " never issued (a wgmma is one instruction of all four warps of a warpgroup)");
        if (len < 0 || (size_t)len >= room) return;
        out += len, room -= len;
    }
    const void *seen[4] = {};
    unsigned shown = 0;
    for (unsigned i = 0; i < w.n && shown < 4; ++i) {
        const void *bar = h.waiting_on[i];
        if (w.fibers[i].state != AT_MBAR || !bar) continue;
        bool dup = false;
        for (unsigned s = 0; s < shown; ++s) dup |= seen[s] == bar;
        if (dup) continue;
        seen[shown++] = bar;
        unsigned waiters = 0;
        for (unsigned j = 0; j < w.n; ++j) waiters += w.fibers[j].state == AT_MBAR && h.waiting_on[j] == bar;
        uint64_t v = *(const uint64_t *)bar;
        unsigned pending = (unsigned)(v & 0xFFFFF), expected = (unsigned)((v >> 20) & 0xFFFFF);
        int tx = (int)((int64_t)(v << 3) >> 43);
        int len = snprintf(out, room,
                           "; %u wait for parity %u of the mbarrier at shared address 0x%x: phase parity %u, %u of %u "
                           "arrivals pending, tx-count %d",
                           waiters, h.wait_parity[i], mbar_addr(bar), (unsigned)((v >> 61) & 1), pending, expected, tx);
        if (len < 0 || (size_t)len >= room) return;
        out += len;
        room -= len;
    }
}

inline void hopper_free(Worker &w) {
    if (!w.hopper) return;
    drop_copies(*w.hopper);
    free(w.hopper->copies);
    free(w.hopper->stores);
    for (WarpWgmma &ws : w.hopper->warps) free(ws.ops);
    free(w.hopper);
    w.hopper = nullptr;
}

}  // namespace sim

// sim_traffic.h's hook, for an access to a fiber's stack once a wgmma has been issued.
extern "C" SIM_UNINSTRUMENTED void sim_wgmma_access(const void *p, unsigned long n, int write, const void *pc) {
    sim::Worker *w = tl_worker;
    sim::Fiber *f = tl_fiber;
    // The wgmma's own writes of the accumulators (wgmma_run) pass.
    if (w && f && w->hopper && !w->wgmma_reader) sim::wgmma_accessed(*w, *f, p, n, write != 0, pc);
}

// What CUDA C++ offers for the shared window (cuda_runtime's __cvta_* intrinsics).
inline size_t __cvta_generic_to_shared(const void *p) { return sim::shared_addr_of(p); }
inline void *__cvta_shared_to_generic(size_t a) { return sim::shared_ptr(a, 0); }
