// Random: a seeded uniform choice of B-W prefix positions per head, plus the window — the floor every method must beat.
#pragma once

#include "engine/compress/presses/Press.h"

namespace kvlens {

class RandomPress : public Press {
protected:
    void fill(const Capture& capture, const PressParams& params, int64_t budget,
              Selection& selection) const override;
};

}  // namespace kvlens
