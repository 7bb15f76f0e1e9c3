// cooperative_groups/memcpy_async.h (simulator stand-in): cg::memcpy_async, cg::wait and
// cg::wait_prior with the real header's semantics. The group's threads share the copy: where
// it goes from global to shared memory and both addresses agree modulo 4, 8 or 16 bytes, each
// thread issues cp.async copies of the widest such size, every group.size()-th one from its
// rank, and copies the unaligned head and tail element by element; otherwise the group copies
// element by element. Each call then commits one group of the calling thread's copies, which
// wait_prior<N> completes (all but the newest N) before syncing the group.
#pragma once

#include <cooperative_groups.h>
#include <cuda_pipeline_primitives.h>

namespace cooperative_groups {
namespace details {

template <class Group>
inline void inline_copy(const Group &g, char *dst, const char *src, size_t bytes) {
    for (size_t i = g.thread_rank(); i < bytes; i += g.size()) dst[i] = src[i];
}

template <class Group>
inline void copy_bytes(const Group &g, void *dst_, const void *src_, size_t bytes) {
    char *dst = (char *)dst_;
    const char *src = (const char *)src_;
    if (bytes == 0) return;
    unsigned width = 0;
    if (sim::is_shared(dst, bytes) && !sim::is_shared(src, 1))
        for (unsigned w : {16u, 8u, 4u})
            if ((((uintptr_t)dst ^ (uintptr_t)src) & (w - 1)) == 0 && bytes >= w) {
                width = w;
                break;
            }
    if (width == 0) {
        inline_copy(g, dst, src, bytes);
        return;
    }
    const size_t to_aligned = (width - (uintptr_t)src % width) % width;
    const size_t head = to_aligned < bytes ? to_aligned : bytes;
    inline_copy(g, dst, src, head);
    const size_t chunks = (bytes - head) / width;
    for (size_t i = g.thread_rank(); i < chunks; i += g.size())
        __pipeline_memcpy_async(dst + head + i * width, src + head + i * width, width);
    const size_t done = head + chunks * width;
    inline_copy(g, dst + done, src + done, bytes - done);
}

}  // namespace details

// `bytes` bytes (any integral type) from `src` to `dst`.
template <class Group, class T, class Size>
inline void memcpy_async(const Group &g, T *dst, const T *src, const Size &bytes) {
    details::copy_bytes(g, (void *)dst, (const void *)src, (size_t)bytes);
    __pipeline_commit();
}

// min(dst_count, src_count) elements of T.
template <class Group, class T>
inline void memcpy_async(const Group &g, T *dst, size_t dst_count, const T *src, size_t src_count) {
    details::copy_bytes(g, (void *)dst, (const void *)src, (dst_count < src_count ? dst_count : src_count) * sizeof(T));
    __pipeline_commit();
}

template <unsigned int Stage, class Group>
inline void wait_prior(const Group &g) {
    __pipeline_wait_prior(Stage);
    g.sync();
}

template <class Group>
inline void wait(const Group &g) {
    __pipeline_wait_prior(0);
    g.sync();
}

}  // namespace cooperative_groups
