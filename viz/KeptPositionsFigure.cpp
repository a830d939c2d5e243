// Kept-position panels: category codes or kept shares per head and position.
#include "viz/KeptPositionsFigure.h"

#include "viz/CategoricalPalette.h"
#include "viz/Colormap.h"
#include "viz/Scale.h"

namespace kvlens::viz {

std::vector<std::string> KeptPositionsFigure::headLabels(const Selection& s) {
    std::vector<std::string> labels;
    for (int64_t h = 0; h < s.headsPerLayer(); ++h)
        labels.push_back((s.gqa == GqaMode::KvHead ? "KV " : "H ") + std::to_string(h));
    return labels;
}

std::string KeptPositionsFigure::headAxis(const Selection& s) {
    return s.gqa == GqaMode::KvHead ? "KV head" : "query head";
}

void KeptPositionsFigure::setScale(HeatmapFigure& fig, bool exact, const std::string& endName) {
    if (exact) {
        fig.setLegend(CategoricalPalette::selection(endName));
    } else {
        fig.setColorBar(Colormap::viridis(), Scale::linear(0, 1), "share of positions kept", "");
    }
}

void KeptPositionsFigure::addLayer(HeatmapFigure& fig, const Selection& s, int64_t layer,
                                   int64_t windowStart, bool exact, const std::string& name) {
    const int64_t T = s.promptLength, heads = s.headsPerLayer();
    if (exact) {
        std::vector<uint8_t> codes(size_t(heads * T), 0);
        for (int64_t h = 0; h < heads; ++h)
            for (int32_t p : s.kept[size_t(layer)][size_t(h)])
                if (p >= 0 && p < T) codes[size_t(h * T + p)] = p >= windowStart ? 2 : 1;
        fig.addCategoryPanel(std::move(codes), heads, T, name, headLabels(s));
    } else {
        std::vector<float> kept(size_t(heads * T), 0.0f);
        for (int64_t h = 0; h < heads; ++h)
            for (int32_t p : s.kept[size_t(layer)][size_t(h)])
                if (p >= 0 && p < T) kept[size_t(h * T + p)] = 1.0f;
        fig.addMatrixPanel(std::move(kept), heads, T, Reduction::Mean, name, headLabels(s));
    }
}

int KeptPositionsFigure::plotWidth(const Selection& s, int width, int height, bool exact) {
    HeatmapFigure probe(width, height);
    setScale(probe, exact);
    probe.setYAxis(headAxis(s), "");
    const int64_t heads = s.headsPerLayer(), T = s.promptLength;
    // The probe's panel is of the kind its scale draws (a colour bar takes values).
    const std::string name = "L" + std::to_string(s.layers() - 1);
    if (exact) {
        probe.addCategoryPanel(std::vector<uint8_t>(size_t(heads * T), 0), heads, T, name, headLabels(s));
    } else {
        probe.addMatrixPanel(std::vector<float>(size_t(heads * T), 0.0f), heads, T, Reduction::Mean, name,
                             headLabels(s));
    }
    return probe.plotWidth();
}

std::string KeptPositionsFigure::positionList(const std::vector<int32_t>& kept) {
    std::string list;
    for (int32_t p : kept) list += (list.empty() ? "" : " ") + std::to_string(p);
    return list;
}

}  // namespace kvlens::viz
