// What the stand-ins' types for host classes' data members share (NVRTC only). Such a member
// may be initialized in its class (`std::string prefix = "[FT]";`, `std::map<int, std::string>
// names = {{0, "TRACE"}};`); the initializer is never run, so any is taken.
#pragma once
#include <initializer_list>
// The host's container, string and stream headers bring <type_traits>, which files count on.
#include <type_traits>
namespace kernel_lab {
struct any_value {
    template <class... A> any_value(const A &...) {}
};
struct host_type {
    host_type() = default;
    template <class A> host_type(const A &) {}
    host_type(std::initializer_list<any_value>) {}
};
}  // namespace kernel_lab
