// Stand-in for <device_launch_parameters.h>, which Visual Studio's CUDA template includes: it
// declares threadIdx, blockIdx, blockDim, gridDim and warpSize, which NVRTC and the simulator
// already give device code.
#pragma once
