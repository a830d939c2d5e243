#include "engine/compress/presses/KvzipReconstructionWork.h"

#include "core/Error.h"
#include "core/PressParams.h"
#include "engine/compress/ContextReconstruction.h"
#include "engine/model/LlamaModel.h"

namespace kvlens {

std::string KvzipReconstructionWork::key(int64_t chunk, int64_t sinks) {
    return "kvzip:" + std::to_string(chunk) + ":" + std::to_string(sinks);
}

std::string KvzipReconstructionWork::pending(const Capture& capture, const PressParams& params) const {
    if (!params.ranksBy("kvzip")) return "";
    if (params.resolveBudget(capture.promptLength()) >= capture.promptLength()) return "";  // ranks nothing
    if (capture.reconstructionScores(0, params.repeatChunk, params.sinks).defined()) return "";
    return "KVzip's reconstruction of the prompt (chunks of " + std::to_string(params.repeatChunk) + ")";
}

void KvzipReconstructionWork::run(const Capture& capture, LlamaModel& model, const PressParams& params,
                                  const ProgressFn& progress) const {
    if (capture.repeatPrompt().empty())
        throw Error("KVzip needs its repeat prompt in the model's tokens, which this capture was not given");
    std::vector<at::Tensor> all = ContextReconstruction::scores(model, cache(capture), capture.prompt(),
                                                                capture.repeatPrompt(), params.sinks,
                                                                params.repeatChunk, progress);
    const std::string name = key(params.repeatChunk, params.sinks);
    std::vector<std::pair<std::pair<std::string, int64_t>, at::Tensor>> entries;
    for (int64_t l = 0; l < capture.layers(); ++l) {
        all[l] = all[l].contiguous();
        requireFinite(all[l], l, "KV head", "KVzip's reconstruction scores", "the reconstruction produced");
        entries.push_back({{name, l}, all[l]});
    }
    storeRecent(capture, entries, "kvzip", name, Capture::kReconstructions);
}

}  // namespace kvlens
