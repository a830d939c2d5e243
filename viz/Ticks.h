// "Nice" axis ticks and their labels: steps of 1, 2 or 5 times a power of ten on linear
// axes, powers of ten (with 2 and 5 in between when the range is short) on log axes.
#pragma once

#include <string>
#include <vector>

namespace kvlens::viz {

struct Tick {
    double value;
    std::string label;
};

class Ticks {
public:
    // Ticks inside [lo, hi] at most maxTicks of them (at least 2 when the range allows);
    // integer: steps of at least 1 (positions, layers, heads).
    static std::vector<Tick> linear(double lo, double hi, int maxTicks, bool integer = false);
    // Ticks inside [lo, hi] (lo > 0) on a log axis.
    static std::vector<Tick> log(double lo, double hi, int maxTicks);
    // The nice step linear() uses: the smallest 1, 2 or 5 times a power of ten that puts
    // at most maxTicks ticks inside [lo, hi] (at least 1 when integer).
    static double niceStep(double lo, double hi, int maxTicks, bool integer = false);

    // v printed with the decimals `step` needs: 0.25 with step 0.05 -> "0.25", 3000 -> "3000";
    // very large or small values as "2e-06" -> "2e-6".
    static std::string format(double v, double step);
    // A label for a log-axis value: plain for 0.001 <= v < 1e6, else "1e-6", "2e6".
    static std::string formatLog(double v);
};

}  // namespace kvlens::viz
