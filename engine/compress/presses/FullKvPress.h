// Keeps every prompt position: the baseline every method is measured against.
#pragma once

#include "engine/compress/presses/Press.h"

namespace kvlens {

class FullKvPress : public Press {
protected:
    void fill(const Capture& capture, const PressParams& params, int64_t budget,
              Selection& selection) const override;
};

}  // namespace kvlens
