// The panels of a kept-positions picture, as inspect's selection figures and
// the report's kept maps draw them: one layer of a selection as heads x
// prompt positions, either exact categories (dropped / kept / kept in the
// observation window or LagKV's tail) when every position gets a pixel column, or the share
// of the positions under a pixel that the head kept.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/Selection.h"
#include "viz/HeatmapFigure.h"

namespace kvlens::viz {

class KeptPositionsFigure {
public:
    // Row labels of a layer's panel: "KV 0", ... or "H 0", ... in query-head mode.
    static std::vector<std::string> headLabels(const Selection& s);
    // The y axis: "KV head" or "query head".
    static std::string headAxis(const Selection& s);
    // The legend of the categories (exact; the third named `endName`, what the positions at
    // or after addLayer's windowStart are) or the 0..1 share colour bar.
    static void setScale(HeatmapFigure& fig, bool exact, const std::string& endName = "observation window");
    // Layer `layer` of `s` as one panel named `name`; positions at or after `windowStart` are
    // the end the method keeps whole, its observation window or LagKV's tail
    // (PressParams::keptEndStart; the prompt length: none).
    static void addLayer(HeatmapFigure& fig, const Selection& s, int64_t layer, int64_t windowStart,
                         bool exact, const std::string& name);
    // The plot width, in pixels, of a `width` x `height` figure of `s`'s
    // panels with the categories' legend (exact) or the colour bar: exact
    // categories fit when the prompt is no longer than plotWidth(.., true).
    static int plotWidth(const Selection& s, int width, int height, bool exact);
    // The kept positions as "3 17 42 ..." for the CSV beside a figure.
    static std::string positionList(const std::vector<int32_t>& kept);
};

}  // namespace kvlens::viz
