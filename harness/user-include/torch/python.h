// Stand-in for <torch/python.h>: its pybind11 bindings are host code, which the lab blanks;
// PYBIND11_MODULE is in torch/types.h.
#pragma once
#include "torch/types.h"
