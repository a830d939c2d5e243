#include "engine/model/Generator.h"

#include <algorithm>

#include <chrono>

#include "core/Error.h"

namespace kvlens {
namespace {
double secondsSince(std::chrono::steady_clock::time_point t0) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}
}  // namespace

GenerationResult Generator::generate(const std::vector<int32_t>& prompt,
                                     const GenerationOptions& options,
                                     const TokenCallback& onToken) {
    const int64_t context = model_.config().contextLength;
    if (prompt.empty()) throw Error("the prompt is empty");
    if (static_cast<int64_t>(prompt.size()) > context) {
        throw Error("the prompt is " + std::to_string(prompt.size()) +
                    " tokens, longer than the model's context of " + std::to_string(context) +
                    " tokens");
    }
    if (options.maxNewTokens < 0) throw Error("-n must be >= 0");
    Sampler sampler(options.sampling);
    GenerationResult result;
    const int64_t room = context - static_cast<int64_t>(prompt.size());
    KvCache cache = model_.makeCache(static_cast<int64_t>(prompt.size()) +
                                     std::min(options.maxNewTokens, room));

    auto t0 = std::chrono::steady_clock::now();
    at::Tensor logits = model_.forward(prompt, cache, false, options.prefillProgress);
    result.prefillSeconds = secondsSince(t0);
    result.promptLogits = logits;

    t0 = std::chrono::steady_clock::now();
    for (int64_t i = 0; i < options.maxNewTokens; ++i) {
        if (cache.length() >= context) {
            result.stoppedAtContext = true;
            break;
        }
        const int32_t token = sampler.sample(logits);
        if (!options.ignoreEos &&
            std::find(options.stopIds.begin(), options.stopIds.end(), token) != options.stopIds.end()) {
            result.stoppedAtEos = true;
            break;
        }
        result.tokens.push_back(token);
        if (onToken && !onToken(token)) break;
        if (i + 1 == options.maxNewTokens) break;  // the last token needs no forward pass
        logits = model_.forward({token}, cache);
        result.decodeSteps++;
    }
    result.decodeSeconds = secondsSince(t0);
    return result;
}

}  // namespace kvlens
