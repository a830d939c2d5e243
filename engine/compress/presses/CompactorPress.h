// Compactor (Chari & Van Durme, 2025, "Calibrated Query-Agnostic KV Cache Compression
// with Approximate Leverage Scores"), as kvpress's CompactorPress: each KV head keeps its
// sinks and window and the best B - sinks - W between them by blend x leverage +
// non-causal attention (presses::compactorScores); blend defaults to the compression
// ratio 1 - B/T. kvpress's protected ends are --sinks 8 --window 4.
#pragma once

#include "engine/compress/presses/Press.h"

namespace kvlens {

class CompactorPress : public Press {
public:
    std::vector<std::vector<float>> scores(const Capture& capture, const PressParams& params,
                                           int64_t layer) const override;
protected:
    void fill(const Capture& capture, const PressParams& params, int64_t budget,
              Selection& selection) const override;
};

}  // namespace kvlens
