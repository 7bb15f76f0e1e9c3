// cuda_pipeline.h (simulator stand-in): the pipeline primitives it brings
// (cuda_pipeline_primitives.h). Its experimental C++ interface (nvcuda::experimental::pipeline
// and its memcpy_async) is not emulated: a kernel that uses it fails to compile here, saying
// so, and runs on a GPU.
#pragma once

#include "cuda_pipeline_primitives.h"

template <class>
inline constexpr bool sim_pipeline_class = false;  // false, once instantiated
#define SIM_PIPELINE_CLASS_NOT_SIMULATED(T)                                                          \
    static_assert(sim_pipeline_class<T>,                                                           \
                  "cuda_pipeline.h's nvcuda::experimental::pipeline is not simulated (it runs on a " \
                  "GPU): use the __pipeline_ primitives or cuda::pipeline, which the simulator runs")

namespace nvcuda {
namespace experimental {
class pipeline {
  public:
    template <class T = void>
    pipeline() {
        SIM_PIPELINE_CLASS_NOT_SIMULATED(T);
    }
    template <class T = void>
    void commit() {
        SIM_PIPELINE_CLASS_NOT_SIMULATED(T);
    }
    template <class T = void>
    void commit_and_wait() {
        SIM_PIPELINE_CLASS_NOT_SIMULATED(T);
    }
    template <unsigned N, class T = void>
    void wait_prior() {
        SIM_PIPELINE_CLASS_NOT_SIMULATED(T);
    }
};
template <class... A>
void memcpy_async(A &&...) {
    SIM_PIPELINE_CLASS_NOT_SIMULATED(pipeline *(*)(A...));
}
}  // namespace experimental
}  // namespace nvcuda
