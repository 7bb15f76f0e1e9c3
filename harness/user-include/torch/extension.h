// Stand-in for <torch/extension.h>: the host names of torch/types.h and what ATen gives device
// code (ATen/ATen.h), as the real header brings both.
#pragma once
#include "ATen/ATen.h"
#include "torch/python.h"
