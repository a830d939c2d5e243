// AdaKV on SnapKV scores: each layer's pool of heads x (B - W) prefix entries is
// shared among its heads by a global top-k over per-head normalised pooled
// scores, after each head is guaranteed floor(alpha x (B - W)) of its own best.
// Heads end up with different lengths; the compressed cache stores them so.
#pragma once

#include "engine/compress/presses/Press.h"

namespace kvlens {

class AdaKvPress : public Press {
protected:
    void fill(const Capture& capture, const PressParams& params, int64_t budget,
              Selection& selection) const override;
};

}  // namespace kvlens
