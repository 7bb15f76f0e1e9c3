// Stand-in for <cudaTypedefs.h>: the driver API's function-pointer types, which only host code
// uses (a TMA kernel's file includes it for cuTensorMapEncodeTiled). The lab encodes the maps
// itself (`tmap(...)` in args=), so <cuda.h> is all device code needs.
#pragma once
#include <cuda.h>
