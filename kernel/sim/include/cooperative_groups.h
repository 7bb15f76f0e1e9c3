// cooperative_groups.h (simulator stand-in): the commonly used subset of CUDA's cooperative
// groups, with the real header's names, signatures and semantics, built on the simulator's
// barriers, warp exchanges and clusters (sim_runtime.h, sim_builtins.h).
//
// Supported: thread_block (this_thread_block), thread_block_tile<1..32> (tiled_partition<N>,
// this_thread) with shuffles, votes and match_any, tiles of 64 to 1024 threads (ranks, sync
// and cg::reduce; block_tile_memory is accepted and not needed), cluster_group (this_cluster), grid_group
// (this_grid) queries and its sync, barrier_arrive and barrier_wait under a cooperative launch
// (without one they end the run with an error, as they would hang a GPU), and the free sync /
// thread_rank / group_size; thread_group made from a block or a tile; memcpy_async, wait and
// wait_prior in cooperative_groups/memcpy_async.h. Not here: tiled_partition(g, n) at run
// time, coalesced_group (coalesced_threads, which needs to know
// which lanes are converged), shuffles and votes of tiles of more than 32 threads (the real
// header has none either) and scans; a kernel using them fails to compile.
#pragma once

#include "cuda_runtime.h"

namespace cooperative_groups {

namespace details {

// The calling thread's rank in its block: x fastest, as the fibers are numbered.
inline unsigned cta_rank() {
    const uint3 t = threadIdx;
    return t.x + blockDim.x * (t.y + blockDim.y * t.z);
}
inline unsigned cta_threads() { return blockDim.x * blockDim.y * blockDim.z; }
inline unsigned laneid() { return ::sim::fiber().lane; }
inline const unsigned *cluster_dims() { return ::sim::worker().launch->cluster; }

}  // namespace details

class thread_block {
    friend thread_block this_thread_block();
    thread_block() = default;

   public:
    static void sync(::sim::Caller at = {}) { __syncthreads(at); }
    static unsigned int thread_rank() { return details::cta_rank(); }
    static unsigned int size() { return details::cta_threads(); }
    static unsigned int num_threads() { return details::cta_threads(); }
    static dim3 group_index() { return dim3(blockIdx); }
    static dim3 thread_index() { return dim3(threadIdx); }
    static dim3 group_dim() { return blockDim; }
    static dim3 dim_threads() { return blockDim; }
};

inline thread_block this_thread_block() { return thread_block(); }

// The scratch that tiles of more than a warp need before sm_80; the simulator's need none.
template <unsigned int MaxBlockSize = 1024, unsigned int TileCommunicationSize = 8, unsigned int MaxNumTiles = 32>
struct block_tile_memory {
    static_assert(MaxBlockSize % 32 == 0 && MaxBlockSize <= 1024, "MaxBlockSize: a multiple of 32, at most 1024");
};
template <unsigned int MaxBlockSize, unsigned int TileCommunicationSize, unsigned int MaxNumTiles>
thread_block this_thread_block(block_tile_memory<MaxBlockSize, TileCommunicationSize, MaxNumTiles> &) {
    return this_thread_block();
}

// ---- Tiles of 1 to 32 threads: the lanes [k * Size, (k + 1) * Size) of a warp. ----

template <unsigned int Size, typename ParentT = void>
class thread_block_tile;

namespace details {

template <unsigned int Size>
class tile_base {
    static_assert(Size == 1 || Size == 2 || Size == 4 || Size == 8 || Size == 16 || Size == 32,
                  "Size must be one of 1/2/4/8/16/32 (the simulator has no tiles of more than a warp)");

   protected:
    // The tile's lanes in its warp, as the real header passes them to the *_sync intrinsics.
    static unsigned int build_mask() {
        if constexpr (Size == 32) return 0xFFFFFFFFu;
        else return ((1u << Size) - 1) << (laneid() & ~(Size - 1));
    }

   public:
    static unsigned int thread_rank() { return cta_rank() & (Size - 1); }
    static constexpr unsigned int num_threads() { return Size; }
    static constexpr unsigned int size() { return Size; }
    // Each takes its caller's line (`sim::Caller`), which a failure or a deadlock names.
    static void sync(::sim::Caller at = {}) { __syncwarp(build_mask(), at); }

    template <class T_>
    T_ shfl(T_ v, int src_rank, ::sim::Caller at = {}) const {
        return __shfl_sync(build_mask(), v, src_rank, Size, at);
    }
    template <class T_>
    T_ shfl_down(T_ v, unsigned int delta, ::sim::Caller at = {}) const {
        return __shfl_down_sync(build_mask(), v, delta, Size, at);
    }
    template <class T_>
    T_ shfl_up(T_ v, unsigned int delta, ::sim::Caller at = {}) const {
        return __shfl_up_sync(build_mask(), v, delta, Size, at);
    }
    template <class T_>
    T_ shfl_xor(T_ v, unsigned int lane_mask, ::sim::Caller at = {}) const {
        return __shfl_xor_sync(build_mask(), v, (int)lane_mask, Size, at);
    }
    int any(int predicate, ::sim::Caller at = {}) const { return __ballot_sync(build_mask(), predicate, at) != 0; }
    int all(int predicate, ::sim::Caller at = {}) const { return __all_sync(build_mask(), predicate, at); }
    // Bit r: the tile's thread of rank r.
    unsigned int ballot(int predicate, ::sim::Caller at = {}) const {
        return __ballot_sync(build_mask(), predicate, at) >> (laneid() & ~(Size - 1));
    }
    // The tile's threads holding the same value, one shuffle per rank (no __match_any_sync in
    // the simulator; every thread of the tile takes part in each).
    template <class T_>
    unsigned int match_any(T_ v) const {
        static_assert(std::is_integral_v<T_> && (sizeof(T_) == 4 || sizeof(T_) == 8),
                      "match_any takes a 32- or 64-bit integer");
        unsigned int same = 0;
        for (unsigned int r = 0; r < Size; ++r)
            if (shfl(v, (int)r) == v) same |= 1u << r;
        return same;
    }
};

// Tiles of 64 to 1024 threads: whole warps [k * Size, (k + 1) * Size) of the block. They
// synchronize on a named barrier of their own (1 + their rank among their siblings, so at
// most 15 of them in a block) and reduce through memory; they have no shuffles or votes.
template <unsigned int Size>
class multi_warp_tile_base {
    static_assert(Size == 64 || Size == 128 || Size == 256 || Size == 512 || Size == 1024,
                  "a tile of more than a warp has 64, 128, 256, 512 or 1024 threads");

   public:
    static unsigned int thread_rank() { return cta_rank() % Size; }
    static constexpr unsigned int num_threads() { return Size; }
    static constexpr unsigned int size() { return Size; }
    static void sync(::sim::Caller at = {}) {
        const ::sim::SourceSite site(at.file, at.line);
        const unsigned tile = cta_rank() / Size;
        if (1 + tile >= ::sim::kNamedBarriers)
            ::sim::fail("thread_block_tile<%u>::sync: tile %u of its block; the simulator gives each tile of "
                        "more than a warp a named barrier of its own, and a block has %u besides __syncthreads's",
                        Size, tile, ::sim::kNamedBarriers - 1);
        ::sim::named_barrier(1 + tile, Size, true, "thread_block_tile::sync");
    }
};

template <unsigned int Size>
using tile_base_of = std::conditional_t<(Size <= 32), tile_base<Size>, multi_warp_tile_base<Size>>;

}  // namespace details

// A tile that knows its parent's type: its place among its siblings comes from the parent's
// rank, as in the real header.
template <unsigned int Size, typename ParentT>
class thread_block_tile : public details::tile_base_of<Size> {
    template <unsigned int S_, typename P_>
    friend thread_block_tile<S_, P_> tiled_partition(const P_ &);
    explicit thread_block_tile(const ParentT &) {}

   public:
    static unsigned int meta_group_rank() { return ParentT::thread_rank() / Size; }
    static unsigned int meta_group_size() { return (ParentT::size() + Size - 1) / Size; }
};

// The type-erased tile (`thread_block_tile<32> t = tiled_partition<32>(block)`): it keeps its
// place among its siblings.
template <unsigned int Size>
class thread_block_tile<Size, void> : public details::tile_base_of<Size> {
    unsigned int meta_rank_, meta_size_;

   public:
    template <typename ParentT>
    thread_block_tile(const thread_block_tile<Size, ParentT> &g)
        : meta_rank_(g.meta_group_rank()), meta_size_(g.meta_group_size()) {}
    thread_block_tile(unsigned int meta_rank, unsigned int meta_size) : meta_rank_(meta_rank), meta_size_(meta_size) {}
    unsigned int meta_group_rank() const { return meta_rank_; }
    unsigned int meta_group_size() const { return meta_size_; }
};

template <unsigned int Size, typename ParentT>
thread_block_tile<Size, ParentT> tiled_partition(const ParentT &g) {
    if constexpr (!std::is_same_v<ParentT, thread_block>)
        static_assert(Size < ParentT::num_threads(), "Tile size bigger or equal to the parent group size");
    return thread_block_tile<Size, ParentT>(g);
}

inline thread_block_tile<1, void> this_thread() { return thread_block_tile<1, void>(0, 1); }

// ---- Clusters (Hopper): barrier.cluster and mapa, as lab/hopper.h reaches them. ----

class cluster_group {
    friend cluster_group this_cluster();
    cluster_group() = default;

   public:
    using arrival_token = struct {};

    static void sync(::sim::Caller at = {}) {
        const ::sim::SourceSite site(at.file, at.line);
        ::sim::cluster_arrive();
        ::sim::cluster_wait();
    }
    static arrival_token barrier_arrive(::sim::Caller at = {}) {
        const ::sim::SourceSite site(at.file, at.line);
        ::sim::cluster_arrive();
        return arrival_token();
    }
    static void barrier_wait(::sim::Caller at = {}) {
        const ::sim::SourceSite site(at.file, at.line);
        ::sim::cluster_wait();
    }
    static void barrier_wait(arrival_token &&, ::sim::Caller at = {}) { barrier_wait(at); }
    // The rank of the block whose shared memory holds `addr`.
    static unsigned int query_shared_rank(const void *addr) {
        ::sim::Worker *w = ::sim::shared_owner(addr, 1);
        if (!w) ::sim::fail("cluster_group::query_shared_rank: %p is in no shared memory of the cluster", addr);
        return w->rank;
    }
    template <typename T_>
    static T_ *map_shared_rank(T_ *addr, int rank) {
        return static_cast<T_ *>(::sim::cluster_map(addr, (unsigned)rank, "cluster_group::map_shared_rank"));
    }
    static unsigned int block_rank() { return ::sim::worker().rank; }
    static dim3 block_index() {
        const unsigned *d = details::cluster_dims();
        const unsigned r = block_rank();
        return dim3(r % d[0], r / d[0] % d[1], r / d[0] / d[1]);
    }
    static dim3 dim_blocks() {
        const unsigned *d = details::cluster_dims();
        return dim3(d[0], d[1], d[2]);
    }
    static unsigned int num_blocks() { return ::sim::worker().cluster->size; }
    static dim3 thread_index() {
        const dim3 b = block_index();
        const uint3 t = threadIdx;
        return dim3(b.x * blockDim.x + t.x, b.y * blockDim.y + t.y, b.z * blockDim.z + t.z);
    }
    static unsigned int thread_rank() { return block_rank() * details::cta_threads() + details::cta_rank(); }
    static dim3 dim_threads() {
        const dim3 d = dim_blocks();
        return dim3(d.x * blockDim.x, d.y * blockDim.y, d.z * blockDim.z);
    }
    static unsigned int num_threads() { return num_blocks() * details::cta_threads(); }
    static unsigned int size() { return num_threads(); }
};

inline cluster_group this_cluster() { return cluster_group(); }

// ---- The grid: its queries, and grid.sync() under a cooperative launch (every block resident
// at once); without one, the simulator says so instead of hanging. ----

class grid_group {
    friend grid_group this_grid();
    grid_group() = default;

    static SimGrid *barrier(const char *what) {
        SimGrid *g = ::sim::grid_barrier();
        if (!g)
            ::sim::fail("cooperative_groups::grid_group::%s needs a cooperative launch (cudaLaunchCooperativeKernel: "
                        "every block resident at once); the lab makes one for a kernel given launch=cooperative",
                        what);
        return g;
    }

   public:
    struct arrival_token {
        unsigned long long phase;
    };

    // Whether the grid can synchronize: only under a cooperative launch.
    static bool is_valid() { return ::sim::grid_barrier() != nullptr; }
    static void sync(::sim::Caller at = {}) {
        barrier("sync()");
        barrier_wait(barrier_arrive(at), at);
    }
    // The block's threads meet, then one of them arrives for the block.
    static arrival_token barrier_arrive(::sim::Caller at = {}) {
        SimGrid *g = barrier("barrier_arrive()");
        __syncthreads(at);
        return arrival_token{details::cta_rank() == 0 ? ::sim::grid_arrive(g) : 0};
    }
    // The thread that arrived waits for every block; then the block's threads meet again.
    static void barrier_wait(arrival_token &&t, ::sim::Caller at = {}) {
        SimGrid *g = barrier("barrier_wait()");
        const ::sim::SourceSite site(at.file, at.line);
        if (details::cta_rank() == 0) ::sim::grid_wait(g, t.phase);
        __syncthreads(at);
    }
    static unsigned long long num_blocks() { return (unsigned long long)gridDim.x * gridDim.y * gridDim.z; }
    static unsigned long long block_rank() {
        const uint3 b = blockIdx;
        return b.x + (unsigned long long)gridDim.x * (b.y + (unsigned long long)gridDim.y * b.z);
    }
    static unsigned long long num_threads() { return num_blocks() * details::cta_threads(); }
    static unsigned long long size() { return num_threads(); }
    static unsigned long long thread_rank() { return block_rank() * details::cta_threads() + details::cta_rank(); }
    static dim3 dim_blocks() { return gridDim; }
    static dim3 block_index() { return dim3(blockIdx); }
    static dim3 group_dim() { return dim_threads(); }
    static dim3 dim_threads() {
        return dim3(gridDim.x * blockDim.x, gridDim.y * blockDim.y, gridDim.z * blockDim.z);
    }
    static dim3 thread_index() {
        const uint3 b = blockIdx, t = threadIdx;
        return dim3(b.x * blockDim.x + t.x, b.y * blockDim.y + t.y, b.z * blockDim.z + t.z);
    }
    static dim3 dim_clusters() {
        const unsigned *d = details::cluster_dims();
        return dim3(gridDim.x / d[0], gridDim.y / d[1], gridDim.z / d[2]);
    }
    static unsigned long long num_clusters() {
        const dim3 d = dim_clusters();
        return (unsigned long long)d.x * d.y * d.z;
    }
    static dim3 cluster_index() {
        const unsigned *d = details::cluster_dims();
        const uint3 b = blockIdx;
        return dim3(b.x / d[0], b.y / d[1], b.z / d[2]);
    }
    static unsigned long long cluster_rank() {
        const dim3 i = cluster_index(), d = dim_clusters();
        return i.x + (unsigned long long)d.x * (i.y + (unsigned long long)d.y * i.z);
    }
};

inline grid_group this_grid() { return grid_group(); }

// ---- thread_group: a block or a tile passed by a type fixed at run time ----
//
// What a `__device__ float reduce(cg::thread_group g, ...)` takes (NVIDIA's "Cooperative
// Groups" examples): made from a thread_block or a thread_block_tile, whose own functions it
// calls. Not made at run time by tiled_partition(g, n).
class thread_group {
    void (*sync_)(::sim::Caller);
    unsigned int (*rank_)();
    unsigned int (*size_)();

   public:
    thread_group(const thread_block &)
        : sync_(&thread_block::sync), rank_(&thread_block::thread_rank), size_(&thread_block::size) {}
    template <unsigned int Size, typename ParentT>
    thread_group(const thread_block_tile<Size, ParentT> &)
        : sync_(&thread_block_tile<Size, ParentT>::sync),
          rank_(&thread_block_tile<Size, ParentT>::thread_rank),
          size_(&thread_block_tile<Size, ParentT>::size) {}
    void sync(::sim::Caller at = {}) const { sync_(at); }
    unsigned int thread_rank() const { return rank_(); }
    unsigned int size() const { return size_(); }
    unsigned int num_threads() const { return size_(); }
};

// ---- Free functions over any group ----

template <class GroupT>
void sync(GroupT const &g, ::sim::Caller at = {}) {
    g.sync(at);
}
template <class GroupT>
auto thread_rank(GroupT const &g) -> decltype(g.thread_rank()) {
    return g.thread_rank();
}
template <class GroupT>
auto group_size(GroupT const &g) -> decltype(g.num_threads()) {
    return g.num_threads();
}

}  // namespace cooperative_groups
