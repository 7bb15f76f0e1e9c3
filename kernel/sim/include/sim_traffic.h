// sim_traffic.h: counts the global-memory traffic a kernel issues, for the roofline's x axis,
// and hands every other plain access to the race checker and the bank model
// (sim_shared_access, sim_runtime.h).
//
// In an instrumented build the kernel's translation unit is compiled with gcc's
// ThreadSanitizer instrumentation (`-fsanitize=thread`), which calls a hook before every
// load, store and atomic it cannot prove local. This file is those hooks, compiled as a
// translation unit of its own without the instrumentation and linked without the sanitizer's
// runtime: each hook adds the access's size to the traffic when its address lies in one of
// the launch's device buffers (shared memory, locals and the emulation's own state are not
// traffic), and hands plain accesses to shared memory to the race checker. The bank model
// rebuilds warp instructions from plain accesses, of shared memory for its banks and of the
// launch's buffers for how many sectors and cache lines each touches (its coalescing).
// What is counted is what the SMs ask of the memory system (loads that the compiler keeps in
// registers are not asked twice; cache hits are not subtracted).
//
// The emulation's own copies of a variable size (cp.async, TMA), which the instrumentation
// cannot see, report themselves through __tsan_read_range (SIM_GLOBAL_READ in sim_runtime.h).
#pragma once

#include <dlfcn.h>
#include <link.h>
#include <sched.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>

#include <algorithm>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "sim_banks.h"
#include "sim_global.h"

// One launch's counting: its device buffers as [start, end) pairs, set by the host, and the
// totals the blocks add to. Owned by the host and passed with the launch (SimLaunch::traffic),
// so that launches of one module on several devices at once count apart. Mirrored in
// kernel/src/sim/ffi.rs.
constexpr int kMaxRanges = 64;
struct SimTraffic {
    uint64_t pairs[2 * kMaxRanges];
    int32_t ranges;
    uint64_t lowest, highest;
    uint64_t loads, stores;
    // The bank model's counts per kind (SimBankKind): requests, wavefronts, ideal wavefronts.
    uint64_t banks[SIM_BANK_KINDS][3];
    // Plain global loads and stores (SimGlobalKind), rebuilt into warp instructions: requests,
    // distinct 32-byte sectors, distinct 128-byte lines, the lines their distinct bytes fill,
    // or a contiguous run's touch (the ideal), and the bytes of each one's widest lane; of all
    // requests, then of those all 32 lanes of a warp made (what a large shape's mostly are).
    uint64_t coalescing[SIM_GLOBAL_KINDS][2][5];
    // The race checker of global memory (sim_global.h): each buffer's name and element size,
    // for its messages; the launch's grid and cluster dims; whether every block runs (not a
    // sample); its state, which sim_global_begin sets (null: not checked).
    const char *names[kMaxRanges];
    uint32_t elem_bytes[kMaxRanges];
    uint32_t grid[3], cluster[3];
    uint32_t every_block;
    void *global;
};

// The fibers' stacks, one [start, end) per worker, registered by the runtime when it maps
// them (sim_stacks_add). Most instrumented accesses of a kernel are to its locals there
// (WMMA fragments are arrays of 256 elements in every lane): they are neither shared nor
// global, and these plain globals reject them before the thread-local lookup, which in a
// dlopen'ed module is a call.
constexpr int kMaxStackRanges = 64;
static uintptr_t stack_ranges[2 * kMaxStackRanges];
static int stack_count;

extern "C" void sim_stacks_add(const void *start, size_t bytes) {
    int n = __atomic_load_n(&stack_count, __ATOMIC_RELAXED);  // callers hold the pool's lock
    if (n == kMaxStackRanges) return;                          // the slow path still decides right
    stack_ranges[2 * n] = (uintptr_t)start;
    stack_ranges[2 * n + 1] = (uintptr_t)start + bytes;
    __atomic_store_n(&stack_count, n + 1, __ATOMIC_RELEASE);
}

// Set once a kernel of this module has issued a wgmma (sim_wgmma_issued): from then on an
// access to a fiber's stack may be one to the accumulators of a wgmma in flight, which the
// runtime fails (sim_wgmma_access, sim_hopper.h). A plain global, for the reason above.
static int wgmma_issued;
extern "C" void sim_wgmma_access(const void *p, unsigned long n, int write, const void *pc);
extern "C" void sim_wgmma_issued() { __atomic_store_n(&wgmma_issued, 1, __ATOMIC_RELAXED); }

namespace sim_traffic {

inline bool on_a_stack(uintptr_t a) {
    int n = __atomic_load_n(&stack_count, __ATOMIC_ACQUIRE);
    for (int i = 0; i < n; ++i)
        if (a - stack_ranges[2 * i] < stack_ranges[2 * i + 1] - stack_ranges[2 * i]) return true;
    return false;
}

// ---- The bank model (sim_banks.h) ----

// One warp instruction being rebuilt: what each lane that has run it accessed (a lane joins
// an instruction once, so 32 at most).
struct Lane {
    uintptr_t addr;
    unsigned bytes, lane;
};
struct Group {
    Lane lanes[32];
    unsigned n;
    unsigned expected;  // lanes that will run it (all the warp's; an ldmatrix's row givers)
};

// One access of the kernel (its code address and kind) in one warp: how often each lane has
// run it, and the instructions some lanes have run and others not yet, from the `base`-th on.
// The simulator runs a warp's lanes one after another between synchronizations, so the first
// lane opens an instruction at each of its executions and the last completes them, in order.
struct Site {
    unsigned kind;
    unsigned nth[32];
    unsigned base;               // the instruction open[head] is
    std::vector<unsigned> open;  // from open[head] on: indexes of groups, or kDone
    size_t head = 0;             // (a queue: cheaper than std::deque at every lane's access)
};
constexpr unsigned kDone = ~0u;

struct SiteKey {
    uintptr_t pc;  // never 0: the table's empty slot
    unsigned warp, kind;
    bool operator==(const SiteKey &o) const { return pc == o.pc && warp == o.warp && kind == o.kind; }
};
inline uint64_t hash_mix(uint64_t x) {
    x ^= x >> 33;
    x *= 0xFF51AFD7ED558CCDull;
    return x ^ (x >> 29);
}

// Sites by key: open addressing in one array (linear probing). Every shared-memory access of
// an instrumented kernel looks one up; a node-based map per thread and access spent more time
// in malloc and cache misses than the rest of the bank model.
struct SiteTable {
    struct Slot {
        SiteKey key;
        unsigned site;  // index in Banks::sites
    };
    std::vector<Slot> slots;
    size_t used = 0;

    static size_t hash(const SiteKey &k) { return hash_mix(k.pc ^ ((uint64_t)k.warp << 40) ^ ((uint64_t)k.kind << 58)); }
    // The slot of `k`: its own, or the empty one where it goes (`grow` first when inserting).
    Slot &slot(const SiteKey &k) {
        const size_t mask = slots.size() - 1;
        size_t i = hash(k) & mask;
        while (slots[i].key.pc != 0 && !(slots[i].key == k)) i = (i + 1) & mask;
        return slots[i];
    }
    void grow() {
        std::vector<Slot> old;
        old.swap(slots);
        slots.assign(old.empty() ? 256 : 2 * old.size(), Slot{});
        for (const Slot &s : old)
            if (s.key.pc != 0) slot(s.key) = s;
    }
};

// A thread's plain access of shared memory not yet counted: the next one may continue it (a
// split vector).
struct Pending {
    uintptr_t addr, pc;
    unsigned bytes, switches;
    bool write, live;
    SimBankThread who;
};

// How many of the distinct words `w[0..n)` the busiest bank holds.
inline uint64_t busiest_bank(const uintptr_t *w, size_t n) {
    unsigned per_bank[32] = {};
    uint64_t most = 0;
    for (size_t i = 0; i < n; ++i) most = std::max<uint64_t>(most, ++per_bank[w[i] % 32]);
    return most;
}

// Wavefronts of one phase of `g`, its lanes `lane / per_phase == ph`: per bank, the distinct
// words its lanes touch (lanes reading one word share it); the busiest bank sets the count.
// 0 when no lane of `g` is in the phase. Words are kept sorted as they come (lanes mostly
// come in order, so an insertion is mostly an append): no allocation, no sort, once per warp
// instruction of every block.
inline uint64_t wavefronts(const Group &g, unsigned per_phase, unsigned ph) {
    constexpr unsigned kMaxWords = 32 * 5;  // 32 lanes of 16 bytes, unaligned
    uintptr_t words[kMaxWords];
    unsigned n = 0;
    std::vector<uintptr_t> more;  // a phase wider than that (no instruction's lanes make one)
    for (unsigned i = 0; i < g.n; ++i) {
        const Lane &l = g.lanes[i];
        if (l.lane / per_phase != ph) continue;
        for (uintptr_t w = l.addr / 4; w <= (l.addr + l.bytes - 1) / 4; ++w) {
            if (n == kMaxWords) {
                more.push_back(w);
                continue;
            }
            unsigned at = n;
            while (at > 0 && words[at - 1] > w) --at;
            if (at > 0 && words[at - 1] == w) continue;
            std::copy_backward(words + at, words + n, words + n + 1);
            words[at] = w;
            ++n;
        }
    }
    if (more.empty()) return busiest_bank(words, n);
    more.insert(more.end(), words, words + n);
    std::sort(more.begin(), more.end());
    more.erase(std::unique(more.begin(), more.end()), more.end());
    return busiest_bank(more.data(), more.size());
}

// What one global request of `g` touches, in the order of SimTraffic::coalescing after its
// request: distinct 32-byte sectors, distinct 128-byte lines, the ideal (the lines its
// distinct bytes fill, or where they are one contiguous run, the lines that run touches), and
// its widest lane's bytes. Scattered lanes cost lines beyond the ideal; a run that starts
// mid-line does not, as a small shape's rows mostly do where a large shape's start a line.
// Lanes come mostly in address order, so sorting their ranges is mostly a pass.
inline void coalescing(const Group &g, uint64_t out[4]) {
    std::pair<uintptr_t, uintptr_t> r[32];
    unsigned widest = 0;
    for (unsigned i = 0; i < g.n; ++i) {
        r[i] = {g.lanes[i].addr, g.lanes[i].addr + g.lanes[i].bytes};
        widest = std::max(widest, g.lanes[i].bytes);
    }
    std::sort(r, r + g.n);
    uint64_t bytes = 0, sectors = 0, lines = 0, runs = 0;
    uintptr_t end = 0, last_sector = ~(uintptr_t)0, last_line = ~(uintptr_t)0;
    for (unsigned i = 0; i < g.n; ++i) {
        const uintptr_t lo = std::max(r[i].first, end), hi = r[i].second;
        if (lo >= hi) continue;  // a broadcast, or inside the last lane's bytes
        runs += lo != end;
        bytes += hi - lo;
        end = hi;
        const uintptr_t s0 = lo / 32, s1 = (hi - 1) / 32, l0 = lo / 128, l1 = (hi - 1) / 128;
        sectors += s1 - s0 + 1 - (s0 == last_sector);
        lines += l1 - l0 + 1 - (l0 == last_line);
        last_sector = s1;
        last_line = l1;
    }
    out[0] = sectors;
    out[1] = lines;
    out[2] = runs == 1 ? lines : (bytes + 127) / 128;
    out[3] = widest;
}

// Everything the bank model keeps for the blocks running on this OS thread.
struct Banks {
    std::vector<Pending> pending;  // by SimBankThread::thread
    SiteTable table;
    std::vector<Site> sites;
    std::vector<Group> groups;
    std::vector<unsigned> free_groups;
    uint64_t counts[SIM_BANK_KINDS][3] = {};
    uint64_t global[SIM_GLOBAL_KINDS][2][5] = {};

    // A warp instruction is served in phases of 128 bytes: the whole warp at 4 bytes a lane,
    // half-warps at 8, quarter-warps at 16, and an ldmatrix one 8x8 matrix (eight 16-byte
    // rows) a phase. Each phase takes as many wavefronts as its busiest bank has distinct
    // words (one at best), so the ideal is a wavefront a phase. A global request counts the
    // sectors and lines it touches (coalescing), among all requests and, if all 32 lanes
    // made it, among whole warps'.
    void count(unsigned kind, const Group &g) {
        if (kind >= SIM_BANK_KINDS) {
            uint64_t touched[4];
            coalescing(g, touched);
            for (int whole = 0; whole <= (g.n == 32); ++whole) {
                uint64_t *c = global[kind - SIM_BANK_KINDS][whole];
                c[0] += 1;
                for (int i = 0; i < 4; ++i) c[i + 1] += touched[i];
            }
            return;
        }
        unsigned width = 0;
        for (unsigned i = 0; i < g.n; ++i) width = std::max(width, g.lanes[i].bytes);
        const unsigned per_phase = kind == SIM_BANK_LDSM || width >= 16 ? 8 : width == 8 ? 16 : 32;
        uint64_t waves = 0, ideal = 0;
        for (unsigned ph = 0; ph < 32 / per_phase; ++ph) {
            const uint64_t w = wavefronts(g, per_phase, ph);
            waves += w;
            ideal += w > 0;
        }
        counts[kind][0] += 1;
        counts[kind][1] += waves;
        counts[kind][2] += ideal;
    }

    Site &site(uintptr_t pc, unsigned warp, unsigned kind) {
        const SiteKey key{pc, warp, kind};
        if (2 * (table.used + 1) > table.slots.size()) table.grow();
        SiteTable::Slot &slot = table.slot(key);
        if (slot.key.pc == 0) {
            slot = SiteTable::Slot{key, (unsigned)sites.size()};
            ++table.used;
            sites.emplace_back();
            sites.back().kind = kind;
        }
        return sites[slot.site];
    }

    unsigned new_group() {
        unsigned g;
        if (free_groups.empty()) {
            g = (unsigned)groups.size();
            groups.emplace_back();
        } else {
            g = free_groups.back();
            free_groups.pop_back();
        }
        groups[g].n = 0;
        return g;
    }

    // One lane's part of the instruction at `pc`: the n-th time this lane runs it joins the
    // other lanes' n-th.
    void add(const SimBankThread &who, unsigned kind, uintptr_t pc, uintptr_t addr, unsigned bytes,
             unsigned expected) {
        Site &s = site(pc, who.warp, kind);
        const unsigned nth = s.nth[who.lane]++;
        // An instruction already complete without this lane (more lanes reported it than
        // it expected, as an ldmatrix's rows beyond its last matrix would be): left out.
        if (nth < s.base) return;
        const size_t at = s.head + (nth - s.base);
        while (s.open.size() <= at) s.open.push_back(new_group());
        if (s.open[at] == kDone) return;
        const unsigned index = s.open[at];
        Group &g = groups[index];
        g.lanes[g.n++] = Lane{addr, bytes, who.lane};
        g.expected = expected;
        if (g.n >= g.expected || g.n == 32) {
            count(kind, g);
            free_groups.push_back(index);
            s.open[at] = kDone;
            while (s.head < s.open.size() && s.open[s.head] == kDone) {
                ++s.head;
                ++s.base;
            }
            // Mostly every instruction is complete and the queue starts again; else what is
            // done goes once it is half of it.
            if (s.head == s.open.size() || s.head > s.open.size() / 2) {
                s.open.erase(s.open.begin(), s.open.begin() + (ptrdiff_t)s.head);
                s.head = 0;
            }
        }
    }

    // An access of `kind` counted: split into naturally aligned pieces of at most 16 bytes
    // (the widths a load or store has).
    void split(const SimBankThread &who, unsigned kind, uintptr_t pc, uintptr_t addr, unsigned bytes) {
        uintptr_t a = addr, end = addr + bytes;
        for (unsigned piece = 0; a < end; ++piece) {
            unsigned size = 16;
            while (size > 1 && (a % size || a + size > end)) size /= 2;
            add(who, kind, pc + piece, a, size, who.lanes);
            a += size;
        }
    }

    void commit(Pending &p) {
        if (!p.live) return;
        p.live = false;
        split(p.who, p.write ? SIM_BANK_STS : SIM_BANK_LDS, p.pc, p.addr, p.bytes);
    }

    void plain(const void *p, unsigned bytes, bool write, uintptr_t pc, const SimBankThread &who) {
        if (pending.size() <= who.thread) pending.resize(who.thread + 1);
        Pending &q = pending[who.thread];
        uintptr_t a = (uintptr_t)p;
        // Words only: nvcc leaves a run of 8- or 16-bit stores as it is (a half tile's tail).
        if (q.live && q.write == write && q.switches == who.switches && bytes >= 4 && q.bytes >= 4 &&
            a == q.addr + q.bytes && q.addr / 16 == (a + bytes - 1) / 16) {
            q.bytes += bytes;
            return;
        }
        commit(q);
        q = Pending{a, pc, bytes, who.switches, write, true, who};
    }

    // A plain access of a launch's buffer, counted as it comes: nvcc cannot prove a global
    // pointer's alignment, so it leaves scalar accesses through one as they are (a row's
    // elements read one by one), where it merges those of shared memory.
    void global_access(const void *p, unsigned bytes, bool write, uintptr_t pc, const SimBankThread &who) {
        split(who, SIM_BANK_KINDS + (write ? SIM_GLOBAL_ST : SIM_GLOBAL_LD), pc, (uintptr_t)p, bytes);
    }

    // The blocks are done: what is still pending or incomplete (lanes that exited or skipped
    // the access) is counted as it stands.
    void finish() {
        for (Pending &p : pending) commit(p);
        for (Site &s : sites) {
            for (size_t i = s.head; i < s.open.size(); ++i)
                if (s.open[i] != kDone) count(s.kind, groups[s.open[i]]);
            s.open.clear();
            s.head = 0;
        }
    }
};

}  // namespace sim_traffic

// ---- The race checker of global memory (sim_global.h) ----

namespace sim_global {

// One access of a byte: by which thread (index + 1; 0: none) of which block (linear index +
// 1), in which barrier interval and warp interval of that block, after how many fences of its
// unit (a block, or a cluster's blocks).
struct Mark {
    uint32_t block, epoch, fences;
    uint16_t thread, warp_epoch;
    bool operator==(const Mark &) const = default;
};
struct Cell {
    Mark write, read;
    // The code addresses of the two accesses, for a race's message (null: not known).
    const void *write_pc, *read_pc;
    bool operator==(const Cell &) const = default;
};

// A vector clock, sorted by unit: for each unit, how many of its fences are known to come
// before. An access made after a unit's k fences is ordered before what knows k + 1 of them.
struct Clock {
    uint32_t unit, fences;
};
using Clocks = std::vector<Clock>;

inline uint32_t fences_of(const Clocks &c, uint32_t unit) {
    auto it = std::lower_bound(c.begin(), c.end(), unit, [](const Clock &k, uint32_t u) { return k.unit < u; });
    return it != c.end() && it->unit == unit ? it->fences : 0;
}

inline void join(Clocks &into, const Clocks &from) {
    if (from.empty()) return;
    Clocks out;
    out.reserve(into.size() + from.size());
    size_t i = 0, j = 0;
    while (i < into.size() || j < from.size()) {
        if (j == from.size() || (i < into.size() && into[i].unit < from[j].unit)) {
            out.push_back(into[i++]);
        } else if (i == into.size() || from[j].unit < into[i].unit) {
            out.push_back(from[j++]);
        } else {
            out.push_back(Clock{into[i].unit, std::max(into[i].fences, from[j].fences)});
            ++i, ++j;
        }
    }
    into.swap(out);
}

// Stores in flight: each running block's store from its check to its landing (its thread's
// next access or switch), as its address with its size in the top 16 bits; 0 for none. A
// hook runs before its store: without these, a thread judging its store over another block's
// by the bytes they held before could take them before that store landed, and call two
// stores of the same bytes a race (see `enter`).
constexpr int kFlightSlots = 256;

// One launch's state: a cell per byte of each buffer (mapped on demand, so untouched pages
// cost nothing), what has been released to each address atomics used, and the stores in
// flight.
struct Launch {
    Cell *cells[kMaxRanges];
    size_t bytes[kMaxRanges];
    std::mutex lock;
    std::unordered_map<uintptr_t, Clocks> released;
    // A cache line each: every store of its block writes its slot.
    struct alignas(64) Slot {
        uint64_t v = 0;
    } flight[kFlightSlots];
    int flights = 0;  // slots handed out so far
    std::vector<int> free_slots;  // of blocks that ended
};

// A store over bytes another thread wrote, unordered with it, judged once the store has
// landed (settle): the same bytes written again are no hazard, as when every lane of a warp
// stores the warp's result (the shared-memory checker's rule); other bytes are the race.
struct PendingWrite {
    bool on = false;
    int range = 0;
    uint64_t offset = 0, n = 0;  // the store: bytes [offset, offset + n) of buffer `range`
    uint16_t unordered = 0;      // bit k: byte offset + k is another thread's unordered write
    unsigned char before[16];    // what the store's bytes held before it
    Mark other{};
    const void *other_pc = nullptr, *pc = nullptr;
    SimGlobalThread me{};
};

// The unit this OS thread runs: its fences so far, what it is ordered after, what its last
// fence released, the addresses its atomics have read since that fence, and the running
// thread's store still to judge.
struct Agent {
    uint32_t unit = UINT32_MAX, fences = 0;
    Clocks known, released;
    std::vector<uintptr_t> read;
    PendingWrite waw;
    int slot = -2;  // the block's in Launch::flight; -2 not yet claimed, -1 none left
};

// The slot of the calling block's stores in `l`'s stores in flight, claimed at its first
// store and given back when it ends (`leave`): as many are taken as blocks run at once. (No
// thread-local of its own: the module's thread-local block holds the shared memory, whose
// addresses messages show.)
inline int flight_slot(Launch &l, Agent &a) {
    if (a.slot != -2) return a.slot;
    std::lock_guard<std::mutex> g(l.lock);
    if (!l.free_slots.empty()) {
        a.slot = l.free_slots.back();
        l.free_slots.pop_back();
    } else if (l.flights < kFlightSlots) {
        a.slot = l.flights;
        __atomic_store_n(&l.flights, l.flights + 1, __ATOMIC_SEQ_CST);
    } else {
        a.slot = -1;
    }
    return a.slot;
}

// Whether another block's store in flight overlaps [p, p + n): the lowest slot holding
// one, or -1.
inline int overlapping(const Launch &l, int mine, uintptr_t p, uint64_t n) {
    const int claimed = std::min(__atomic_load_n(&l.flights, __ATOMIC_SEQ_CST), kFlightSlots);
    for (int k = 0; k < claimed; ++k) {
        if (k == mine) continue;
        const uint64_t f = __atomic_load_n(&l.flight[k].v, __ATOMIC_SEQ_CST);
        const uintptr_t at = f & 0xFFFFFFFFFFFFull, len = f >> 48;
        if (f && at < p + n && p < at + len) return k;
    }
    return -1;
}

// The calling thread's store of [p, p + n) enters flight once no other store of those bytes
// is in flight, before its check marks them: stores of the same bytes land one at a time, so
// that what a store wrote over is what the last one left, and a store's mark is seen only
// once no store it would be judged against is still to land. Two threads entering at once
// both see the other: the one with the higher slot steps back and waits. (Bounded: after a
// while the store enters anyway, as it would without this.)
inline void enter(Launch &l, Agent &a, uintptr_t p, uint64_t n) {
    const int mine = flight_slot(l, a);
    if (mine < 0) return;
    __atomic_store_n(&l.flight[mine].v, (uint64_t)p | n << 48, __ATOMIC_SEQ_CST);
    if (overlapping(l, mine, p, n) < 0) return;
    __atomic_store_n(&l.flight[mine].v, 0, __ATOMIC_SEQ_CST);
    for (long tries = 0;; ++tries) {
        const int other = overlapping(l, mine, p, n);
        if (other >= 0 && tries < 200000) {
            sched_yield();
            continue;
        }
        __atomic_store_n(&l.flight[mine].v, (uint64_t)p | n << 48, __ATOMIC_SEQ_CST);
        const int again = overlapping(l, mine, p, n);
        if (again < 0 || tries >= 200000) return;
        if (again < mine) {
            __atomic_store_n(&l.flight[mine].v, 0, __ATOMIC_SEQ_CST);
            continue;
        }
        // A higher slot entered too: it steps back, or it entered first and lands.
        for (long wait = 0; overlapping(l, mine, p, n) > mine && wait < 200000; ++wait) sched_yield();
        return;
    }
}

// The calling thread's store has landed.
inline void land(Launch &l, Agent &a) {
    if (a.slot >= 0 && l.flight[a.slot].v) __atomic_store_n(&l.flight[a.slot].v, 0, __ATOMIC_RELEASE);
}

// The block ends: its last store has landed, and its slot goes to the next block.
inline void leave(Launch &l, Agent &a) {
    land(l, a);
    if (a.slot < 0) return;
    std::lock_guard<std::mutex> g(l.lock);
    l.free_slots.push_back(a.slot);
}

// The unit (cluster, x fastest over the grid of clusters) of the block of linear index `b`.
inline uint32_t unit_of(const SimTraffic &t, uint32_t b) {
    const uint32_t x = b % t.grid[0], y = b / t.grid[0] % t.grid[1], z = b / t.grid[0] / t.grid[1];
    const uint32_t cx = t.grid[0] / t.cluster[0], cy = t.grid[1] / t.cluster[1];
    return x / t.cluster[0] + cx * (y / t.cluster[1] + cy * (z / t.cluster[2]));
}

inline void know_unit(const SimTraffic &t, Agent &a, const SimGlobalThread &me) {
    if (a.unit == UINT32_MAX) a.unit = unit_of(t, me.block - 1);
}

// Whether the access `m` comes before the calling thread's `me`.
inline bool ordered(const SimTraffic &t, const Agent &a, const Mark &m, const SimGlobalThread &me) {
    if (m.block == 0) return true;
    if (m.block == me.block) {
        if (m.thread == me.thread || m.epoch != me.epoch) return true;
        return (m.thread - 1u) / 32 == (me.thread - 1u) / 32 && m.warp_epoch != me.warp_epoch;
    }
    const uint32_t u = unit_of(t, m.block - 1);
    return u == a.unit || fences_of(a.known, u) > m.fences;
}

[[noreturn]] inline void report(const SimTraffic &t, int range, uint64_t offset, bool write, const Mark &other,
                                bool other_write, const void *other_pc, const SimGlobalThread &me,
                                const void *pc) {
    char where[160], msg[640];
    const char *name = t.names[range] ? t.names[range] : "?";
    const uint32_t e = t.elem_bytes[range];
    if (e > 1)
        snprintf(where, sizeof where, "element %llu (byte %llu) of buffer '%s'", (unsigned long long)(offset / e),
                 (unsigned long long)offset, name);
    else
        snprintf(where, sizeof where, "byte %llu of buffer '%s'", (unsigned long long)offset, name);
    const uint32_t th = other.thread - 1u, *d = me.block_dim;
    const uint32_t tx = th % d[0], ty = th / d[0] % d[1], tz = th / d[0] / d[1];
    const char *did = other_write ? "wrote" : "read", *does = write ? "writes" : "reads";
    // The other access by its offset in the module, which the host names by its line
    // (kernel/src/sim/site.rs), as it does this thread's.
    char at[64] = "";
    Dl_info module;
    if (other_pc && dladdr(other_pc, &module) && module.dli_fbase)
        snprintf(at, sizeof at, " {{other 0x%lx}}", (unsigned long)((uintptr_t)other_pc - 1 - (uintptr_t)module.dli_fbase));
    if (other.block == me.block) {
        snprintf(msg, sizeof msg,
                 "race on global memory: this thread %s %s, which thread (%u,%u,%u) of this block %s%s in the "
                 "same barrier interval, with no __syncthreads() or __syncwarp() between them (a GPU runs them "
                 "in any order)",
                 does, where, tx, ty, tz, did, at);
    } else {
        const uint32_t b = other.block - 1u, *g = t.grid;
        snprintf(msg, sizeof msg,
                 "race on global memory: this thread %s %s, which thread (%u,%u,%u) of block (%u,%u,%u) %s%s, and "
                 "nothing orders the two blocks (a GPU runs blocks in any order and at once: only a __threadfence() "
                 "then an atomic or volatile store in the first, and that value read by an atomic or volatile load "
                 "then a __threadfence() in the second, would; st.release and ld.acquire carry their fences)",
                 does, where, tx, ty, tz, b % g[0], b / g[0] % g[1], b / g[0] / g[1], did, at);
    }
    sim_global_fail(msg, pc);
}

// The pending store of the calling thread has landed (the thread makes its next access, or
// switches out): the race, if it left other bytes than the other thread's.
inline void settle(const SimTraffic &t, Agent &a) {
    land(*(Launch *)t.global, a);
    PendingWrite &w = a.waw;
    if (!w.on) return;
    w.on = false;
    const unsigned char *p = (const unsigned char *)(uintptr_t)(t.pairs[2 * w.range] + w.offset);
    for (uint64_t k = 0; k < w.n; ++k)
        if ((w.unordered >> k & 1) && p[k] != w.before[k])
            report(t, w.range, w.offset + k, true, w.other, true, w.other_pc, w.me, w.pc);
}

// A plain access of `n` bytes at `offset` of buffer `range` by the calling thread, at code
// address `pc` (null where the hook does not know it): checked against each byte's last write
// and recorded read, then recorded.
inline void check(const SimTraffic &t, Agent &a, int range, uint64_t offset, uint64_t n, bool write,
                  const void *pc) {
    settle(t, a);
    Launch &l = *(Launch *)t.global;
    Cell *cells = l.cells[range];
    SimGlobalThread me;
    if (!cells || !sim_global_thread(&me)) return;
    know_unit(t, a, me);
    const Mark mine{me.block, me.epoch, a.fences, me.thread, me.warp_epoch};
    const uint64_t end = std::min<uint64_t>(offset + n, l.bytes[range]);
    // The bytes of one access mostly hold the same marks: checked once (as in shared memory).
    // Cells are plain memory: two OS threads write one together only for blocks that race.
    Cell before{}, after{};
    bool repeat = false;
    // A write over another thread's unordered write is judged by what it leaves (settle),
    // where the record holds the store: 16 bytes at most.
    PendingWrite &w = a.waw;
    const bool deferrable = write && end - offset <= sizeof w.before;
    if (deferrable) enter(l, a, t.pairs[2 * range] + offset, end - offset);
    bool unordered_write = false;
    for (uint64_t i = offset; i < end; ++i) {
        Cell &c = cells[i];
        if (repeat && c == before) {
            c = after;
            if (unordered_write) w.unordered |= (uint16_t)(1u << (i - offset));
            continue;
        }
        before = c;
        unordered_write = !ordered(t, a, c.write, me);
        if (unordered_write && !deferrable) report(t, range, i, write, c.write, true, c.write_pc, me, pc);
        if (unordered_write) {
            if (!w.on) {
                w = PendingWrite{true, range, offset, end - offset, 0, {}, c.write, c.write_pc, pc, me};
                memcpy(w.before, (const void *)(uintptr_t)(t.pairs[2 * range] + offset), end - offset);
            }
            w.unordered |= (uint16_t)(1u << (i - offset));
        }
        const bool read_ordered = ordered(t, a, c.read, me);
        if (write && !read_ordered) report(t, range, i, true, c.read, false, c.read_pc, me, pc);
        // A read unordered with this one stays: a later write by this thread races with it.
        if (write) c.write = mine, c.write_pc = pc;
        else if (read_ordered) c.read = mine, c.read_pc = pc;
        after = c;
        repeat = true;
    }
}

// An atomic on global address `p`: it reads the address (acquired at the unit's next fence)
// and, if it writes, releases what the unit's last fence did.
inline void atomic(const SimTraffic &t, Agent &a, uintptr_t p, bool write) {
    settle(t, a);
    Launch &l = *(Launch *)t.global;
    if (write && !a.released.empty()) {
        std::lock_guard<std::mutex> g(l.lock);
        join(l.released[p], a.released);
    }
    if (a.read.empty() || a.read.back() != p) {
        a.read.push_back(p);
        // A unit may run many atomics between fences (a histogram's): each address once.
        if (a.read.size() >= 1024 && (a.read.size() & (a.read.size() - 1)) == 0) {
            std::sort(a.read.begin(), a.read.end());
            a.read.erase(std::unique(a.read.begin(), a.read.end()), a.read.end());
        }
    }
}

// __threadfence(): first acquires what was released to the addresses the unit's atomics read,
// then releases all the unit knows and has done.
inline void fence(const SimTraffic &t, Agent &a) {
    settle(t, a);
    SimGlobalThread me;
    if (a.unit == UINT32_MAX) {
        if (!sim_global_thread(&me)) return;
        know_unit(t, a, me);
    }
    if (!a.read.empty()) {
        Launch &l = *(Launch *)t.global;
        std::lock_guard<std::mutex> g(l.lock);
        for (uintptr_t p : a.read)
            if (auto it = l.released.find(p); it != l.released.end()) join(a.known, it->second);
        a.read.clear();
    }
    ++a.fences;
    a.released = a.known;
    join(a.released, Clocks{Clock{a.unit, a.fences}});
}

}  // namespace sim_global

namespace sim_traffic {

// What the hooks need of the block this OS thread runs, in one thread-local (one TLS lookup
// per hook): its launch's counts, its shared memory (static, then dynamic), and the bytes it
// loaded and stored. This state lies in the module's TLS block, which the runtime fills with
// NaN bytes at each block start (it holds the `__shared__` arrays): sim_traffic_begin sets it
// after that.
struct Block {
    SimTraffic *traffic;
    uintptr_t static_lo, static_bytes, dynamic_lo, dynamic_bytes;
    uint64_t loads, stores;
    Banks *banks;  // allocated at the block's start: this TLS block is poisoned there
    sim_global::Agent *agent;  // likewise, where the launch's global memory is race-checked
};
thread_local Block block;

// Which of the launch's buffers holds `a`; -1 when none does.
inline int buffer_of(const Block &b, uintptr_t a) {
    const SimTraffic *t = b.traffic;
    if (!t || a < t->lowest || a >= t->highest) return -1;
    for (int i = 0; i < t->ranges; ++i)
        if (a >= t->pairs[2 * i] && a < t->pairs[2 * i + 1]) return i;
    return -1;
}

// The module's writable data ([lo, hi) over its writable segments: its __device__ variables,
// and the emulation's own state), found once.
struct ModuleData {
    uintptr_t lo = 0, hi = 0;
};

inline ModuleData find_module_data() {
    ModuleData d;
    Dl_info self;
    if (!dladdr((const void *)&stack_count, &self) || !self.dli_fbase) return d;
    struct Search {
        uintptr_t base;
        ModuleData *d;
    } s{(uintptr_t)self.dli_fbase, &d};
    dl_iterate_phdr(
        [](dl_phdr_info *info, size_t, void *arg) {
            auto *s = (Search *)arg;
            if (info->dlpi_addr != s->base) return 0;
            for (int k = 0; k < info->dlpi_phnum; ++k) {
                const ElfW(Phdr) &ph = info->dlpi_phdr[k];
                if (ph.p_type != PT_LOAD || !(ph.p_flags & PF_W)) continue;
                const uintptr_t lo = info->dlpi_addr + ph.p_vaddr, hi = lo + ph.p_memsz;
                if (!s->d->lo || lo < s->d->lo) s->d->lo = lo;
                if (hi > s->d->hi) s->d->hi = hi;
            }
            return 1;
        },
        &s);
    return d;
}

inline bool in_module_data(uintptr_t a) {
    static const ModuleData d = find_module_data();
    return a - d.lo < d.hi - d.lo;
}

// Buffers start 16-byte aligned (memory.rs's ALIGN): the bytes between a buffer's end and the
// next boundary are its padding, before the guard pages, where an overrun does not fault.
constexpr uint64_t kAlign = 16;
inline uint64_t padded(uint64_t bytes) { return (bytes + kAlign - 1) / kAlign * kAlign; }

// A plain access of buffer `r` that reaches past its end, into the padding the guard pages
// leave: a GPU's allocations are rounded up too, so it may not fault there either, but the
// access is out of bounds (compute-sanitizer's memcheck reports it), and the row fails.
[[gnu::cold, gnu::noinline]] inline void past_end(const SimTraffic &t, int r, uintptr_t a, uint64_t bytes,
                                                 bool write, const void *pc) {
    const uint64_t held = t.pairs[2 * r + 1] - t.pairs[2 * r], offset = a - t.pairs[2 * r];
    const uint32_t e = t.elem_bytes[r] ? t.elem_bytes[r] : 1;
    const char *what = write ? "write" : "read";
    char ends[96] = "";
    if (offset < held)  // a vector access that starts inside and ends outside
        snprintf(ends, sizeof ends, " that ends %llu bytes past the last", (unsigned long long)(offset + bytes - held));
    char msg[512];
    snprintf(msg, sizeof msg,
             "out-of-bounds %s past the end of buffer '%s' at element %llu (byte offset %llu, a %llu-byte %s%s; "
             "the buffer holds %llu element%s of %u bytes)",
             what, t.names[r] ? t.names[r] : "?", (unsigned long long)(offset / e), (unsigned long long)offset,
             (unsigned long long)bytes, what, ends, (unsigned long long)(held / e), held / e == 1 ? "" : "s", e);
    sim_global_fail(msg, pc);
}

// An access of `bytes` at `p`: shared memory goes to the race checker (unless atomic),
// global memory is counted and goes to its own race checker (a plain access past a buffer's
// end fails), an atomic on a __device__ variable to the global one's ordering, anything else
// (the fibers' stacks first, the runtime's state) is left.
// `pc`: where in the kernel a plain load or store of at most 16 bytes is (null for atomics and
// the emulation's range reports, which the bank model does not see).
inline void access(const void *p, uint64_t bytes, bool write, bool atomic, const void *pc = nullptr) {
    uintptr_t a = (uintptr_t)p;
    if (on_a_stack(a)) {
        if (__atomic_load_n(&wgmma_issued, __ATOMIC_RELAXED)) [[unlikely]]
            sim_wgmma_access(p, bytes, write, pc);
        return;
    }
    Block *at = &block;
    asm("" : "+r"(at));  // one call for the thread-local's address, not one per use
    Block &b = *at;
    if (a - b.static_lo < b.static_bytes || a - b.dynamic_lo < b.dynamic_bytes) {
        SimBankThread who;
        const bool banks = pc && b.banks;
        if (!atomic && sim_shared_access(p, bytes, write, banks ? &who : nullptr, pc) && banks)
            b.banks->plain(p, (unsigned)bytes, write, (uintptr_t)pc, who);
    } else if (const int r = buffer_of(b, a); r >= 0) {
        if (pc && a + bytes > b.traffic->pairs[2 * r + 1]) [[unlikely]]
            past_end(*b.traffic, r, a, bytes, write, pc);
        (write ? b.stores : b.loads) += bytes;
        SimBankThread who;
        if (pc && !atomic && b.banks && sim_bank_thread(p, &who))
            b.banks->global_access(p, (unsigned)bytes, write, (uintptr_t)pc, who);
        if (!b.agent) return;
        if (atomic) sim_global::atomic(*b.traffic, *b.agent, a, write);
        else sim_global::check(*b.traffic, *b.agent, r, a - b.traffic->pairs[2 * r], bytes, write, pc);
    } else {
        // A buffer's padding: a plain access there is past its end (an atomic has no line to
        // name; the canary shows what it wrote).
        const SimTraffic *t = b.traffic;
        for (int i = 0; t && a >= t->lowest && a < t->highest + kAlign && i < t->ranges; ++i) {
            if (a < t->pairs[2 * i + 1] || a >= t->pairs[2 * i] + padded(t->pairs[2 * i + 1] - t->pairs[2 * i]))
                continue;
            if (pc) past_end(*t, i, a, bytes, write, pc);
            return;
        }
        // A __device__ variable (the module's data, not a launch buffer): not traffic, but an
        // atomic on it orders blocks as one on a buffer does (a last-block counter's).
        if (atomic && b.agent && in_module_data(a)) sim_global::atomic(*b.traffic, *b.agent, a, write);
    }
}

// How far past a buffer's end a misaligned access is still named as that buffer's: well
// inside its guard (64 MiB, memory.rs), past the rows a grid's tail overruns by.
constexpr uint64_t kNearEnd = 1 << 20;

// An access of `bytes` at `p` whose address is not a multiple of its size, which a GPU faults
// on ("misaligned address"): a fault of the row when it is the kernel's, to its shared memory
// or a buffer of the launch (the fibers' stacks and the emulation's own state are left: their
// layout is the host's).
[[gnu::cold, gnu::noinline]] inline void misaligned(const void *p, uint64_t bytes, bool write,
                                                   const void *pc) {
    const uintptr_t a = (uintptr_t)p;
    if (on_a_stack(a)) return;
    const Block &b = block;
    if (a - b.static_lo < b.static_bytes || a - b.dynamic_lo < b.dynamic_bytes) {
        sim_misaligned_shared(p, bytes, write, pc);
        return;
    }
    if (!b.traffic) return;
    const SimTraffic &t = *b.traffic;
    int r = buffer_of(b, a);
    // Just past a buffer's end, in its guard: an aligned vector move faults on the alignment
    // (with no address) before the guard page could name the buffer, so both are said here.
    bool past = false;
    for (int i = 0; r < 0 && i < t.ranges; ++i) {
        if (a >= t.pairs[2 * i + 1] && a - t.pairs[2 * i + 1] < kNearEnd) {
            r = i;
            past = true;
        }
    }
    if (r < 0) return;
    const uint64_t offset = a - t.pairs[2 * r];
    const uint32_t e = t.elem_bytes[r];
    char msg[512], elem[64] = "", end[96] = "";
    if (e > 1) snprintf(elem, sizeof elem, " (element %llu)", (unsigned long long)(offset / e));
    if (past)
        snprintf(end, sizeof end, ", past its end (it holds %llu bytes),",
                 (unsigned long long)(t.pairs[2 * r + 1] - t.pairs[2 * r]));
    snprintf(msg, sizeof msg,
             "misaligned address: this thread %s %llu bytes at byte %llu%s of buffer '%s'%s which is not a multiple "
             "of %llu (a GPU faults on an access that is not aligned to its size: a cast to a vector type such as "
             "float4 or __half2 needs an index that is a multiple of its width)",
             write ? "writes" : "reads", (unsigned long long)bytes, (unsigned long long)offset, elem,
             t.names[r] ? t.names[r] : "?", past ? end : ",", (unsigned long long)bytes);
    sim_global_fail(msg, pc);
}

// A 16-byte access 8 bytes off a 16-byte boundary: right for a 16-byte struct aligned to 8,
// a fault for a float4, which the host compiler loads with an aligned vector move that faults
// with no address. Kept with the code address of its hook's call, for the fault handler
// (sim_misaligned_suspect).
struct Suspect {
    const void *p, *pc;
    bool write;
};
thread_local Suspect suspect;

// The alignment check of a plain access through a sized hook. gcc calls those (__tsan_read16,
// ...) only for a type aligned to at least min(bytes, 8), and the unaligned or range hooks for
// any other, so an address off that alignment is the kernel's misaligned cast, never a packed
// struct. Held to min(bytes, 8) because gcc also calls the 16-byte hooks for 16-byte structs
// aligned to 8, which nvcc accesses in 8-byte halves: a float4 8 bytes past a 16-byte boundary
// is missed; 4 or 12 bytes past is caught. Atomics are held to their size, which is at most 8.
inline void aligned(const void *p, uint64_t bytes, bool write, const void *pc = nullptr) {
    if (__builtin_expect(((uintptr_t)p & ((bytes < 8 ? bytes : 8) - 1)) != 0, 0)) misaligned(p, bytes, write, pc);
    if (bytes == 16 && __builtin_expect(((uintptr_t)p & 15) == 8, 0)) suspect = Suspect{p, pc, write};
}

// A volatile access: in global memory a strong one, as PTX defines ld.volatile and
// st.volatile (relaxed, at system scope), which races with nothing and carries release and
// acquire patterns as atomics do; in shared memory a plain one, since the warp-synchronous
// code that uses volatile there gets wrong results without a __syncwarp() on Volta and later.
inline void volatile_access(const void *p, uint64_t bytes, bool write, const void *pc) {
    sim_poll();
    const Block &b = block;
    const uintptr_t a = (uintptr_t)p;
    const bool shared = a - b.static_lo < b.static_bytes || a - b.dynamic_lo < b.dynamic_bytes;
    access(p, bytes, write, !shared, pc);
}

// Atomic accesses (counted, never race-checked; each a poll of a spin-wait, as volatile ones
// are), then plain ones.
inline void load(const void *p, uint64_t bytes) {
    sim_poll();
    aligned(p, bytes, false);
    access(p, bytes, false, true);
}
inline void store(const void *p, uint64_t bytes) {
    aligned(p, bytes, true);
    access(p, bytes, true, true);
}
inline void read(const void *p, uint64_t bytes, const void *pc = nullptr) { access(p, bytes, false, false, pc); }
inline void write(const void *p, uint64_t bytes, const void *pc = nullptr) { access(p, bytes, true, false, pc); }

}  // namespace sim_traffic

// ---- Called by the runtime ----

// A block starts on the calling OS thread: its launch counts into `t` (null: not counted), its
// shared memory is [static_lo, +static_bytes) and [dynamic_lo, +dynamic_bytes).
extern "C" void sim_traffic_begin(SimTraffic *t, const void *static_lo, size_t static_bytes,
                                  const void *dynamic_lo, size_t dynamic_bytes) {
    sim_traffic::block = sim_traffic::Block{t,
                                            (uintptr_t)static_lo,
                                            static_bytes,
                                            (uintptr_t)dynamic_lo,
                                            dynamic_bytes,
                                            0,
                                            0,
                                            t ? new sim_traffic::Banks : nullptr,
                                            t && t->global ? new sim_global::Agent : nullptr};
}

// The block has finished: what it counted goes to its launch's totals.
extern "C" void sim_traffic_flush() {
    sim_traffic::Block &b = sim_traffic::block;
    if (b.traffic) {
        __atomic_fetch_add(&b.traffic->loads, b.loads, __ATOMIC_RELAXED);
        __atomic_fetch_add(&b.traffic->stores, b.stores, __ATOMIC_RELAXED);
    }
    if (b.banks) {
        b.banks->finish();
        for (int k = 0; k < SIM_BANK_KINDS; ++k)
            for (int i = 0; i < 3; ++i) __atomic_fetch_add(&b.traffic->banks[k][i], b.banks->counts[k][i], __ATOMIC_RELAXED);
        for (int k = 0; k < SIM_GLOBAL_KINDS; ++k)
            for (int w = 0; w < 2; ++w)
                for (int i = 0; i < 5; ++i)
                    __atomic_fetch_add(&b.traffic->coalescing[k][w][i], b.banks->global[k][w][i], __ATOMIC_RELAXED);
        delete b.banks;
    }
    if (b.agent) sim_global::leave(*(sim_global::Launch *)b.traffic->global, *b.agent);
    delete b.agent;
    b = sim_traffic::Block{};
}

// The calling thread switches out (sim_global.h): its last store has landed.
extern "C" void sim_global_settle() {
    sim_traffic::Block &b = sim_traffic::block;
    if (b.agent) sim_global::settle(*b.traffic, *b.agent);
}

// __threadfence() (sim_global.h).
extern "C" void sim_global_fence() {
    sim_traffic::Block &b = sim_traffic::block;
    if (b.agent) sim_global::fence(*b.traffic, *b.agent);
}

// An atomic of the emulation (sim_runtime.h's SIM_GLOBAL_ATOMIC) on an address of its own.
extern "C" void sim_atomic_rmw(const void *p, unsigned long n) {
    sim_traffic::load(p, n);
    sim_traffic::store(p, n);
}

extern "C" void sim_global_atomic(const void *p) {
    sim_traffic::Block &b = sim_traffic::block;
    if (b.agent) sim_global::atomic(*b.traffic, *b.agent, (uintptr_t)p, true);
}

// ---- Called by the host around each launch it race-checks ----

#define SIM_HOST_EXPORT extern "C" __attribute__((visibility("default")))

// The launch's state, cells for its buffers mapped (a buffer whose cells cannot be mapped is
// not checked).
SIM_HOST_EXPORT void sim_global_begin(SimTraffic *t) {
    auto *l = new sim_global::Launch();
    for (int i = 0; i < t->ranges; ++i) {
        const size_t bytes = t->pairs[2 * i + 1] - t->pairs[2 * i];
        void *m = mmap(nullptr, bytes * sizeof(sim_global::Cell), PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        // Huge pages where the system gives them on request: a launch of every block touches
        // most of its cells, and at 48 bytes of cells per byte of buffer, faulting them in
        // 4 KB at a time cost more than the checking. A sample of blocks touches rows here
        // and there, each of which would cost a huge page.
        if (m != MAP_FAILED && t->every_block) madvise(m, bytes * sizeof(sim_global::Cell), MADV_HUGEPAGE);
        l->cells[i] = bytes && m != MAP_FAILED ? (sim_global::Cell *)m : nullptr;
        l->bytes[i] = bytes;
    }
    t->global = l;
}

SIM_HOST_EXPORT void sim_global_end(SimTraffic *t) {
    auto *l = (sim_global::Launch *)t->global;
    if (!l) return;
    for (int i = 0; i < t->ranges; ++i)
        if (l->cells[i]) munmap(l->cells[i], l->bytes[i] * sizeof(sim_global::Cell));
    delete l;
    t->global = nullptr;
}

// A fault with no address at `pc` (sim_fault): the last 16-byte access 8 bytes off its
// alignment made it if its hook was called just before that instruction.
extern "C" void sim_misaligned_suspect(uint64_t pc) {
    const sim_traffic::Suspect s = sim_traffic::suspect;
    if (s.pc && pc >= (uint64_t)s.pc && pc - (uint64_t)s.pc < 256) {
        sim_traffic::suspect = {};
        sim_traffic::misaligned(s.p, 16, s.write, s.pc);
    }
}

// ---- The instrumentation's hooks (the names and signatures gcc calls) ----

// The code address the hook was called from: which instruction of the kernel it is.
#define SIM_HERE __builtin_return_address(0)

extern "C" {

void __tsan_init() {}
void __tsan_func_entry(void *) {}
void __tsan_func_exit() {}
void __tsan_vptr_update(void **, void *) {}
void __tsan_vptr_read(void **) {}
void __tsan_read_range(void *p, unsigned long n) { sim_traffic::read(p, n); }
void __tsan_write_range(void *p, unsigned long n) { sim_traffic::write(p, n); }

// ldmatrix, stmatrix and cp.async: one lane's row or destination, from the emulation.
void sim_bank_report(int kind, const void *p, unsigned long n, unsigned matrices) {
    sim_traffic::Block &b = sim_traffic::block;
    SimBankThread who;
    if (!b.banks || !sim_bank_thread(p, &who)) return;
    const unsigned expected = matrices ? 8 * matrices : who.lanes;
    b.banks->add(who, (unsigned)kind, (uintptr_t)SIM_HERE, (uintptr_t)p, (unsigned)n, expected);
}

// Each passes the code address of the access to the bank model.
#define SIM_TRAFFIC_ACCESS(N_)                                                                 \
    void __tsan_read##N_(void *p) {                                                            \
        sim_traffic::aligned(p, N_, false, SIM_HERE);                                          \
        sim_traffic::read(p, N_, SIM_HERE);                                                    \
    }                                                                                         \
    void __tsan_write##N_(void *p) {                                                           \
        sim_traffic::aligned(p, N_, true, SIM_HERE);                                           \
        sim_traffic::write(p, N_, SIM_HERE);                                                   \
    }                                                                                         \
    void __tsan_unaligned_read##N_(void *p) { sim_traffic::read(p, N_, SIM_HERE); }             \
    void __tsan_unaligned_write##N_(void *p) { sim_traffic::write(p, N_, SIM_HERE); }           \
    void __tsan_volatile_read##N_(void *p) {                                                   \
        sim_traffic::aligned(p, N_, false);                                                    \
        sim_traffic::volatile_access(p, N_, false, SIM_HERE);                                  \
    }                                                                                         \
    void __tsan_volatile_write##N_(void *p) {                                                  \
        sim_traffic::aligned(p, N_, true);                                                     \
        sim_traffic::volatile_access(p, N_, true, SIM_HERE);                                   \
    }                                                                                         \
    void __tsan_unaligned_volatile_read##N_(void *p) { sim_traffic::volatile_access(p, N_, false, SIM_HERE); } \
    void __tsan_unaligned_volatile_write##N_(void *p) { sim_traffic::volatile_access(p, N_, true, SIM_HERE); }
SIM_TRAFFIC_ACCESS(1)
SIM_TRAFFIC_ACCESS(2)
SIM_TRAFFIC_ACCESS(4)
SIM_TRAFFIC_ACCESS(8)
SIM_TRAFFIC_ACCESS(16)
#undef SIM_TRAFFIC_ACCESS

// Atomics: the instrumentation replaces each atomic builtin by one of these, which must also
// perform it. A read-modify-write counts as a load and a store. A compare-exchange counts as
// a store when it succeeds and as a load when it fails: the emulation's atomics (atomicAdd on
// floats, ...) load the old value first, so one that succeeds at once counts a load and a
// store, as a GPU's atomic does. The memory order is always sequentially consistent: stronger
// than asked, never weaker.
#define SIM_TRAFFIC_RMW(N_, T_, OP)                                                   \
    T_ __tsan_atomic##N_##_##OP(volatile T_ *a, T_ v, int) {                            \
        sim_traffic::load((const void *)a, sizeof(T_));                              \
        sim_traffic::store((const void *)a, sizeof(T_));                             \
        return __atomic_##OP((T_ *)a, v, __ATOMIC_SEQ_CST);                          \
    }
#define SIM_TRAFFIC_ATOMICS(N_, T_)                                                   \
    T_ __tsan_atomic##N_##_load(const volatile T_ *a, int) {                           \
        sim_traffic::load((const void *)a, sizeof(T_));                              \
        return __atomic_load_n((T_ *)a, __ATOMIC_SEQ_CST);                           \
    }                                                                               \
    void __tsan_atomic##N_##_store(volatile T_ *a, T_ v, int) {                        \
        sim_traffic::store((const void *)a, sizeof(T_));                             \
        __atomic_store_n((T_ *)a, v, __ATOMIC_SEQ_CST);                              \
    }                                                                               \
    T_ __tsan_atomic##N_##_exchange(volatile T_ *a, T_ v, int) {                        \
        sim_traffic::load((const void *)a, sizeof(T_));                              \
        sim_traffic::store((const void *)a, sizeof(T_));                             \
        return __atomic_exchange_n((T_ *)a, v, __ATOMIC_SEQ_CST);                    \
    }                                                                               \
    SIM_TRAFFIC_RMW(N_, T_, fetch_add)                                                \
    SIM_TRAFFIC_RMW(N_, T_, fetch_sub)                                                \
    SIM_TRAFFIC_RMW(N_, T_, fetch_and)                                                \
    SIM_TRAFFIC_RMW(N_, T_, fetch_or)                                                 \
    SIM_TRAFFIC_RMW(N_, T_, fetch_xor)                                                \
    SIM_TRAFFIC_RMW(N_, T_, fetch_nand)                                               \
    int __tsan_atomic##N_##_compare_exchange_strong(volatile T_ *a, T_ *c, T_ v, int, int) { \
        bool done = __atomic_compare_exchange_n((T_ *)a, c, v, false, __ATOMIC_SEQ_CST, \
                                                __ATOMIC_SEQ_CST);                  \
        if (done) sim_traffic::store((const void *)a, sizeof(T_));                   \
        else sim_traffic::load((const void *)a, sizeof(T_));                         \
        return done;                                                                \
    }                                                                               \
    int __tsan_atomic##N_##_compare_exchange_weak(volatile T_ *a, T_ *c, T_ v, int, int) { \
        return __tsan_atomic##N_##_compare_exchange_strong(a, c, v, 0, 0);           \
    }                                                                               \
    T_ __tsan_atomic##N_##_compare_exchange_val(volatile T_ *a, T_ c, T_ v, int, int) {  \
        __tsan_atomic##N_##_compare_exchange_strong(a, &c, v, 0, 0);                 \
        return c;                                                                   \
    }
SIM_TRAFFIC_ATOMICS(8, uint8_t)
SIM_TRAFFIC_ATOMICS(16, uint16_t)
SIM_TRAFFIC_ATOMICS(32, uint32_t)
SIM_TRAFFIC_ATOMICS(64, uint64_t)
#undef SIM_TRAFFIC_ATOMICS
#undef SIM_TRAFFIC_RMW

void __tsan_atomic_thread_fence(int) { __atomic_thread_fence(__ATOMIC_SEQ_CST); }
void __tsan_atomic_signal_fence(int) { __atomic_signal_fence(__ATOMIC_SEQ_CST); }

}  // extern "C"
