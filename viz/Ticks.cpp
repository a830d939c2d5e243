// Nice tick generation.
#include "viz/Ticks.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>

namespace kvlens::viz {

namespace {

std::string compactExponent(double v, int significant) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.*e", significant - 1, v);
    std::string s = buf;  // e.g. "2.0e-06"
    size_t e = s.find('e');
    std::string mant = s.substr(0, e), exp = s.substr(e + 1);
    if (mant.find('.') != std::string::npos) {
        while (mant.back() == '0') mant.pop_back();
        if (mant.back() == '.') mant.pop_back();
    }
    bool neg = exp[0] == '-';
    size_t digits = exp.find_first_not_of("+-0");
    exp = digits == std::string::npos ? "0" : exp.substr(digits);
    return mant + "e" + (neg ? "-" : "") + exp;
}

}  // namespace

double Ticks::niceStep(double lo, double hi, int maxTicks, bool integer) {
    maxTicks = std::max(maxTicks, 2);
    if (hi < lo) std::swap(lo, hi);
    double span = hi - lo;
    if (!(span > 0) || !std::isfinite(span)) return 1.0;
    // The smallest 1-2-5 step that puts at most maxTicks ticks inside [lo, hi].
    double mag = std::pow(10.0, std::floor(std::log10(span / maxTicks)));
    for (int k = 0; k < 40; ++k) {
        double step = std::array<double, 3>{1.0, 2.0, 5.0}[k % 3] * mag * std::pow(10.0, k / 3);
        if (integer && step < 1) continue;
        double eps = step * 1e-9;
        double count = std::floor((hi + eps) / step) - std::ceil((lo - eps) / step) + 1;
        if (count <= maxTicks) return step;
    }
    return span;
}

std::vector<Tick> Ticks::linear(double lo, double hi, int maxTicks, bool integer) {
    std::vector<Tick> out;
    if (!std::isfinite(lo) || !std::isfinite(hi)) return out;
    if (hi < lo) std::swap(lo, hi);
    double step = niceStep(lo, hi, maxTicks, integer);
    double eps = step * 1e-9;
    for (double k = std::ceil((lo - eps) / step); k * step <= hi + eps; k += 1) {
        double v = k * step;
        if (std::fabs(v) < eps) v = 0;
        out.push_back({v, format(v, step)});
        if (out.size() > 1000) break;
    }
    return out;
}

std::vector<Tick> Ticks::log(double lo, double hi, int maxTicks) {
    std::vector<Tick> out;
    if (!(lo > 0) || !(hi > 0) || !std::isfinite(lo) || !std::isfinite(hi)) return out;
    if (hi < lo) std::swap(lo, hi);
    maxTicks = std::max(maxTicks, 2);
    int e0 = static_cast<int>(std::floor(std::log10(lo) + 1e-9));
    int e1 = static_cast<int>(std::ceil(std::log10(hi) - 1e-9));
    auto inside = [&](double v) { return v >= lo * (1 - 1e-9) && v <= hi * (1 + 1e-9); };
    int decades = e1 - e0;
    int every = std::max(1, (decades + maxTicks - 1) / maxTicks);
    for (int e = e0; e <= e1; ++e) {
        if (e % every != 0) continue;
        double v = std::pow(10.0, e);
        if (inside(v)) out.push_back({v, formatLog(v)});
    }
    if (out.size() < 4) {
        // A short range: add 2 and 5 times each power of ten, while they fit.
        std::vector<Tick> dense;
        for (int e = e0; e <= e1; ++e)
            for (double m : {1.0, 2.0, 5.0}) {
                double v = m * std::pow(10.0, e);
                if (inside(v)) dense.push_back({v, formatLog(v)});
            }
        if (static_cast<int>(dense.size()) <= maxTicks || out.size() < 2) out = dense;
    }
    if (out.size() < 2) {
        out.clear();
        for (auto& t : linear(lo, hi, maxTicks)) out.push_back(t);
    }
    return out;
}

std::string Ticks::format(double v, double step) {
    if (v == 0) return "0";
    double a = std::fabs(v);
    if (a >= 1e6 || a < 1e-4) return compactExponent(v, 3);
    int decimals = step >= 1 ? 0 : static_cast<int>(std::ceil(-std::log10(step) - 1e-9));
    // A step like 0.25 needs one more digit than its magnitude says.
    double scaled = step * std::pow(10.0, decimals);
    if (std::fabs(scaled - std::round(scaled)) > 1e-6) ++decimals;
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.*f", std::min(decimals, 12), v);
    return buf;
}

std::string Ticks::formatLog(double v) {
    if (v >= 1e-3 && v < 1e6) {
        char buf[32];
        std::snprintf(buf, sizeof buf, v >= 1 ? "%.0f" : "%.3g", v);
        return buf;
    }
    return compactExponent(v, 2);
}

}  // namespace kvlens::viz
