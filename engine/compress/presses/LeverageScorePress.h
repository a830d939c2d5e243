// LeverageScore (Chari & Van Durme, 2025, Compactor's geometric half; kvpress's
// LeverageScorePress): each KV head keeps the B positions whose pre-RoPE keys have the
// highest approximate leverage (presses::leverageScores). Query-agnostic: no attention,
// no window.
#pragma once

#include "engine/compress/presses/Press.h"

namespace kvlens {

class LeverageScorePress : public Press {
public:
    std::vector<std::vector<float>> scores(const Capture& capture, const PressParams& params,
                                           int64_t layer) const override;
protected:
    void fill(const Capture& capture, const PressParams& params, int64_t budget,
              Selection& selection) const override;
};

}  // namespace kvlens
