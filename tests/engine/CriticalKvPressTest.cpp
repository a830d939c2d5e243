// CriticalKV over a scorer against a reference written here in double from its definition
// (Feng et al. 2025, as kvpress's CriticalKVPress): per head the window (and the scorer's
// sinks), then of the k = B - W - sinks ranked entries the floor(k / 2) best by the scorer,
// then the k - floor(k / 2) best of the others by (score + 1e-4) x n_t, where n_t is
// sum_e |sum_d W_o[e, h D + d] v_t[d]| for each query head h reading the KV head, averaged.
// The scorer here is KNorm (score -||k_t||) and CUR (with its sinks), on GQA and MHA models.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>
#include <tuple>
#include <vector>

#include "core/Error.h"
#include "engine/compress/Capture.h"
#include "engine/compress/presses/Press.h"
#include "engine/compress/presses/PressScores.h"
#include "engine/model/LlamaModel.h"
#include "engine/model/ModelSpec.h"
#include "engine/model/ModelWeights.h"
#include "NormReference.h"

namespace kvlens {
namespace {

struct Fixture {
    ModelConfig config;
    std::unique_ptr<LlamaModel> model;
    std::shared_ptr<Capture> capture;

    explicit Fixture(int64_t kvHeads) {
        config = ModelSpec::parse("random:tiny:layers=2").randomConfig();  // 8 query heads, D = 32
        config.nKvHeads = kvHeads;
        model = std::make_unique<LlamaModel>(config, ModelWeights::random(config, 9, c10::Device(c10::kCPU), c10::kFloat),
                                             c10::Device(c10::kCPU), c10::kFloat);
        std::vector<int32_t> prompt(200);
        for (size_t i = 0; i < prompt.size(); ++i) prompt[i] = int32_t((i * 29 + 5) % 500 + 1);
        capture = Capture::fromPrefill(*model, prompt);
    }

    // n_t per KV head, in double.
    std::vector<std::vector<double>> norms(int64_t layer) const {
        const int64_t T = capture->promptLength(), D = config.headDim, H = config.nHeads, KV = config.nKvHeads;
        const int64_t G = H / KV, E = config.embedDim;
        const at::Tensor w = model->weights().layers[layer].wo.dense().to(at::kDouble).contiguous();  // [E, H D]
        const at::Tensor v = capture->values(layer).to(at::kDouble).contiguous();                     // [KV, T, D]
        const auto wa = w.accessor<double, 2>();
        const auto va = v.accessor<double, 3>();
        std::vector<std::vector<double>> out(KV, std::vector<double>(T, 0.0));
        for (int64_t h = 0; h < H; ++h)
            for (int64_t t = 0; t < T; ++t) {
                double l1 = 0.0;
                for (int64_t e = 0; e < E; ++e) {
                    double x = 0.0;
                    for (int64_t d = 0; d < D; ++d) x += wa[e][h * D + d] * va[h / G][t][d];
                    l1 += std::abs(x);
                }
                out[h / G][t] += l1 / double(G);
            }
        return out;
    }
};

std::vector<int32_t> bestOf(const std::vector<int32_t>& among, const std::vector<double>& score, int64_t k) {
    std::vector<int32_t> order = among;
    std::stable_sort(order.begin(), order.end(), [&](int32_t a, int32_t b) { return score[a] > score[b]; });
    order.resize(size_t(std::max<int64_t>(0, std::min<int64_t>(k, int64_t(order.size())))));
    return order;
}

class CriticalKvShapes : public ::testing::TestWithParam<int64_t> {};

TEST_P(CriticalKvShapes, KeptSetsAreTheDefinitions) {
    Fixture f(GetParam());
    const Capture& c = *f.capture;
    const int64_t T = c.promptLength(), KV = c.kvHeads(), D = c.headDim();
    PressParams p;
    p.method = "criticalkv";
    p.window = 16;
    p.sinks = 4;
    p.budget = 60;
    EXPECT_TRUE(c.needsReplayFor(p));
    c.keepScoresFor(*f.model, p);
    EXPECT_FALSE(c.needsReplayFor(p));
    for (const char* scorer : {"knorm", "cur"}) {
        p.scorer = scorer;
        const bool sinks = std::string(scorer) == "cur";
        for (int64_t B : {int64_t(21), int64_t(60), int64_t(150)}) {
            p.budget = B;
            const Selection s = Press::create("criticalkv")->select(c, p);
            for (int64_t l = 0; l < 2; ++l) {
                const auto n = f.norms(l);
                const at::Tensor k = c.keys(l).to(at::kDouble).contiguous();
                const presses::HeadScores cur = presses::curScores(c, l, p);  // CUR's own scores (tested elsewhere)
                for (int64_t h = 0; h < KV; ++h) {
                    std::vector<double> score(T);
                    std::vector<int32_t> ranked, want;
                    for (int64_t t = 0; t < T; ++t) {
                        if (t >= T - p.window || (sinks && t < p.sinks)) {
                            want.push_back(int32_t(t));
                            continue;
                        }
                        double norm = 0.0;
                        for (int64_t d = 0; d < D; ++d) norm += k[h][t][d].item<double>() * k[h][t][d].item<double>();
                        score[t] = sinks ? double(cur[h][t]) : -std::sqrt(norm);
                        ranked.push_back(int32_t(t));
                    }
                    const int64_t budgetLeft = B - int64_t(want.size()), first = budgetLeft / 2;
                    const std::vector<int32_t> stage1 = bestOf(ranked, score, first);
                    std::vector<int32_t> rest;
                    for (int32_t t : ranked)
                        if (std::find(stage1.begin(), stage1.end(), t) == stage1.end()) rest.push_back(t);
                    std::vector<double> rescaled(T);
                    for (int32_t t : rest) rescaled[t] = (score[t] + 1e-4) * n[h][t];
                    const std::vector<int32_t> stage2 = bestOf(rest, rescaled, budgetLeft - first);
                    want.insert(want.end(), stage1.begin(), stage1.end());
                    want.insert(want.end(), stage2.begin(), stage2.end());
                    std::sort(want.begin(), want.end());
                    EXPECT_EQ(s.kept[l][h], want) << scorer << " B " << B << " layer " << l << " head " << h;
                }
            }
        }
    }
    // The norms cost L x H x T x 4 bytes, kept with the capture.
    EXPECT_EQ(c.outputValueNorms(0).numel(), c.queryHeads() * T);
}

// With SnapKV's votes as the scorer in query-head mode every query head keeps its own set,
// rescaled by its own head's norms (not its group's mean). The votes are the press's pooled
// ones (tested against their definition elsewhere); the two stages are this file's.
TEST_P(CriticalKvShapes, QueryHeadModeRescalesByEachHeadsOwnNorms) {
    Fixture f(GetParam());
    const Capture& c = *f.capture;
    const int64_t T = c.promptLength(), H = c.queryHeads(), D = c.headDim(), E = f.config.embedDim;
    PressParams p;
    p.method = "criticalkv";
    p.gqa = GqaMode::QueryHead;
    p.window = 16;
    p.budget = 50;
    c.keepScoresFor(*f.model, p);
    const Selection s = Press::create("criticalkv")->select(c, p);
    ASSERT_EQ(s.gqa, GqaMode::QueryHead);
    ASSERT_EQ(s.headsPerLayer(), H);
    const int64_t G = H / c.kvHeads();
    for (int64_t l = 0; l < 2; ++l) {
        const presses::HeadScores votes = presses::pooledVotes(c, l, p);  // [H][T - W]
        const at::Tensor w = f.model->weights().layers[l].wo.dense().to(at::kDouble).contiguous();
        const at::Tensor v = c.values(l).to(at::kDouble).contiguous();
        const auto wa = w.accessor<double, 2>();
        const auto va = v.accessor<double, 3>();
        for (int64_t h = 0; h < H; ++h) {
            std::vector<double> score(T), rescaled(T);
            std::vector<int32_t> ranked, want;
            for (int64_t t = 0; t < T - p.window; ++t) {
                score[t] = votes[h][t];
                ranked.push_back(int32_t(t));
            }
            const int64_t k = p.budget - p.window, first = k / 2;
            const std::vector<int32_t> stage1 = bestOf(ranked, score, first);
            std::vector<int32_t> rest;
            for (int32_t t : ranked) {
                if (std::find(stage1.begin(), stage1.end(), t) != stage1.end()) continue;
                rest.push_back(t);
                double l1 = 0.0;
                for (int64_t e = 0; e < E; ++e) {
                    double x = 0.0;
                    for (int64_t d = 0; d < D; ++d) x += wa[e][h * D + d] * va[h / G][t][d];
                    l1 += std::abs(x);
                }
                rescaled[t] = (score[t] + 1e-4) * l1;
            }
            const std::vector<int32_t> stage2 = bestOf(rest, rescaled, k - first);
            want.insert(want.end(), stage1.begin(), stage1.end());
            want.insert(want.end(), stage2.begin(), stage2.end());
            for (int64_t t = T - p.window; t < T; ++t) want.push_back(int32_t(t));
            std::sort(want.begin(), want.end());
            EXPECT_EQ(s.kept[l][h], want) << "layer " << l << " query head " << h;
        }
    }
}

// CriticalAdaKV (kvpress's CriticalAdaKVPress) with KNorm's scores (-||k_t||): AdaKV's
// allocation sets each head's budget b_h (each head's floor(alpha P) best, then the layer's
// heads x (P - floor(alpha P)) best of all heads, ties to the lower head and position; P = B - W),
// and each head keeps its max(floor(alpha P), floor(b_h / 2)) best by the score, then the rest
// of b_h by (score + 1e-4) x n_t, beside the window.
TEST_P(CriticalKvShapes, CriticalAdaKvKeepsTheDefinition) {
    Fixture f(GetParam());
    const Capture& c = *f.capture;
    const int64_t T = c.promptLength(), KV = c.kvHeads();
    PressParams p;
    p.method = "criticaladakv";
    p.scorer = "knorm";
    p.window = 16;
    p.budget = 60;
    EXPECT_TRUE(c.needsReplayFor(p));
    c.keepScoresFor(*f.model, p);
    EXPECT_FALSE(c.needsReplayFor(p));
    for (double alpha : {0.2, 0.5}) {
        for (int64_t B : {int64_t(30), int64_t(60), int64_t(150)}) {
            p.alpha = alpha;
            p.budget = B;
            const Selection s = Press::create("criticaladakv")->select(c, p);
            const int64_t P = B - p.window, safe = int64_t(std::floor(alpha * double(P) + 1e-9));
            for (int64_t l = 0; l < 2; ++l) {
                const auto n = f.norms(l);
                std::vector<std::vector<double>> score(KV);
                std::vector<int32_t> ranked;
                for (int64_t t = 0; t < T - p.window; ++t) ranked.push_back(int32_t(t));
                for (int64_t h = 0; h < KV; ++h) {
                    score[h] = test::squaredNorms(c.keys(l), h, T);
                    for (double& v : score[h]) v = -std::sqrt(v);
                }
                // AdaKV's allocation.
                std::vector<std::vector<char>> taken(KV, std::vector<char>(T, 0));
                std::vector<int64_t> headBudget(KV, 0);
                for (int64_t h = 0; h < KV; ++h)
                    for (int32_t t : bestOf(ranked, score[h], safe)) taken[h][t] = 1, ++headBudget[h];
                std::vector<std::tuple<double, int64_t, int64_t>> rest;
                for (int64_t h = 0; h < KV; ++h)
                    for (int32_t t : ranked)
                        if (!taken[h][t]) rest.emplace_back(score[h][t], h, t);
                std::stable_sort(rest.begin(), rest.end(),
                                 [](const auto& a, const auto& b) { return std::get<0>(a) > std::get<0>(b); });
                for (int64_t i = 0; i < KV * (P - safe); ++i) ++headBudget[std::get<1>(rest[size_t(i)])];
                for (int64_t h = 0; h < KV; ++h) {
                    const int64_t first = std::max(safe, headBudget[h] / 2);
                    const std::vector<int32_t> stage1 = bestOf(ranked, score[h], first);
                    std::vector<int32_t> others;
                    std::vector<double> rescaled(T);
                    for (int32_t t : ranked) {
                        if (std::find(stage1.begin(), stage1.end(), t) != stage1.end()) continue;
                        others.push_back(t);
                        rescaled[t] = (score[h][t] + 1e-4) * n[h][t];
                    }
                    const std::vector<int32_t> stage2 = bestOf(others, rescaled, headBudget[h] - first);
                    std::vector<int32_t> want = stage1;
                    want.insert(want.end(), stage2.begin(), stage2.end());
                    for (int64_t t = T - p.window; t < T; ++t) want.push_back(int32_t(t));
                    std::sort(want.begin(), want.end());
                    EXPECT_EQ(s.kept[l][h], want) << "alpha " << alpha << " B " << B << " layer " << l << " head " << h;
                }
            }
        }
    }
}

INSTANTIATE_TEST_SUITE_P(Shapes, CriticalKvShapes, ::testing::Values(int64_t(4), int64_t(8)),
                         [](const auto& info) { return std::string(info.param == 8 ? "Mha" : "Gqa"); });

TEST(CriticalKvPress, WithoutTheNormsItSaysWhyInOneLine) {
    Fixture f(4);
    PressParams p;
    p.method = "criticalkv";
    p.budget = 60;
    try {
        Press::create("criticalkv")->select(*f.capture, p);
        ADD_FAILURE() << "selected without the norms";
    } catch (const Error& e) {
        EXPECT_STREQ(e.what(), "--method criticalkv: the projected value norms have not been computed "
                               "(Capture::keepScoresFor before selecting)");
    }
    const auto tensors = Capture::fromTensors({at::randn({2, 40, 8})}, {at::randn({2, 40, 8})}, {at::randn({2, 40, 8})});
    p.window = 8;
    p.budget = 20;  // of 40: something to rank
    try {
        Press::create("criticalkv")->select(*tensors, p);
        ADD_FAILURE() << "selected on tensors";
    } catch (const Error& e) {
        EXPECT_STREQ(e.what(), "--method criticalkv needs each layer's output projection: give o_proj [E][H*D] in "
                               "every --inputs file");
    }
    Fixture other(8);
    try {
        f.capture->keepScoresFor(*other.model, p);
        ADD_FAILURE() << "another model was accepted";
    } catch (const Error& e) {
        EXPECT_STREQ(e.what(),
                     "CriticalKV's projected value norms need the model that made the capture (another one is loaded)");
    }
}

}  // namespace
}  // namespace kvlens
