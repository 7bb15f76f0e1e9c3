// sim_async_copy.h: a copy shared by the threads of a group, as cooperative groups' and
// libcu++'s memcpy_async make it. Where it goes from global to shared memory and both
// addresses agree modulo 4, 8 or 16 bytes, each thread issues cp.async copies of the widest
// such size, every `size`-th one from its `rank`, and copies the unaligned head and tail
// element by element; otherwise the group copies element by element.
#pragma once

#include "cuda_runtime.h"

namespace sim {

inline void group_inline_copy(unsigned rank, unsigned size, char *dst, const char *src, size_t bytes) {
    for (size_t i = rank; i < bytes; i += size) dst[i] = src[i];
}

inline void group_copy(unsigned rank, unsigned size, void *dst_, const void *src_, size_t bytes) {
    char *dst = (char *)dst_;
    const char *src = (const char *)src_;
    if (bytes == 0) return;
    unsigned width = 0;
    if (is_shared(dst, bytes) && !is_shared(src, 1))
        for (unsigned w : {16u, 8u, 4u})
            if ((((uintptr_t)dst ^ (uintptr_t)src) & (w - 1)) == 0 && bytes >= w) {
                width = w;
                break;
            }
    if (width == 0) {
        group_inline_copy(rank, size, dst, src, bytes);
        return;
    }
    const size_t to_aligned = (width - (uintptr_t)src % width) % width;
    const size_t head = to_aligned < bytes ? to_aligned : bytes;
    group_inline_copy(rank, size, dst, src, head);
    const size_t chunks = (bytes - head) / width;
    for (size_t i = rank; i < chunks; i += size)
        async_copy(dst + head + i * width, src + head + i * width, width, width);
    const size_t done = head + chunks * width;
    group_inline_copy(rank, size, dst + done, src + done, bytes - done);
}

}  // namespace sim
