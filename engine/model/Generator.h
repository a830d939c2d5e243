// Prefill then token-by-token decode on the full cache, streaming each token
// to a callback; stops at any end-of-generation id (unless ignored), after n
// tokens, or at the context.
#pragma once

#include <functional>
#include <vector>

#include "engine/model/LlamaModel.h"
#include "engine/model/Sampler.h"

namespace kvlens {

struct GenerationOptions {
    int64_t maxNewTokens = 64;
    bool ignoreEos = false;
    std::vector<int32_t> stopIds;  // the tokenizer's endOfGeneration(): EOS, EOT, EOM, ...
    SamplingParams sampling;
    ProgressFn prefillProgress;  // per layer of the prefill
};

struct GenerationResult {
    std::vector<int32_t> tokens;  // generated, prompt excluded
    at::Tensor promptLogits;      // fp32 [vocab]: next-token logits after the prompt
    double prefillSeconds = 0.0;
    double decodeSeconds = 0.0;   // all decode steps together
    int64_t decodeSteps = 0;      // forward passes of one token
    bool stoppedAtEos = false;
    bool stoppedAtContext = false;
};

// Called with each new token; return false to stop.
using TokenCallback = std::function<bool(int32_t token)>;

class Generator {
public:
    explicit Generator(LlamaModel& model) : model_(model) {}

    // Throws kvlens::Error for an empty prompt or one longer than the context.
    GenerationResult generate(const std::vector<int32_t>& prompt, const GenerationOptions& options,
                              const TokenCallback& onToken = {});

private:
    LlamaModel& model_;
};

}  // namespace kvlens
