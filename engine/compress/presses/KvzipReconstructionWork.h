// KVzip's scores: the model reconstructing the prompt from its own cache (ContextReconstruction),
// per layer each KV head's highest attention, [KV, T] fp32 (Capture::reconstructionScores), for
// kvzip and any wrapper ranking by it. The last Capture::kReconstructions are kept.
#pragma once

#include <cstdint>

#include "engine/compress/CaptureWork.h"

namespace kvlens {

class KvzipReconstructionWork : public CaptureWork {
public:
    std::string pending(const Capture& capture, const PressParams& params) const override;
    void run(const Capture& capture, LlamaModel& model, const PressParams& params,
             const ProgressFn& progress) const override;
    const char* needer() const override { return "KVzip's reconstruction needs"; }

    // The name the capture keeps one (--repeat-chunk, --sinks) under.
    static std::string key(int64_t chunk, int64_t sinks);
};

}  // namespace kvlens
