// Stand-in for the CUDA samples' <helper_string.h> (their Common/ folder), for host code alone:
// see helper_cuda.h.
#pragma once
