// Stand-in for <omp.h> in a user's kernel file: OpenMP is the host code's (a CPU reference
// computed in parallel), which the lab blanks; device code needs nothing from it.
#pragma once
