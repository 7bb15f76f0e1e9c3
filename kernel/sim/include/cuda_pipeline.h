// cuda_pipeline.h (simulator stand-in): the pipeline primitives it brings
// (cuda_pipeline_primitives.h). Its experimental C++ classes (nvcuda::experimental::pipeline)
// are not emulated: a kernel using them fails to compile here and runs on a GPU.
#pragma once

#include "cuda_pipeline_primitives.h"
