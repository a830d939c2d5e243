// Maps data values to [0,1] for a colormap (or to a position along an axis).
//
//   Scale::linear(lo, hi)         t = (v - lo) / (hi - lo)
//   Scale::log(lo, hi, floor)     t = (log10 max(v, floor') - log10 lo') / (log10 hi - log10 lo'),
//                                 lo' = max(lo, floor), floor' = lo' (values at or below the
//                                 floor, zeros included, map to 0)
//   Scale::symmetric(maxAbs)      linear over [-maxAbs, maxAbs]: 0 maps to 0.5, the centre of
//                                 a diverging map
// t is clamped to [0,1]; NaN stays NaN (Colormap shows it grey). A degenerate range is
// widened so that it still maps: linear lo == hi becomes [lo, lo + 1], log hi <= lo becomes
// [lo, 10 lo], symmetric 0 becomes [-1, 1].
//
// Images that are compared must share one scale: build it from all their ranges with
// Scale::shared (or symmetricShared for deltas) and pass the same Scale to every render.
#pragma once

#include <vector>

#include "viz/ValueRange.h"

namespace kvlens::viz {

class Scale {
public:
    enum class Kind { Linear, Log };

    static Scale linear(double lo, double hi);
    // floor > 0. Throws kvlens::Error on a non-positive floor or non-finite bounds.
    static Scale log(double lo, double hi, double floor);
    static Scale symmetric(double maxAbs);

    // One scale covering every range: linear over [min lo, max hi]; log over
    // [max(min minPositive, hi / 10^decades), max hi] with that lower end as its floor,
    // so that a few tiny values do not wash the picture out. Empty ranges are skipped;
    // with no values at all the result is linear [0, 1] (log [1e-6, 1]).
    static Scale shared(const std::vector<ValueRange>& ranges, Kind kind, double decades = 6);
    // Symmetric around 0, covering max |value| over every range.
    static Scale symmetricShared(const std::vector<ValueRange>& ranges);

    // Position of v in [0,1] (NaN for NaN).
    double operator()(double v) const;
    // The value at position t (the inverse, for colour-bar ticks).
    double valueAt(double t) const;

    Kind kind() const { return kind_; }
    double lo() const { return lo_; }
    double hi() const { return hi_; }

private:
    Scale(Kind kind, double lo, double hi) : kind_(kind), lo_(lo), hi_(hi) {}
    Kind kind_;
    double lo_, hi_;  // for Log: lo_ is also the floor
};

}  // namespace kvlens::viz
