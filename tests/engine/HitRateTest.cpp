// The SnapKV hit rate: 100% for FullKV and for a budget of the whole prompt,
// the share kept for Random, and the recorded top-k against a brute force.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "engine/compress/Capture.h"
#include "core/Error.h"
#include "engine/model/LlamaModel.h"
#include "engine/compress/CompressedCache.h"
#include "engine/model/ModelLoader.h"
#include "engine/model/Sampler.h"
#include "engine/analysis/HitRate.h"
#include "engine/compress/presses/Press.h"

namespace kvlens {
namespace {

constexpr int64_t kT = 300, kSteps = 6, kK = 16;

class HitRateTest : public ::testing::Test {
protected:
    static void SetUpTestSuite() {
        loaded_ = new LoadedModel(loadModel("random:tiny", c10::Device(c10::kCPU), c10::kFloat));
        std::vector<int32_t> prompt;
        for (int i = 0; i < kT; ++i) prompt.push_back(3 + (i * 29) % 240);
        capture_ = new std::shared_ptr<Capture>(Capture::fromPrefill(*loaded_->model, prompt));
        hitRate_ = new HitRate(*loaded_->model, *capture_, kSteps, kK);
    }
    static void TearDownTestSuite() {
        delete hitRate_;
        delete capture_;
        delete loaded_;
    }
    static Selection select(const std::string& method, int64_t budget, uint64_t seed = 0,
                            GqaMode gqa = GqaMode::KvHead) {
        PressParams p;
        p.method = method;
        p.budget = budget;
        p.seed = seed;
        p.gqa = gqa;
        (*capture_)->keepScoresFor(*loaded_->model, method);
        return Press::create(method)->select(**capture_, p);
    }
    static LoadedModel* loaded_;
    static std::shared_ptr<Capture>* capture_;
    static HitRate* hitRate_;
};
LoadedModel* HitRateTest::loaded_ = nullptr;
std::shared_ptr<Capture>* HitRateTest::capture_ = nullptr;
HitRate* HitRateTest::hitRate_ = nullptr;

TEST_F(HitRateTest, FullKvAndWholePromptBudgetHitEverything) {
    for (const Selection& s : {select("full", 0), select("snapkv", kT), select("h2o", kT),
                               select("snapkv", kT, 0, GqaMode::QueryHead)}) {
        const HitRate::Result r = hitRate_->of(s, 32);
        ASSERT_EQ(r.perLayer.size(), 4u);
        for (size_t l = 0; l < r.perLayer.size(); ++l) {
            EXPECT_EQ(r.perLayer[l], 1.0) << s.params.method << " layer " << l;
            EXPECT_EQ(r.perLayerOutsideWindow[l], 1.0);
        }
        EXPECT_EQ(r.mean, 1.0);
    }
}

TEST_F(HitRateTest, RandomHitsTheShareOfPositionsItKeepsOutsideTheWindow) {
    // Random keeps the window and B - W of the T - W earlier positions; its
    // choice ignores attention, so the outside-window hit rate is that share.
    const int64_t budget = 132, window = 32;
    const double share = double(budget - window) / double(kT - window);
    double mean = 0.0;
    const int seeds = 4;
    for (int seed = 1; seed <= seeds; ++seed) {
        const HitRate::Result r = hitRate_->of(select("random", budget, seed), window);
        mean += r.meanOutsideWindow / seeds;
        EXPECT_NEAR(r.meanOutsideWindow, share, 0.08) << "seed " << seed;
    }
    EXPECT_NEAR(mean, share, 0.04);
}

TEST_F(HitRateTest, SmallerBudgetsNeverHitMore) {
    // StreamingLLM keeps a prefix and a suffix: a bigger budget keeps a superset.
    double previous = 0.0;
    for (int64_t budget : {16, 48, 96, 200}) {
        const double r = hitRate_->of(select("streamingllm", budget), 32).mean;
        EXPECT_GE(r, previous);
        previous = r;
    }
}

// Keeps each layer's decode query.
class QueryRecorder : public ForwardObserver {
public:
    void onQueries(int64_t layer, const at::Tensor& q, int64_t) override {
        if (static_cast<int64_t>(queries.size()) <= layer) queries.resize(layer + 1);
        queries[layer] = q.to(at::kDouble).clone();
    }
    std::vector<at::Tensor> queries;  // [1, H, D]
};

TEST_F(HitRateTest, RecordedTopPositionsAreTheLargestLogits) {
    // Step 0 again, by hand: decode the first greedy token on a full cache,
    // rank the prompt keys by q.k in double, and compare the top-k sets.
    const Capture& c = **capture_;
    PressParams full;
    full.method = "full";
    CompressedCache cache(c, Press::create("full")->select(c, full), 1);
    QueryRecorder recorder;
    const int32_t first = Sampler::argmax(c.lastLogits().data_ptr<float>(), c.lastLogits().numel());
    loaded_->model->decode(first, cache, &recorder);
    const int64_t G = c.queryHeads() / c.kvHeads();
    for (int64_t l = 0; l < c.layers(); ++l) {
        for (int64_t h = 0; h < c.queryHeads(); ++h) {
            at::Tensor logits = at::mv(c.keys(l)[h / G].to(at::kDouble), recorder.queries[l][0][h]);
            std::vector<std::pair<double, int32_t>> ranked;
            for (int32_t j = 0; j < kT; ++j) ranked.push_back({logits[j].item<double>(), j});
            std::sort(ranked.begin(), ranked.end(), std::greater<>());
            std::vector<int32_t> want, got(hitRate_->topPositions(0, l, h), hitRate_->topPositions(0, l, h) + kK);
            for (int64_t i = 0; i < kK; ++i) want.push_back(ranked[i].second);
            std::sort(want.begin(), want.end());
            std::sort(got.begin(), got.end());
            EXPECT_EQ(got, want) << "layer " << l << " head " << h;
        }
    }
}

TEST_F(HitRateTest, BadSettingsAreOneLineErrors) {
    try {
        HitRate bad(*loaded_->model, *capture_, 2, kT + 1);
        FAIL();
    } catch (const Error& e) {
        EXPECT_EQ(std::string(e.what()), "--hit-k 301 must be between 1 and the prompt's 300 tokens");
    }
    try {
        HitRate bad(*loaded_->model, *capture_, 5000, 4);
        FAIL();
    } catch (const Error& e) {
        EXPECT_EQ(std::string(e.what()), "-n 5000 does not fit: the prompt leaves 3796 tokens of the model's context");
    }
}

}  // namespace
}  // namespace kvlens
