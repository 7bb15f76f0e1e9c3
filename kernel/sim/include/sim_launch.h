// sim_launch.h: the table of kernels a module exports. The host finds a kernel by name and
// launches it like cuLaunchKernel, from an array of pointers to the arguments; the thunk calls
// the kernel with typed arguments and the parameter codes let the host check the plan's list.
#pragma once

#include "sim_hopper.h"
#include "sim_runtime.h"

namespace sim {

template <class T_>
constexpr char param_code() {
    if constexpr (std::is_pointer_v<T_>) return 'p';
    else if constexpr (std::is_same_v<T_, float>) return 'f';
    else if constexpr (std::is_integral_v<T_> && sizeof(T_) == 4) return 'i';
    else if constexpr (std::is_integral_v<T_> && sizeof(T_) == 8) return 'l';
    else if constexpr (std::is_same_v<T_, CUtensorMap>) return 'm';
    else return '?';
}

template <auto F_>
struct Thunk;
template <class... A_, void (*F_)(A_...)>
struct Thunk<F_> {
    static void call(void **args) {
        [&]<size_t... I_>(std::index_sequence<I_...>) {
            F_(*static_cast<std::remove_cv_t<std::remove_reference_t<A_>> *>(args[I_])...);
        }(std::index_sequence_for<A_...>{});
    }
    static constexpr char codes[sizeof...(A_) + 1] = {param_code<std::remove_cv_t<A_>>()..., 0};
};

}  // namespace sim

struct SimKernel {
    const char *name;
    void (*thunk)(void **);
    const char *params;  // one code per parameter: p pointer, i 32-bit integer, l 64-bit integer,
                         // f float, m tensor map
    unsigned cluster[3];  // __cluster_dims__, (1, 1, 1) without
};

namespace sim {
struct Dims3 {
    unsigned v[3];
};
constexpr Dims3 dims3(unsigned x, unsigned y = 1, unsigned z = 1) { return Dims3{{x, y, z}}; }
}  // namespace sim

#define SIM_KERNEL(name) SimKernel{#name, &sim::Thunk<&name>::call, sim::Thunk<&name>::codes, {1, 1, 1}}
// A kernel declared with __cluster_dims__(...): the compiler evaluates the dims (macros too).
#define SIM_KERNEL_CLUSTER(name, ...)                                                          \
    SimKernel{#name, &sim::Thunk<&name>::call, sim::Thunk<&name>::codes,                       \
              {sim::dims3(__VA_ARGS__).v[0], sim::dims3(__VA_ARGS__).v[1], sim::dims3(__VA_ARGS__).v[2]}}
