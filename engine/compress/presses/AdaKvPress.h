// AdaKV (Feng et al., 2024): each layer's pool of heads x P entries, P = B - W minus
// the scorer's sinks, is shared among its heads by a global top-k over per-head
// scores, after each head is guaranteed floor(alpha x P) of its own best; every head
// keeps the window (and the scorer's sinks) too. The scores are SnapKV's pooled votes,
// normalised per head to sum to 1 as the paper's attention weights do, or those of any
// --scorer (PressParams::scorerNames) as they are, as kvpress's AdaKVPress(press) ranks
// them. Heads end up with different lengths; the compressed cache stores them so.
#pragma once

#include "engine/compress/presses/Press.h"

namespace kvlens {

class AdaKvPress : public Press {
protected:
    void fill(const Capture& capture, const PressParams& params, int64_t budget,
              Selection& selection) const override;
};

}  // namespace kvlens
