// sim_fp8_value.h (simulator): the value of an FP8 byte, E4M3 (4 exponent bits, bias 7, 3
// mantissa bits, S.1111.111 NaN, no infinity) or E5M2 (5 exponent bits, bias 15, 2 mantissa
// bits, IEEE infinities and NaNs), for cuda_fp8.h's conversions and the tensor-core emulation
// of FP8 mma.sync and wgmma.
#pragma once

#include <cmath>

namespace sim {
inline float fp8_value(unsigned char b, bool e5m2) {
    const int mant = e5m2 ? 2 : 3, bias = e5m2 ? 15 : 7;
    const bool neg = (b & 0x80u) != 0;
    const unsigned exp = (b & 0x7Fu) >> mant, m = b & ((1u << mant) - 1u);
    const unsigned top = (1u << (7 - mant)) - 1u;
    double v;
    if (!e5m2 && (b & 0x7Fu) == 0x7Fu) {
        v = NAN;
    } else if (e5m2 && exp == top) {
        v = m ? NAN : INFINITY;
    } else if (exp == 0) {
        v = std::ldexp((double)m, 1 - bias - mant);
    } else {
        v = std::ldexp((double)(m | (1u << mant)), (int)exp - bias - mant);
    }
    return (float)(neg ? -v : v);
}
}  // namespace sim
