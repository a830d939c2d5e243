// The extent of a set of values: finite min and max, and the smallest positive value
// (what a log scale can show). Non-finite values are ignored.
#pragma once

#include <cstddef>
#include <limits>

namespace kvlens::viz {

struct ValueRange {
    double lo = std::numeric_limits<double>::infinity();
    double hi = -std::numeric_limits<double>::infinity();
    double minPositive = std::numeric_limits<double>::infinity();

    bool empty() const { return !(lo <= hi); }
    bool hasPositive() const { return minPositive < std::numeric_limits<double>::infinity(); }

    void include(double v);
    void include(const float* values, size_t n);
    void include(const ValueRange& other);

    static ValueRange of(const float* values, size_t n);
};

}  // namespace kvlens::viz
