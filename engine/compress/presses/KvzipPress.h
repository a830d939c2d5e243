// KVzip (Kim et al., 2025, "KVzip: Query-Agnostic KV Cache Compression with Context
// Reconstruction"), as kvpress's KVzipPress by default (layerwise=False): every head keeps
// its first --sinks positions, and the rest of the L x heads x B entries go to the highest
// reconstruction scores (presses::reconstructionScores) over all layers and heads at once, so
// layers and heads end up with different lengths; ties to the lower layer, head, position.
// A per-layer form near kvpress's layerwise=True (each layer keeps heads x B) is --method adakv
// --scorer kvzip --alpha 0, which keeps the wrapper's window too. The scores come from a
// second run of the prompt (Capture::keepScoresFor). Selecting holds 4 bytes per ranked entry.
#pragma once

#include "engine/compress/presses/Press.h"

namespace kvlens {

class KvzipPress : public Press {
public:
    std::vector<std::vector<float>> scores(const Capture& capture, const PressParams& params,
                                           int64_t layer) const override;
protected:
    void fill(const Capture& capture, const PressParams& params, int64_t budget,
              Selection& selection) const override;
};

}  // namespace kvlens
