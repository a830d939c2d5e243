// H2O's accumulated attention: a replay of the prompt that sums, per layer and query head, the
// attention every key gets from every prompt query (Capture::h2oScores), for --method h2o
// (whatever its budget: its decode form reads them too) and any wrapper ranking by it.
#pragma once

#include "engine/compress/CaptureWork.h"

namespace kvlens {

class H2oReplayWork : public CaptureWork {
public:
    std::string pending(const Capture& capture, const PressParams& params) const override;
    void run(const Capture& capture, LlamaModel& model, const PressParams& params,
             const ProgressFn& progress) const override;
    const char* needer() const override { return "H2O's scores need"; }
};

}  // namespace kvlens
