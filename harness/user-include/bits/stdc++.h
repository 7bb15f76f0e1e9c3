// Stand-in for libstdc++'s <bits/stdc++.h>, which includes the whole standard library, in a
// user's kernel file. The simulator (a host C++ compiler) uses the real header; for NVRTC, the
// lab's stand-ins of the headers device code uses and host classes' members name.
#pragma once
#ifdef KERNEL_LAB_SIM
#include_next <bits/stdc++.h>
#else
#include <algorithm>
#include <array>
#include <cassert>
#include <cfloat>
#include <climits>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <numeric>
#include <set>
#include <string>
#include <tuple>
#include <type_traits>
#include <unordered_map>
#include <utility>
#include <vector>
#endif
