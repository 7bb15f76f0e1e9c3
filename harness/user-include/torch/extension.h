// Stand-in for <torch/extension.h>: see torch/types.h.
#pragma once
#include "torch/types.h"
