// H2O in prefill form: the attention each key received from all prompt queries (causal); each head keeps its top B-W prefix positions plus the window.
#pragma once

#include "engine/compress/presses/Press.h"

namespace kvlens {

class H2oPress : public Press {
public:
    std::vector<std::vector<float>> scores(const Capture& capture, const PressParams& params,
                                           int64_t layer) const override;
protected:
    void fill(const Capture& capture, const PressParams& params, int64_t budget,
              Selection& selection) const override;
};

}  // namespace kvlens
