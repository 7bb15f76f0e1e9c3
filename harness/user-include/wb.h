// Stand-in for <wb.h>, the host library of a university course on parallel programming (its
// logging, timers and file import), for NVRTC and the simulator alike: only host code uses it,
// which the lab removes, and it is not installed. Its types that a file names outside host
// functions are declared.
#pragma once
typedef struct kernel_lab_wb_arg *wbArg_t;
