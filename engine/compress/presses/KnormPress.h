// KNorm (Devoto et al., 2024, "A Simple and Effective L2 Norm-Based Strategy for KV
// Cache Compression"): each KV head keeps the B positions whose keys have the lowest
// L2 norm. No attention and no observation window: a key-only score.
#pragma once

#include "engine/compress/presses/Press.h"

namespace kvlens {

class KnormPress : public Press {
public:
    std::vector<std::vector<float>> scores(const Capture& capture, const PressParams& params,
                                           int64_t layer) const override;
protected:
    void fill(const Capture& capture, const PressParams& params, int64_t budget,
              Selection& selection) const override;
};

}  // namespace kvlens
