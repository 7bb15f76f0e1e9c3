// Stand-in for <torch/torch.h>: see torch/extension.h.
#pragma once
#include "torch/extension.h"
