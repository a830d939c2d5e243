// Finch (Corallo & Papotti, TACL 2024): the positions its own chunked prefill with eviction
// kept (FinchPrefill, run once per budget, window and --finch-chunk by
// Capture::keepScoresFor), the same for every KV head of a layer. Its cache is not a gather
// of the capture's KV: CompressedCache takes Finch's own keys and values, re-rotated to the
// positions 0 .. B-1, and decoding goes on from position B.
#pragma once

#include "engine/compress/presses/Press.h"

namespace kvlens {

class FinchPress : public Press {
protected:
    void fill(const Capture& capture, const PressParams& params, int64_t budget,
              Selection& selection) const override;
};

}  // namespace kvlens
