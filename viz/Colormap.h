// Perceptually uniform, colour-blind-safe colormaps: 256-entry sRGB lookup tables.
//
//   viridis()   matplotlib's viridis (sequential, dark blue -> yellow)
//   magma()     matplotlib's magma (sequential, black -> light yellow); use for attention
//   diverging() blue -> near-white -> orange-red, symmetric CIELAB lightness; use for
//               A-B deltas with Scale::symmetric so that 0 sits on the white centre
//
// The tables come from viz/tools/gen_colormaps.py (see there for how they were made).
#pragma once

#include <array>
#include <string>

#include "viz/Rgb.h"

namespace kvlens::viz {

class Colormap {
public:
    static const Colormap& viridis();
    static const Colormap& magma();
    static const Colormap& diverging();
    // One of the above by name ("viridis", "magma", "diverging"); throws kvlens::Error
    // naming the unknown map otherwise.
    static const Colormap& byName(const std::string& name);

    // The colour at t in [0,1] (clamped): entry floor(t * 256), capped at 255, as
    // matplotlib indexes its tables. NaN maps to nanColor().
    Rgb map(double t) const;
    // A neutral mid grey that none of the maps contains, for missing values.
    static Rgb nanColor() { return Rgb{128, 128, 128}; }

    const std::string& name() const { return name_; }
    const std::array<Rgb, 256>& table() const { return *table_; }

private:
    Colormap(std::string name, const std::array<Rgb, 256>* table)
        : name_(std::move(name)), table_(table) {}
    std::string name_;
    const std::array<Rgb, 256>* table_;
};

}  // namespace kvlens::viz
