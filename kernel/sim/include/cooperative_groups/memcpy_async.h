// cooperative_groups/memcpy_async.h (simulator stand-in): cg::memcpy_async, cg::wait and
// cg::wait_prior with the real header's semantics. The group's threads share the copy in
// cp.async copies (sim_async_copy.h); each call then commits one group of the calling
// thread's copies, which wait_prior<N> completes (all but the newest N) before syncing the
// group.
#pragma once

#include <cooperative_groups.h>
#include <cuda_pipeline_primitives.h>

#include "sim_async_copy.h"

namespace cooperative_groups {

// `bytes` bytes (any integral type) from `src` to `dst`.
template <class Group, class T_, class Size>
inline void memcpy_async(const Group &g, T_ *dst, const T_ *src, const Size &bytes) {
    sim::group_copy(g.thread_rank(), g.size(), (void *)dst, (const void *)src, (size_t)bytes);
    __pipeline_commit();
}

// min(dst_count, src_count) elements of T.
template <class Group, class T_>
inline void memcpy_async(const Group &g, T_ *dst, size_t dst_count, const T_ *src, size_t src_count) {
    const size_t count = dst_count < src_count ? dst_count : src_count;
    sim::group_copy(g.thread_rank(), g.size(), (void *)dst, (const void *)src, count * sizeof(T_));
    __pipeline_commit();
}

// Each passes its caller's line to the group's barrier, which a deadlock names.
template <unsigned int Stage, class Group>
inline void wait_prior(const Group &g, ::sim::Caller at = {}) {
    __pipeline_wait_prior(Stage);
    g.sync(at);
}

template <class Group>
inline void wait(const Group &g, ::sim::Caller at = {}) {
    __pipeline_wait_prior(0);
    g.sync(at);
}

}  // namespace cooperative_groups
