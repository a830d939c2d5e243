#include "engine/compress/presses/H2oReplayWork.h"

#include "core/Methods.h"
#include "core/PressParams.h"
#include "engine/model/LlamaModel.h"

namespace kvlens {
namespace {

// Sums, per layer, the attention every key gets from all prompt queries over the chunks of a
// replayed prefill: [H, T] fp32.
class ColumnSumAccumulator : public ForwardObserver {
public:
    ColumnSumAccumulator(int64_t layers, int64_t promptLength) : sums(layers), promptLength_(promptLength) {}
    void onQueries(int64_t, const at::Tensor&, int64_t) override {}
    bool wantsAttentionColumnSums() const override { return true; }
    void onAttentionColumnSums(int64_t layer, const at::Tensor& s) override {
        if (!sums[layer].defined()) sums[layer] = at::zeros({s.size(0), promptLength_}, s.options());
        sums[layer].narrow(1, 0, s.size(1)).add_(s);
    }

    std::vector<at::Tensor> sums;

private:
    int64_t promptLength_;
};

}  // namespace

std::string H2oReplayWork::pending(const Capture& capture, const PressParams& params) const {
    if (capture.hasH2oScores()) return "";
    const bool own = methods::named(params.method).id == MethodId::H2o;
    if (!own && !(params.ranksBy("h2o") && params.resolveBudget(capture.promptLength()) < capture.promptLength()))
        return "";
    return "H2O's accumulated attention (a replay of the prompt)";
}

void H2oReplayWork::run(const Capture& capture, LlamaModel& model, const PressParams&,
                        const ProgressFn& progress) const {
    ColumnSumAccumulator sums(capture.layers(), capture.promptLength());
    model.replay(capture.prompt(), cache(capture), sums, progress);
    for (int64_t l = 0; l < capture.layers(); ++l)
        requireFinite(sums.sums[l], l, "query head", "accumulated attention", kPrefill);
    storeH2oScores(capture, std::move(sums.sums));
}

}  // namespace kvlens
