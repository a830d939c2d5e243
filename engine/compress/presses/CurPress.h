// CUR (Sengupta et al., 2025, "Value-Guided KV Compression for LLMs via Approximated
// CUR Decomposition", CurDKV), as NVIDIA kvpress's CURPress runs it by default: a
// key-and-value score with no attention, each KV head keeping its sinks and the
// B - sinks positions of highest presses::curScores. kvpress's defaults: the product
// of the key and value leverage proxies (squared norms shared out within windows of
// 16 positions), no random projection. The paper approximates leverage scores with
// Gaussian random projections; its method section was not readable here, so that
// variant is not offered.
#pragma once

#include "engine/compress/presses/Press.h"

namespace kvlens {

class CurPress : public Press {
public:
    std::vector<std::vector<float>> scores(const Capture& capture, const PressParams& params,
                                           int64_t layer) const override;
protected:
    void fill(const Capture& capture, const PressParams& params, int64_t budget,
              Selection& selection) const override;
};

}  // namespace kvlens
