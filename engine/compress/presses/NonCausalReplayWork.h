// The non-causal chunked attention (Compactor, --method noncausal, or a wrapper's scorer): a
// replay of the prompt per (chunk, ranked span) the params ask for (Capture::nonCausalAttention).
#pragma once

#include <cstdint>

#include "engine/compress/CaptureWork.h"

namespace kvlens {

class NonCausalReplayWork : public CaptureWork {
public:
    std::string pending(const Capture& capture, const PressParams& params) const override;
    void run(const Capture& capture, LlamaModel& model, const PressParams& params,
             const ProgressFn& progress) const override;
    const char* needer() const override { return "the non-causal attention needs"; }

    // The name the capture keeps one (--attn-chunk, span) under.
    static std::string key(int64_t chunk, int64_t lo, int64_t hi);
};

}  // namespace kvlens
