// H2O as a wrapper's scorer (--scorer h2o): each KV head's score of a prefix position is the
// attention it got from every prompt query, summed (H2O's accumulated attention: each query's
// causal softmax of q.k / sqrt(D)), averaged over the KV head's query heads; NaN for the
// wrapper's window. The reference here records every query by a plain forward of the prompt
// on a fresh cache and sums the softmaxes in double, not from the replay the capture runs.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "core/Error.h"
#include "engine/compress/Capture.h"
#include "engine/compress/presses/AdaKvPress.h"
#include "engine/compress/presses/Press.h"
#include "engine/compress/presses/PressScores.h"
#include "engine/model/LlamaModel.h"
#include "engine/model/ModelSpec.h"
#include "engine/model/ModelWeights.h"
#include "QueryRecorder.h"

namespace kvlens {
namespace {


class H2oScorerShapes : public ::testing::TestWithParam<int64_t> {};

TEST_P(H2oScorerShapes, AWrapperRanksH2osAccumulatedAttention) {
    ModelConfig config = ModelSpec::parse("random:tiny:layers=2").randomConfig();  // 8 query heads, D = 32
    config.nKvHeads = GetParam();
    LlamaModel model(config, ModelWeights::random(config, 21, c10::Device(c10::kCPU), c10::kFloat), c10::Device(c10::kCPU),
                     c10::kFloat);
    model.setPrefillChunk(50);  // the capture's replay runs in pieces
    std::vector<int32_t> prompt(150);
    for (size_t i = 0; i < prompt.size(); ++i) prompt[i] = int32_t((i * 53 + 7) % 480 + 2);
    const auto capture = Capture::fromPrefill(model, prompt);
    const int64_t T = 150, H = config.nHeads, KV = config.nKvHeads, G = H / KV, D = config.headDim;
    PressParams p;
    p.method = "adakv";
    p.scorer = "h2o";
    p.window = 8;
    p.budget = 40;
    try {
        Press::create("adakv")->select(*capture, p);
        ADD_FAILURE() << "selected without the accumulated attention";
    } catch (const Error& e) {
        EXPECT_STREQ(e.what(), "--scorer h2o: the capture's accumulated attention has not been computed "
                               "(Capture::keepScoresFor before selecting)");
    }
    EXPECT_EQ(capture->pendingWork(p), "H2O's accumulated attention (a replay of the prompt)");
    capture->keepScoresFor(model, p);
    EXPECT_FALSE(capture->needsReplayFor(p));

    KvCache fresh = model.makeCache(T);
    test::QueryRecorder rec(config.nLayers, T);
    model.forward(prompt, fresh, false, {}, &rec);
    const Selection s = Press::create("adakv")->select(*capture, p);
    for (int64_t l = 0; l < config.nLayers; ++l) {
        const at::Tensor k = capture->keys(l).to(at::kDouble).contiguous();
        const auto ka = k.accessor<double, 3>();
        const auto qa = rec.queries[l].accessor<double, 3>();
        std::vector<std::vector<double>> want(KV, std::vector<double>(T, 0.0));
        for (int64_t h = 0; h < H; ++h)
            for (int64_t i = 0; i < T; ++i) {
                std::vector<double> logit(i + 1);
                double top = -1e300, sum = 0.0;
                for (int64_t j = 0; j <= i; ++j) {
                    double dot = 0.0;
                    for (int64_t d = 0; d < D; ++d) dot += qa[i][h][d] * ka[h / G][j][d];
                    top = std::max(top, logit[j] = dot / std::sqrt(double(D)));
                }
                for (double& x : logit) sum += (x = std::exp(x - top));
                for (int64_t j = 0; j <= i; ++j) want[h / G][j] += logit[j] / sum / double(G);
            }
        presses::HeadScores rows = presses::scorerScores(*capture, l, p);
        ASSERT_EQ(int64_t(rows.size()), KV);
        for (int64_t h = 0; h < KV; ++h) {
            for (int64_t t = 0; t < T; ++t) {
                if (t >= T - p.window) {
                    EXPECT_TRUE(std::isnan(rows[h][t])) << l << " " << h << " " << t;
                } else {
                    EXPECT_NEAR(rows[h][t], want[h][t], 1e-4 * std::max(1.0, want[h][t])) << l << " " << h << " " << t;
                }
            }
        }
        // AdaKV's allocation (tested against its definition elsewhere) over exactly these scores.
        const std::vector<std::vector<int32_t>> kept = AdaKvPress::keepLayer(rows, p.budget, p.alpha, false);
        for (int64_t h = 0; h < KV; ++h) EXPECT_EQ(s.kept[l][h], kept[h]) << l << " " << h;
    }
}

INSTANTIATE_TEST_SUITE_P(Shapes, H2oScorerShapes, ::testing::Values(int64_t(4), int64_t(8)),
                         [](const auto& info) { return std::string(info.param == 8 ? "Mha" : "Gqa"); });

}  // namespace
}  // namespace kvlens
