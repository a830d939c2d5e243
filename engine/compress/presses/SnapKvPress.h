// SnapKV: the last W queries vote (summed causal softmax), votes pooled along positions; each head keeps its top B-W prefix positions plus the window.
#pragma once

#include "engine/compress/presses/Press.h"

namespace kvlens {

class SnapKvPress : public Press {
public:
    std::vector<std::vector<float>> scores(const Capture& capture, const PressParams& params,
                                           int64_t layer) const override;
protected:
    void fill(const Capture& capture, const PressParams& params, int64_t budget,
              Selection& selection) const override;
};

}  // namespace kvlens
