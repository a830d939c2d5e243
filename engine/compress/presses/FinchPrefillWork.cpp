#include "engine/compress/presses/FinchPrefillWork.h"

#include "core/Error.h"
#include "core/Methods.h"
#include "core/PressParams.h"
#include "engine/compress/FinchPrefill.h"
#include "engine/model/LlamaModel.h"

namespace kvlens {

std::string FinchPrefillWork::key(const PressParams& p, int64_t promptLength) {
    return "finch:" + std::to_string(p.resolveBudget(promptLength)) + ":" + std::to_string(p.window) + ":" +
           std::to_string(p.finchChunk) + ":";
}

std::string FinchPrefillWork::pending(const Capture& capture, const PressParams& params) const {
    if (!methods::effectiveNeeds(params).has(Need::SecondPrefill)) return "";
    if (params.resolveBudget(capture.promptLength()) >= capture.promptLength()) return "";  // ranks nothing
    if (capture.prefilledCache(params)) return "";
    return "Finch's chunked prefill (chunks of " + std::to_string(params.finchChunk) + ")";
}

void FinchPrefillWork::run(const Capture& capture, LlamaModel& model, const PressParams& params,
                           const ProgressFn& progress) const {
    const int64_t T = capture.promptLength();
    PrefilledCache own =
        FinchPrefill::run(model, capture.prompt(), params.resolveBudget(T), params.window, params.finchChunk, progress);
    for (int64_t l = 0; l < capture.layers(); ++l) {
        requireFinite(own.keys[l], l, "KV head", "keys", "Finch's chunked prefill produced a");
        requireFinite(own.values[l], l, "KV head", "values", "Finch's chunked prefill produced a");
    }
    if (!at::isfinite(own.lastLogits).all().item<bool>())
        throw Error("Finch's chunked prefill produced a NaN or an Inf in the logits after the prompt");
    const std::string prefix = key(params, T);
    std::vector<std::pair<std::pair<std::string, int64_t>, at::Tensor>> entries = {{{prefix + "logits", 0}, own.lastLogits}};
    for (int64_t l = 0; l < capture.layers(); ++l) {
        entries.push_back({{prefix + "kept", l}, own.kept[l]});
        entries.push_back({{prefix + "v", l}, own.values[l]});
        entries.push_back({{prefix + "k", l}, own.keys[l]});
    }
    storeRecent(capture, entries, "finch", prefix, Capture::kFinchCaches);
}

}  // namespace kvlens
