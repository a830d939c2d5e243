#include "engine/compress/presses/Press.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "core/Error.h"
#include "engine/model/ModelConfig.h"
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
    // One case a method of the table (core/Methods): -Wswitch names a missing one.
    switch (methods::named(method).id) {
        case MethodId::Full: return std::make_unique<FullKvPress>();
        case MethodId::SnapKv: return std::make_unique<SnapKvPress>();
        case MethodId::PyramidKv: return std::make_unique<PyramidKvPress>();
        case MethodId::StreamingLlm: return std::make_unique<StreamingLlmPress>();
        case MethodId::H2o: return std::make_unique<H2oPress>();
        case MethodId::AdaKv: return std::make_unique<AdaKvPress>();
        case MethodId::Random: return std::make_unique<RandomPress>();
        case MethodId::Tova: return std::make_unique<TovaPress>();
        case MethodId::Knorm: return std::make_unique<KnormPress>();
        case MethodId::KeyDiff: return std::make_unique<KeyDiffPress>();
        case MethodId::LagKv: return std::make_unique<LagKvPress>();
        case MethodId::ChunkKv: return std::make_unique<ChunkKvPress>();
        case MethodId::Expected: return std::make_unique<ExpectedAttentionPress>();
        case MethodId::Cur: return std::make_unique<CurPress>();
        case MethodId::Cake: return std::make_unique<CakePress>();
        case MethodId::SimLayerKv: return std::make_unique<SimLayerKvPress>();
        case MethodId::PerLayer: return std::make_unique<PerLayerPress>();
        case MethodId::Leverage: return std::make_unique<LeverageScorePress>();
        case MethodId::NonCausal: return std::make_unique<NonCausalAttentionPress>();
        case MethodId::Compactor: return std::make_unique<CompactorPress>();
        case MethodId::CriticalKv: return std::make_unique<CriticalKvPress>();
        case MethodId::CriticalAdaKv: return std::make_unique<CriticalAdaKvPress>();
        case MethodId::Kvzip: return std::make_unique<KvzipPress>();
        case MethodId::Finch: return std::make_unique<FinchPress>();
        case MethodId::FinchKvpress: return std::make_unique<FinchKvpressPress>();
        case MethodId::ChunkKvKvpress: return std::make_unique<ChunkKvKvpressPress>();
    }
    throw Error("--method '" + method + "' is not known");
}

PressParams Press::selectionParams(const PressParams& params) {
    PressParams p = params;
    if (!p.reads(Knob::Gqa)) p.gqa = GqaMode::KvHead;
    return p;
}

std::vector<std::vector<float>> Press::scores(const Capture&, const PressParams&, int64_t) const { return {}; }

namespace {

// What cannot run on a model yet. On a sliding window (`local`; `pastWindow`: the prompt
// reaches past it): the methods whose own runs of the model or re-positioned keys do not apply
// it (KVzip's reconstruction on any window: its repeat runs after the prompt). With
// Gemma 2's attention soft-cap: those that compute an attention of their own without it
// (every other score caps its logits). With Gemma 3's own RoPE base on local layers: those
// that turn queries or keys by the model's global base (QueryStatistics).
void requireSupport(const PressParams& params, bool local, bool pastWindow, double softcap, bool localRope) {
    const std::string method = methods::underConvention(params.method, params.convention);
    const NeedSet needs = methods::effectiveNeeds(params);
    const bool noncausal = params.ranksBy(methods::info(MethodId::NonCausal).name);
    std::string why;
    if (local) {
        if (needs.has(Need::SecondPrefill))
            why = "its own chunked prefill and the positions it decodes from do not apply the model's sliding window yet";
        else if (method == methods::info(MethodId::FinchKvpress).name)
            why = "it turns the kept keys to positions 0 .. B-1, which a sliding window would then cut wrongly";
        else if (pastWindow && noncausal)
            why = "the non-causal attention of its chunks is not defined across a sliding window yet";
        else if (needs.has(Need::Reconstruction))
            why = "KVzip's reconstruction runs the prompt again after it, where a sliding window hides the prompt it "
                  "reconstructs: its scores do not apply the window yet";
        if (!why.empty()) why += "; --sliding-window ignore (the window's 'window: ignore') attends over the whole sequence";
    }
    if (why.empty() && softcap > 0.0) {
        const char* what = needs.has(Need::QueryStats)       ? "its expected attention"
                           : needs.has(Need::Reconstruction) ? "KVzip's reconstruction attention"
                           : needs.has(Need::SecondPrefill)  ? "its own prefill's attention"
                           : noncausal                       ? "the non-causal attention of its chunks"
                                                             : nullptr;
        if (what) why = std::string(what) + " does not apply the model's attention logit soft-cap yet";
    }
    if (why.empty() && localRope &&
        (needs.has(Need::QueryStats) || needs.has(Need::PreRopeKeys) || method == methods::info(MethodId::FinchKvpress).name)) {
        why = "it turns queries or keys by the model's RoPE, and the model's local layers rotate with a base of their "
              "own, which it does not apply yet";
    }
    if (!why.empty())
        throw Error("--method " + params.method + (params.scorer.empty() ? "" : " --scorer " + params.scorer) + ": " + why);
}

}  // namespace

void Press::requireModelSupport(const Capture& capture, const PressParams& params) {
    bool local = false;
    for (int64_t l = 0; l < capture.layers(); ++l) local = local || capture.slidingWindow(l) > 0;
    requireSupport(params, local, capture.windowed(), capture.attentionSoftcap(), capture.localRope());
}

void Press::requireModelSupport(const ModelConfig& config, int64_t promptLength, const PressParams& params) {
    bool local = false, pastWindow = false, localRope = false;
    for (int64_t l = 0; l < config.nLayers; ++l) {
        const int64_t w = config.windowAt(l);
        local = local || w > 0;
        pastWindow = pastWindow || (w > 0 && promptLength > w - 1);
        localRope = localRope || config.localRope(l);
    }
    requireSupport(params, local, pastWindow, config.attnSoftcap, localRope);
}

namespace {

// A local layer (sliding window w, the prompt longer than it) holds only what a decode step's
// query can still reach, positions T - w + 1 .. T - 1: each head keeps min(its count, w - 1) of
// them, first those the method kept there, then the rest of the window by the method's scores
// (NaN, kept whole, first; ties to the lower position) or, for a method that ranks nothing,
// the most recent. A window under the budget keeps the whole window and frees nothing.
void keepInsideWindows(const Press& press, const Capture& capture, Selection& s) {
    for (int64_t l = 0; l < s.layers(); ++l) {
        const int64_t first = capture.firstReached(l);
        if (first == 0) continue;
        std::vector<std::vector<float>> scores;
        bool scored = false;
        for (size_t h = 0; h < s.kept[l].size(); ++h) {
            std::vector<int32_t>& kept = s.kept[l][h];
            const int64_t want = std::min<int64_t>(static_cast<int64_t>(kept.size()), s.promptLength - first);
            std::vector<char> in(static_cast<size_t>(s.promptLength - first), 0);
            int64_t have = 0;
            for (int32_t p : kept)
                if (p >= first) in[size_t(p - first)] = 1, ++have;
            if (have < want) {
                if (!scored) {
                    scores = press.scores(capture, s.params, l);
                    scored = true;
                }
                std::vector<int32_t> rest;  // the window's positions not kept, best first
                for (int64_t p = first; p < s.promptLength; ++p)
                    if (!in[size_t(p - first)]) rest.push_back(static_cast<int32_t>(p));
                if (h < scores.size() && static_cast<int64_t>(scores[h].size()) == s.promptLength) {
                    const std::vector<float>& row = scores[h];
                    auto key = [&](int32_t p) {
                        const float v = row[size_t(p)];
                        return std::isnan(v) ? std::numeric_limits<float>::infinity() : v;
                    };
                    std::stable_sort(rest.begin(), rest.end(), [&](int32_t a, int32_t b) { return key(a) > key(b); });
                } else {
                    std::reverse(rest.begin(), rest.end());
                }
                for (int64_t i = 0; i < want - have; ++i) in[size_t(rest[size_t(i)] - first)] = 1;
            }
            std::vector<int32_t> inside;  // `have` never exceeds `want`: the window holds w - 1 positions
            for (int64_t p = first; p < s.promptLength; ++p)
                if (in[size_t(p - first)]) inside.push_back(int32_t(p));
            kept = std::move(inside);
        }
    }
}

}  // namespace

Selection Press::select(const Capture& capture, const PressParams& params) const {
    const int64_t T = capture.promptLength();
    params.validate(T, capture.windowCapacity());
    requireModelSupport(capture, params);
    if (params.info()->id == MethodId::H2o && !capture.hasH2oScores()) {
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
    s.params = selectionParams(params);
    s.gqa = s.params.gqa;
    const int64_t L = capture.layers(), heads = s.headsPerLayer();
    s.kept.assign(L, std::vector<std::vector<int32_t>>(heads));
    const int64_t budget = params.info()->id == MethodId::Full ? T : params.resolveBudget(T);
    if (budget >= T) {
        std::vector<int32_t> all(T);
        std::iota(all.begin(), all.end(), 0);
        for (auto& layer : s.kept)
            for (auto& head : layer) head = all;
    } else {
        fill(capture, s.params, budget, s);  // with the GQA mode the selection really has
    }
    if (capture.windowed()) keepInsideWindows(*this, capture, s);
    // What each layer holds, whatever the method gave it: a ChunkKV layer keeps whole chunks
    // under its budget, KVzip's layers hold what its global ranking left them.
    s.layerBudgets.assign(L, 0);
    for (int64_t l = 0; l < L; ++l) s.layerBudgets[l] = heads > 0 ? (s.entries(l) + heads / 2) / heads : 0;
    // ThinK prunes key channels of what the method kept (kvpress's ComposedPress order).
    if (params.think > 0.0) s.prunedChannels = presses::thinkPrunedChannels(capture, s);
    return s;
}

}  // namespace kvlens
