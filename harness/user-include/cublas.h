// Stand-in for <cublas.h>: see cublas_v2.h.
#pragma once
#include "cublas_v2.h"
