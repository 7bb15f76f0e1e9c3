// Stand-in for the CUDA samples' <helper_timer.h> (their Common/ folder), for host code alone
// (see helper_cuda.h): the timer's type, which a file-scope variable may name.
#pragma once
class StopWatchInterface;
