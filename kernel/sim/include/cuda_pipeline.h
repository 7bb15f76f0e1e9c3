// cuda_pipeline.h (simulator stand-in): the pipeline primitives it brings
// (cuda_pipeline_primitives.h). Its experimental C++ interface (nvcuda::experimental::pipeline
// and its memcpy_async) is not emulated: a kernel that uses it fails to compile here, saying
// so, and runs on a GPU.
#pragma once

#include "cuda_pipeline_primitives.h"

template <class>
inline constexpr bool sim_pipeline_class = false;  // false, once instantiated
#define SIM_PIPELINE_CLASS_NOT_SIMULATED(T_)                                                          \
    static_assert(sim_pipeline_class<T_>,                                                           \
                  "cuda_pipeline.h's nvcuda::experimental::pipeline is not simulated (it runs on a " \
                  "GPU): use the __pipeline_ primitives or cuda::pipeline, which the simulator runs")

namespace nvcuda {
namespace experimental {
class pipeline {
  public:
    template <class T_ = void>
    pipeline() {
        SIM_PIPELINE_CLASS_NOT_SIMULATED(T_);
    }
    template <class T_ = void>
    void commit() {
        SIM_PIPELINE_CLASS_NOT_SIMULATED(T_);
    }
    template <class T_ = void>
    void commit_and_wait() {
        SIM_PIPELINE_CLASS_NOT_SIMULATED(T_);
    }
    template <unsigned N_, class T_ = void>
    void wait_prior() {
        SIM_PIPELINE_CLASS_NOT_SIMULATED(T_);
    }
};
template <class... A_>
void memcpy_async(A_ &&...) {
    SIM_PIPELINE_CLASS_NOT_SIMULATED(pipeline *(*)(A_...));
}
}  // namespace experimental
}  // namespace nvcuda
