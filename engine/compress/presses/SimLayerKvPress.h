// SimLayerKV (Zhang et al., 2024, "SimLayerKV: A Simple Framework for Layer-Level KV
// Cache Reduction"): a layer is lazy when the last prompt query's attention (averaged
// over the layer's query heads) gives the positions a lazy layer keeps, the first
// `sinks` and the B - sinks most recent, more than the --lazy share; a lazy layer
// keeps only those B positions, any other layer keeps the whole prompt. The
// recommended thresholds: Llama 3 0.9, Llama 2 0.65, Mistral 0.8, Qwen 0.85. kvpress's
// SimLayerKVPress measures the share over the first sinks and the last n_recent
// positions but then keeps one recent position fewer; here the share is that of what
// is kept.
#pragma once

#include <vector>

#include "engine/compress/presses/Press.h"

namespace kvlens {

class SimLayerKvPress : public Press {
public:
    // Whether each layer is lazy for a budget of `budget` entries (below the prompt's length):
    // the last prompt query's attention on the first min(sinks, budget) positions and the
    // rest of the budget's most recent above --lazy. Its decode form keeps the lazy layers at
    // the budget (DecodeCompressor).
    static std::vector<bool> lazyLayers(const Capture& capture, const PressParams& params, int64_t budget);

public:
    std::vector<std::vector<float>> scores(const Capture& capture, const PressParams& params,
                                           int64_t layer) const override;
protected:
    void fill(const Capture& capture, const PressParams& params, int64_t budget,
              Selection& selection) const override;
};

}  // namespace kvlens
