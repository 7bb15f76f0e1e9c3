// Stand-in for <torch/torch.h>: see torch/types.h.
#pragma once
#include "torch/types.h"
