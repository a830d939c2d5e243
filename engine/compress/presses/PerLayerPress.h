// Per-layer budgets over any scorer, as kvpress's PerLayerCompressionPress(press, ratios):
// the layers share L x (B - W - sinks) entries in proportion to --layer-weights (equal
// shares when none are given: then it is the scorer at the same budget everywhere),
// truncated, a layer's share above what it can hold given to the others and the
// rounding's remainder one by one from the first layer (CAKE's adjustment,
// presses::cakeLayerBudgets); each layer keeps per head its window, the scorer's sinks
// and its best by the scorer (SnapKV's pooled votes by default, --scorer otherwise).
// kvpress takes a compression ratio per layer; weights proportional to the kept shares
// (1 - ratio) give the same split of the same total.
#pragma once

#include "engine/compress/presses/Press.h"

namespace kvlens {

class PerLayerPress : public Press {
public:
    std::vector<std::vector<float>> scores(const Capture& capture, const PressParams& params,
                                           int64_t layer) const override;
protected:
    void fill(const Capture& capture, const PressParams& params, int64_t budget,
              Selection& selection) const override;
};

}  // namespace kvlens
