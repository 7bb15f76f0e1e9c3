// cuda_pipeline_primitives.h (simulator stand-in): the pipeline primitives, which compile to
// cp.async and its groups, on the simulator's cp.async (sim_runtime.h): a copy of 4, 8 or 16
// bytes from global to shared memory whose last `zfill` bytes are zeros, lands at a wait
// that covers its commit group, not before.
#pragma once

#include "cuda_runtime.h"

inline void __pipeline_memcpy_async(void *dst_shared, const void *src_global, size_t size_and_align,
                                    size_t zfill = 0) {
    if (size_and_align != 4 && size_and_align != 8 && size_and_align != 16)
        sim::fail("__pipeline_memcpy_async copies 4, 8 or 16 bytes, not %zu", size_and_align);
    if (zfill > size_and_align)
        sim::fail("__pipeline_memcpy_async: zfill %zu is more than its %zu bytes", zfill, size_and_align);
    sim::async_copy(dst_shared, src_global, (unsigned)size_and_align, (unsigned)(size_and_align - zfill));
}

inline void __pipeline_commit() { sim::async_commit(); }

// The real header waits for at most 8 newer groups.
inline void __pipeline_wait_prior(size_t prior) { sim::async_wait(prior < 8 ? (unsigned)prior : 8u); }
