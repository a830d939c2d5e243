// StreamingLLM: the first sink tokens plus the most recent B - sinks.
#pragma once

#include "engine/compress/presses/Press.h"

namespace kvlens {

class StreamingLlmPress : public Press {
protected:
    void fill(const Capture& capture, const PressParams& params, int64_t budget,
              Selection& selection) const override;
};

}  // namespace kvlens
