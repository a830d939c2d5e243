// Linear, log and symmetric value scales.
#include "viz/Scale.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "core/Error.h"

namespace kvlens::viz {

namespace {

void requireFinite(double v, const char* what) {
    if (!std::isfinite(v)) throw Error(std::string("scale: ") + what + " is not finite");
}

}  // namespace

Scale Scale::linear(double lo, double hi) {
    requireFinite(lo, "lower bound");
    requireFinite(hi, "upper bound");
    if (hi < lo) std::swap(lo, hi);
    if (hi == lo) hi = lo + 1.0;
    return Scale(Kind::Linear, lo, hi);
}

Scale Scale::log(double lo, double hi, double floor) {
    requireFinite(hi, "upper bound");
    requireFinite(floor, "log floor");
    if (!(floor > 0)) throw Error("scale: log floor must be > 0, got " + std::to_string(floor));
    if (!std::isfinite(lo)) lo = floor;
    lo = std::max(lo, floor);
    if (!(hi > lo)) hi = lo * 10.0;
    return Scale(Kind::Log, lo, hi);
}

Scale Scale::symmetric(double maxAbs) {
    requireFinite(maxAbs, "symmetric bound");
    maxAbs = std::fabs(maxAbs);
    if (maxAbs == 0) maxAbs = 1.0;
    return Scale(Kind::Linear, -maxAbs, maxAbs);
}

Scale Scale::shared(const std::vector<ValueRange>& ranges, Kind kind, double decades) {
    ValueRange all;
    for (const auto& r : ranges) all.include(r);
    if (kind == Kind::Linear) {
        if (all.empty()) return linear(0.0, 1.0);
        return linear(all.lo, all.hi);
    }
    if (!all.hasPositive()) return log(1e-6, 1.0, 1e-6);
    double lo = std::max(all.minPositive, all.hi / std::pow(10.0, decades));
    return log(lo, all.hi, lo);
}

Scale Scale::symmetricShared(const std::vector<ValueRange>& ranges) {
    double m = 0;
    for (const auto& r : ranges) {
        if (r.empty()) continue;
        m = std::max({m, std::fabs(r.lo), std::fabs(r.hi)});
    }
    return symmetric(m);
}

double Scale::operator()(double v) const {
    if (std::isnan(v)) return v;
    double t;
    if (kind_ == Kind::Linear) {
        t = (v - lo_) / (hi_ - lo_);
    } else {
        if (v <= lo_) return 0.0;
        t = (std::log10(v) - std::log10(lo_)) / (std::log10(hi_) - std::log10(lo_));
    }
    return std::clamp(t, 0.0, 1.0);
}

double Scale::valueAt(double t) const {
    if (kind_ == Kind::Linear) return lo_ + t * (hi_ - lo_);
    return std::pow(10.0, std::log10(lo_) + t * (std::log10(hi_) - std::log10(lo_)));
}

}  // namespace kvlens::viz
