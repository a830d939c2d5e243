// kvpress's FinchPress (the variant people compare against in kvpress; `finch` is the paper's
// chunked prefill): on the capture's one prefill, the question (the prompt's last W tokens;
// kvpress finds it after a delimiter token) votes as in SnapKV without pooling, each window
// row i at position T-W+i weighted by T-W+i (kvpress's "non-zero count"), averaged over the
// rows and over each KV head's query heads; each KV head keeps its B-W best prefix positions
// (ties to the lower) and the question. The gathered keys are then re-rotated to positions
// 0 .. B-1 (CompressedCache; kvpress's KeyRerotationPress) and decoding goes on at B, as
// kvpress's pipeline sets the answer's positions from the re-rotated cache's length.
#pragma once

#include "engine/compress/presses/Press.h"

namespace kvlens {

class FinchKvpressPress : public Press {
public:
    std::vector<std::vector<float>> scores(const Capture& capture, const PressParams& params,
                                           int64_t layer) const override;
protected:
    void fill(const Capture& capture, const PressParams& params, int64_t budget,
              Selection& selection) const override;
};

}  // namespace kvlens
