// Finch's own cache: the context prefilled again in chunks, each evicted to its share by the
// question's attention (FinchPrefill), for --method finch (Capture::prefilledCache). The last
// Capture::kFinchCaches (budget, window, --finch-chunk) are kept.
#pragma once

#include <cstdint>

#include "engine/compress/CaptureWork.h"

namespace kvlens {

class FinchPrefillWork : public CaptureWork {
public:
    std::string pending(const Capture& capture, const PressParams& params) const override;
    void run(const Capture& capture, LlamaModel& model, const PressParams& params,
             const ProgressFn& progress) const override;
    const char* needer() const override { return "Finch's chunked prefill needs"; }

    // The prefix the capture keeps one cache's tensors under ("k", "v", "kept", "logits" after it).
    static std::string key(const PressParams& params, int64_t promptLength);
};

}  // namespace kvlens
