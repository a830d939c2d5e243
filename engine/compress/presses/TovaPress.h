// TOVA (Oren et al., 2024, "Transformers are Multi-State RNNs"), applied at the end of
// the prompt: every head of a layer keeps the same B positions, those the last prompt
// query attends to most, averaged over the layer's query heads (the paper's choice over
// per-head scores). The last position competes like any other, as in the paper; kvpress's
// TOVAPress always keeps it, and so does --convention kvpress. The paper evicts one token per step
// while decoding; that is compression during decoding, not a selection on the capture.
#pragma once

#include "engine/compress/presses/Press.h"

namespace kvlens {

class TovaPress : public Press {
public:
    std::vector<std::vector<float>> scores(const Capture& capture, const PressParams& params,
                                           int64_t layer) const override;
protected:
    void fill(const Capture& capture, const PressParams& params, int64_t budget,
              Selection& selection) const override;
};

}  // namespace kvlens
