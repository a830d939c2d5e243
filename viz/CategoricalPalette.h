// Named colours for categories: series in charts and categorical heatmaps (e.g. a
// selection mask of "not kept / kept / observation window").
//
// okabeIto() is the Okabe-Ito palette (distinct under the common colour-vision
// deficiencies), ordered for series on white: blue, vermillion, bluish green, reddish
// purple, orange, sky blue, black, yellow.
#pragma once

#include <string>
#include <vector>

#include "viz/Rgb.h"

namespace kvlens::viz {

class CategoricalPalette {
public:
    struct Entry {
        std::string name;
        Rgb color;
    };

    CategoricalPalette() = default;
    explicit CategoricalPalette(std::vector<Entry> entries) : entries_(std::move(entries)) {}

    // The 8 Okabe-Ito colours, unnamed; color(i) cycles for i >= 8.
    static const CategoricalPalette& okabeIto();
    // Codes 0 "not kept" (light grey), 1 "kept" (blue), 2 `endName` (orange): the prompt's
    // last positions the method keeps whole, its observation window or LagKV's tail.
    static CategoricalPalette selection(const std::string& endName = "observation window");

    size_t size() const { return entries_.size(); }
    const Entry& entry(size_t i) const { return entries_.at(i); }
    const std::vector<Entry>& entries() const { return entries_; }
    // Colour of code i; cycles through the entries when i >= size(). Needs size() > 0.
    Rgb color(size_t i) const { return entries_[i % entries_.size()].color; }

private:
    std::vector<Entry> entries_;
};

}  // namespace kvlens::viz
