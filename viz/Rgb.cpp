// Rgb helpers: hex formatting, CIELAB lightness, blending.
#include "viz/Rgb.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace kvlens::viz {

std::string Rgb::hex() const {
    char buf[8];
    std::snprintf(buf, sizeof buf, "#%02x%02x%02x", r, g, b);
    return buf;
}

double Rgb::lightness() const {
    auto linear = [](uint8_t v) {
        double c = v / 255.0;
        return c <= 0.04045 ? c / 12.92 : std::pow((c + 0.055) / 1.055, 2.4);
    };
    double y = 0.2126729 * linear(r) + 0.7151522 * linear(g) + 0.0721750 * linear(b);
    double f = y > 216.0 / 24389.0 ? std::cbrt(y) : (24389.0 / 27.0 * y + 16.0) / 116.0;
    return 116.0 * f - 16.0;
}

Rgb Rgb::blend(Rgb a, Rgb b, double alpha) {
    alpha = std::clamp(alpha, 0.0, 1.0);
    auto mix = [alpha](uint8_t x, uint8_t y) {
        return static_cast<uint8_t>(std::lround(x + (y - x) * alpha));
    };
    return {mix(a.r, b.r), mix(a.g, b.g), mix(a.b, b.b)};
}

}  // namespace kvlens::viz
