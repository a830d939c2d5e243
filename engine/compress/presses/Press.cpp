#include "engine/compress/presses/Press.h"

#include <numeric>

#include "core/Error.h"
#include "engine/compress/presses/AdaKvPress.h"
#include "engine/compress/presses/CakePress.h"
#include "engine/compress/presses/CompactorPress.h"
#include "engine/compress/presses/CriticalAdaKvPress.h"
#include "engine/compress/presses/CriticalKvPress.h"
#include "engine/compress/presses/ChunkKvKvpressPress.h"
#include "engine/compress/presses/ChunkKvPress.h"
#include "engine/compress/presses/CurPress.h"
#include "engine/compress/presses/ExpectedAttentionPress.h"
#include "engine/compress/presses/FullKvPress.h"
#include "engine/compress/presses/FinchKvpressPress.h"
#include "engine/compress/presses/FinchPress.h"
#include "engine/compress/presses/H2oPress.h"
#include "engine/compress/presses/KeyDiffPress.h"
#include "engine/compress/presses/KnormPress.h"
#include "engine/compress/presses/KvzipPress.h"
#include "engine/compress/presses/LagKvPress.h"
#include "engine/compress/presses/LeverageScorePress.h"
#include "engine/compress/presses/NonCausalAttentionPress.h"
#include "engine/compress/presses/PyramidKvPress.h"
#include "engine/compress/presses/PerLayerPress.h"
#include "engine/compress/presses/RandomPress.h"
#include "engine/compress/presses/SimLayerKvPress.h"
#include "engine/compress/presses/SnapKvPress.h"
#include "engine/compress/presses/StreamingLlmPress.h"
#include "engine/compress/presses/ThinkChannels.h"
#include "engine/compress/presses/TovaPress.h"

namespace kvlens {

std::unique_ptr<Press> Press::create(const std::string& method) {
    if (method == "full") return std::make_unique<FullKvPress>();
    if (method == "snapkv") return std::make_unique<SnapKvPress>();
    if (method == "pyramidkv") return std::make_unique<PyramidKvPress>();
    if (method == "streamingllm") return std::make_unique<StreamingLlmPress>();
    if (method == "h2o") return std::make_unique<H2oPress>();
    if (method == "adakv") return std::make_unique<AdaKvPress>();
    if (method == "random") return std::make_unique<RandomPress>();
    if (method == "tova") return std::make_unique<TovaPress>();
    if (method == "knorm") return std::make_unique<KnormPress>();
    if (method == "keydiff") return std::make_unique<KeyDiffPress>();
    if (method == "lagkv") return std::make_unique<LagKvPress>();
    if (method == "chunkkv") return std::make_unique<ChunkKvPress>();
    if (method == "expected") return std::make_unique<ExpectedAttentionPress>();
    if (method == "cur") return std::make_unique<CurPress>();
    if (method == "cake") return std::make_unique<CakePress>();
    if (method == "simlayerkv") return std::make_unique<SimLayerKvPress>();
    if (method == "perlayer") return std::make_unique<PerLayerPress>();
    if (method == "leverage") return std::make_unique<LeverageScorePress>();
    if (method == "noncausal") return std::make_unique<NonCausalAttentionPress>();
    if (method == "compactor") return std::make_unique<CompactorPress>();
    if (method == "criticalkv") return std::make_unique<CriticalKvPress>();
    if (method == "criticaladakv") return std::make_unique<CriticalAdaKvPress>();
    if (method == "kvzip") return std::make_unique<KvzipPress>();
    if (method == "finch") return std::make_unique<FinchPress>();
    if (method == "finch-kvpress") return std::make_unique<FinchKvpressPress>();
    if (method == "chunkkv-kvpress") return std::make_unique<ChunkKvKvpressPress>();
    PressParams probe;
    probe.method = method;
    probe.validate(2, 1);  // throws the one-line "not one of" message
    throw Error("--method '" + method + "' is not known");
}

Selection Press::select(const Capture& capture, const PressParams& params) const {
    const int64_t T = capture.promptLength();
    params.validate(T, capture.windowCapacity());
    if (params.method == "h2o" && !capture.hasH2oScores()) {
        throw Error(capture.prompt().empty()
                        ? "--method h2o needs the attention of every prompt query, which only a model "
                          "prefill records (not tensors given with --inputs)"
                        : "--method h2o: the capture's accumulated attention has not been computed "
                          "(Capture::keepScoresFor before selecting)");
    }
    Selection s;
    s.params = params;
    s.promptLength = T;
    s.queryHeads = capture.queryHeads();
    s.kvHeads = capture.kvHeads();
    // Query-head selections exist for the voting methods (as in the original
    // SnapKV code); the others have one selection per KV head.
    // (kvpress's ChunkKV keeps one set of positions for all the layer's heads: per KV head.)
    const bool voting = (params.method == "snapkv" || params.method == "pyramidkv" ||
                         params.scorerInEffect() == "snapkv") &&
                        params.method != "chunkkv-kvpress";
    s.gqa = voting ? params.gqa : GqaMode::KvHead;
    s.params.gqa = s.gqa;
    const int64_t L = capture.layers(), heads = s.headsPerLayer();
    s.kept.assign(L, std::vector<std::vector<int32_t>>(heads));
    const int64_t budget = params.method == "full" ? T : params.resolveBudget(T);
    if (budget >= T) {
        std::vector<int32_t> all(T);
        std::iota(all.begin(), all.end(), 0);
        for (auto& layer : s.kept)
            for (auto& head : layer) head = all;
        s.layerBudgets.assign(L, T);
    } else {
        s.layerBudgets.assign(L, budget);
        fill(capture, s.params, budget, s);  // with the GQA mode the selection really has
    }
    // ThinK prunes key channels of what the method kept (kvpress's ComposedPress order).
    if (params.think > 0.0) s.prunedChannels = presses::thinkPrunedChannels(capture, s);
    return s;
}

}  // namespace kvlens
