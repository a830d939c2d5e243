// One 8-bit sRGB colour, the pixel type of viz::Image and the entry type of colormaps,
// with the helpers the rest of viz needs: hex strings for SVG and CIELAB lightness.
#pragma once

#include <cstdint>
#include <string>

namespace kvlens::viz {

struct Rgb {
    uint8_t r = 0, g = 0, b = 0;

    friend bool operator==(Rgb a, Rgb b) { return a.r == b.r && a.g == b.g && a.b == b.b; }
    friend bool operator!=(Rgb a, Rgb b) { return !(a == b); }

    // "#rrggbb", lower case.
    std::string hex() const;
    // CIELAB L* (D65) of this sRGB colour, 0 (black) .. 100 (white).
    double lightness() const;
    // Linear mix in sRGB bytes: a at alpha 0, b at alpha 1 (alpha clamped to [0,1]).
    static Rgb blend(Rgb a, Rgb b, double alpha);
};

}  // namespace kvlens::viz
