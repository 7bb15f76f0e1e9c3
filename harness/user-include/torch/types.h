// Stand-in for <torch/types.h> in a user's kernel file (a PyTorch extension): the names its host
// code declares, so that the file compiles for the device. The lab blanks host function
// bodies; nothing here is ever called.
#pragma once
namespace torch {
struct Tensor {};
struct Device {};
struct TensorOptions {};
}
namespace at {
using torch::Tensor;
}
#ifndef TORCH_EXTENSION_NAME
#define TORCH_EXTENSION_NAME kernel_lab_extension
#endif
// `PYBIND11_MODULE(name, m) { ... }` becomes a host function whose body the lab blanks.
#define PYBIND11_MODULE(name, m) [[maybe_unused]] static void kernel_lab_pybind11_module(int m)
#define TORCH_LIBRARY(name, m) [[maybe_unused]] static void kernel_lab_torch_library(int m)
