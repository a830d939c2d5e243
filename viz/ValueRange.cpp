// ValueRange accumulation.
#include "viz/ValueRange.h"

#include <algorithm>
#include <cmath>

namespace kvlens::viz {

void ValueRange::include(double v) {
    if (!std::isfinite(v)) return;
    lo = std::min(lo, v);
    hi = std::max(hi, v);
    if (v > 0) minPositive = std::min(minPositive, v);
}

void ValueRange::include(const float* values, size_t n) {
    for (size_t i = 0; i < n; ++i) include(static_cast<double>(values[i]));
}

void ValueRange::include(const ValueRange& other) {
    lo = std::min(lo, other.lo);
    hi = std::max(hi, other.hi);
    minPositive = std::min(minPositive, other.minPositive);
}

ValueRange ValueRange::of(const float* values, size_t n) {
    ValueRange r;
    r.include(values, n);
    return r;
}

}  // namespace kvlens::viz
