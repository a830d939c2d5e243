#include "engine/compress/presses/PerLayerPress.h"

#include "core/Error.h"
#include "engine/compress/presses/PressScores.h"

namespace kvlens {

void PerLayerPress::fill(const Capture& capture, const PressParams& p, int64_t budget, Selection& s) const {
    const int64_t L = capture.layers();
    if (!p.layerWeights.empty() && int64_t(p.layerWeights.size()) != L) {
        throw Error("--layer-weights has " + std::to_string(p.layerWeights.size()) +
                    " weights; the model has " + std::to_string(L) + " layers, one weight each");
    }
    presses::keepLayerShares(capture, p, p.layerWeights.empty() ? std::vector<double>(L, 1.0) : p.layerWeights,
                             budget, s);
}

std::vector<std::vector<float>> PerLayerPress::scores(const Capture& capture, const PressParams& p,
                                                      int64_t layer) const {
    return presses::scorerScoresOrNone(capture, layer, p);
}

}  // namespace kvlens
