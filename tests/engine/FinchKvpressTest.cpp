// kvpress's FinchPress (`--method finch-kvpress`) against a reference written here in double
// from kvpress's definition: the question is the prompt's last W tokens; each of its queries
// (position T-W+i) takes a causal softmax of q.k / sqrt(D) over the keys it sees, weighted by
// T-W+i; averaged over the W rows and over the KV head's query heads, no pooling; each KV
// head keeps its B-W best prefix positions by rule (ties to the lower) and the question. The
// gathered keys are turned by RoPE (this file's own angles) from their prompt position to
// their row, values untouched, and decoding goes on at B, right after them.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>
#include <vector>

#include "core/Error.h"
#include "engine/compress/Capture.h"
#include "engine/compress/CompressedCache.h"
#include "engine/compress/presses/Press.h"
#include "engine/model/LlamaModel.h"
#include "engine/model/ModelLoader.h"

namespace kvlens {
namespace {

PressParams finch(int64_t budget, int64_t window) {
    PressParams p;
    p.method = "finch-kvpress";
    p.budget = budget;
    p.window = window;
    return p;
}

// The reference's score per KV head over prefix positions 0 .. T-W-1.
std::vector<std::vector<double>> referenceScores(const Capture& c, int64_t layer, int64_t W) {
    const int64_t T = c.promptLength(), H = c.queryHeads(), KV = c.kvHeads(), G = H / KV, D = c.headDim();
    const at::Tensor q = c.windowQueries(layer).to(at::kDouble).contiguous();  // [H, Wc, D], the last Wc positions
    const at::Tensor k = c.keys(layer).to(at::kDouble).contiguous();           // [KV, T, D]
    const auto qa = q.accessor<double, 3>();
    const auto ka = k.accessor<double, 3>();
    const int64_t Wc = q.size(1);
    std::vector<std::vector<double>> out(KV, std::vector<double>(T - W, 0.0));
    for (int64_t h = 0; h < H; ++h) {
        for (int64_t i = 0; i < W; ++i) {
            const int64_t pos = T - W + i, row = Wc - W + i;
            std::vector<double> logit(pos + 1);
            for (int64_t j = 0; j <= pos; ++j) {
                double dot = 0.0;
                for (int64_t d = 0; d < D; ++d) dot += qa[h][row][d] * ka[h / G][j][d];
                logit[j] = dot / std::sqrt(double(D));
            }
            const double top = *std::max_element(logit.begin(), logit.end());
            double z = 0.0;
            for (double& x : logit) z += (x = std::exp(x - top));
            for (int64_t j = 0; j < T - W; ++j) out[h / G][j] += logit[j] / z * double(pos) / double(W) / double(G);
        }
    }
    return out;
}

// `kept` holds B - W prefix positions whose reference scores are the best (nothing kept
// clearly below anything dropped; a relative 1e-5 allows fp32 rounding at a near tie), then
// the question's W positions.
void expectKeptByRule(const std::vector<int32_t>& kept, const std::vector<double>& ref, int64_t T, int64_t W,
                      int64_t B, const std::string& where) {
    ASSERT_EQ(int64_t(kept.size()), B) << where;
    for (int64_t i = 0; i < W; ++i) ASSERT_EQ(kept[B - W + i], T - W + i) << where;
    std::vector<char> in(ref.size(), 0);
    for (int64_t i = 0; i < B - W; ++i) {
        ASSERT_LT(kept[i], T - W) << where;
        if (i > 0) {
            ASSERT_LT(kept[i - 1], kept[i]) << where;
        }
        in[kept[i]] = 1;
    }
    double worstKept = INFINITY, bestDropped = -INFINITY;
    for (size_t j = 0; j < ref.size(); ++j) {
        if (in[j]) {
            worstKept = std::min(worstKept, ref[j]);
        } else {
            bestDropped = std::max(bestDropped, ref[j]);
        }
    }
    EXPECT_GE(worstKept, bestDropped * (1.0 - 1e-5)) << where;
}

TEST(FinchKvpress, KeptSetsAreTheQuestionsPositionWeightedVotes) {
    for (const auto& [H, KV] : std::vector<std::pair<int64_t, int64_t>>{{8, 2}, {4, 4}}) {
        at::manual_seed(40 + H + KV);
        const int64_t T = 120, D = 16;
        std::vector<at::Tensor> q, k, v;
        for (int l = 0; l < 2; ++l) {
            q.push_back(at::randn({H, 64, D}) * 1.5);
            k.push_back(at::randn({KV, T, D}));
            v.push_back(at::randn({KV, T, D}));
        }
        const auto capture = Capture::fromTensors(q, k, v);
        for (int64_t W : {1, 8, 32}) {
            const std::vector<std::vector<double>> ref0 = referenceScores(*capture, 0, W), ref1 = referenceScores(*capture, 1, W);
            for (int64_t B : {W + 1, W + 20, int64_t(100)}) {
                PressParams p = finch(B, W);
                p.gqa = GqaMode::QueryHead;  // kvpress's FinchPress is per KV head whatever asked
                const Selection s = Press::create("finch-kvpress")->select(*capture, p);
                EXPECT_EQ(s.gqa, GqaMode::KvHead);
                ASSERT_EQ(s.headsPerLayer(), KV);
                for (int64_t l = 0; l < 2; ++l)
                    for (int64_t c = 0; c < KV; ++c)
                        expectKeptByRule(s.kept[l][c], (l == 0 ? ref0 : ref1)[c], T, W, B,
                                         "H " + std::to_string(H) + " KV " + std::to_string(KV) + " W " + std::to_string(W) +
                                             " B " + std::to_string(B) + " layer " + std::to_string(l) + " head " + std::to_string(c));
            }
        }
    }
    // Equal scores (all keys alike) keep the lowest positions.
    const auto flat = Capture::fromTensors({at::randn({4, 64, 8})}, {at::ones({2, 50, 8})}, {at::randn({2, 50, 8})});
    const Selection s = Press::create("finch-kvpress")->select(*flat, finch(12, 4));
    for (const auto& head : s.kept[0]) EXPECT_EQ(head, (std::vector<int32_t>{0, 1, 2, 3, 4, 5, 6, 7, 46, 47, 48, 49}));
}

// On a model's prefill: each kept key is its prompt key turned by RoPE to its row (checked in
// double with this file's own angles, both pair layouts and a partial RoPE), values are the
// capture's, the next token takes position B, and a budget holding the prompt turns nothing.
TEST(FinchKvpress, KeptKeysAreTurnedToTheirRowsAndDecodingGoesOnRightAfterThem) {
    for (const auto& [halves, ropeDim] : std::vector<std::pair<bool, int64_t>>{{false, 32}, {true, 16}}) {
        LoadedModel loaded = loadModel("random:tiny:layers=2:seed=5", c10::Device(c10::kCPU), c10::kFloat);
        ModelConfig config = loaded.model->config();  // 8 query heads, 4 KV heads, D = 32
        config.ropeStyle = halves ? RopeStyle::Halves : RopeStyle::Adjacent;
        config.ropeDim = ropeDim;
        LlamaModel model(config, loaded.model->weights(), c10::Device(c10::kCPU), c10::kFloat);
        std::vector<int32_t> prompt(150);
        for (size_t i = 0; i < prompt.size(); ++i) prompt[i] = int32_t((i * 29 + 3) % 400 + 2);
        const auto capture = Capture::fromPrefill(model, prompt, {}, {}, 8);
        const int64_t T = capture->promptLength(), D = capture->headDim(), B = 40, W = 8;
        const Selection s = Press::create("finch-kvpress")->select(*capture, finch(B, W));
        CompressedCache cache(*capture, s, 8);
        EXPECT_EQ(cache.nextPosition(), B);  // right after the re-rotated rows, as kvpress's pipeline
        auto freq = [&](int64_t i) { return std::pow(double(config.ropeTheta), -2.0 * double(i) / double(ropeDim)); };
        for (int64_t l = 0; l < 2; ++l) {
            const at::Tensor prompted = capture->keys(l).to(at::kDouble);
            for (int64_t c = 0; c < cache.heads(); ++c) {
                const at::Tensor got = cache.keys(l)[c].to(at::kDouble);
                ASSERT_EQ(got.size(0), B);
                for (int64_t j = 0; j < B; ++j) {
                    const int64_t p = s.kept[l][c][j];
                    const at::Tensor x = prompted[c][p];
                    at::Tensor want = x.clone();
                    for (int64_t i = 0; i < ropeDim / 2; ++i) {
                        const int64_t u = halves ? i : 2 * i, w = halves ? i + ropeDim / 2 : 2 * i + 1;
                        const double a = double(j - p) * freq(i), x0 = x[u].item<double>(), x1 = x[w].item<double>();
                        want[u] = x0 * std::cos(a) - x1 * std::sin(a);
                        want[w] = x0 * std::sin(a) + x1 * std::cos(a);
                    }
                    EXPECT_TRUE(at::allclose(got[j], want, 1e-4, 1e-5))
                        << (halves ? "halves" : "adjacent") << " layer " << l << " head " << c << " row " << j << " (position " << p << ")";
                }
                EXPECT_TRUE(at::equal(cache.values(l)[c],
                                      capture->values(l)[c].index_select(0, at::tensor(std::vector<int64_t>(s.kept[l][c].begin(), s.kept[l][c].end()), at::kLong))));
            }
        }
        // The question's own rows sit at B-W .. B-1: turned back by T - B positions, not left.
        ASSERT_EQ(D, 32);
        EXPECT_FALSE(at::allclose(cache.keys(0)[0][B - 1], capture->keys(0)[0][T - 1]));
        // A decode step appends at position B.
        model.decode(7, cache);
        EXPECT_EQ(cache.nextPosition(), B + 1);
        EXPECT_EQ(cache.length(0, 0), B + 1);
        // A budget holding the prompt keeps it as it is.
        const Selection all = Press::create("finch-kvpress")->select(*capture, finch(T, W));
        CompressedCache whole(*capture, all, 0);
        for (int64_t c = 0; c < whole.heads(); ++c) EXPECT_TRUE(at::equal(whole.keys(1)[c], capture->keys(1)[c]));
    }
}

TEST(FinchKvpress, TensorsWithoutTheModelsRopeCannotBeTurnedAndBadSettingsAreOneLine) {
    const auto tensors = Capture::fromTensors({at::randn({4, 64, 8})}, {at::randn({2, 80, 8})}, {at::randn({2, 80, 8})});
    const Selection s = Press::create("finch-kvpress")->select(*tensors, finch(20, 4));  // the selection needs no model
    try {
        CompressedCache cache(*tensors, s);
        ADD_FAILURE() << "a tensors capture's keys were re-rotated";
    } catch (const Error& e) {
        EXPECT_STREQ(e.what(),
                     "finch-kvpress re-rotates the kept keys by the model's RoPE, which tensors given with --inputs do not carry");
    }
    auto message = [&](const PressParams& p) {
        try {
            Press::create("finch-kvpress")->select(*tensors, p);
        } catch (const Error& e) {
            return std::string(e.what());
        }
        return std::string();
    };
    EXPECT_EQ(message(finch(20, 65)), "--window 65 is above the 64 window queries the capture holds");
    EXPECT_EQ(message(finch(20, 0)), "--window must be at least 1");
    EXPECT_EQ(message(finch(4, 4)).rfind("--budget 4 must exceed --window 4", 0), 0u) << message(finch(4, 4));
    PressParams think = finch(20, 4);
    think.think = 0.25;
    EXPECT_EQ(message(think), "--think cannot prune finch-kvpress's keys: they are re-rotated after the selection, "
                              "which mixes the channels ThinK would score");
}

}  // namespace
}  // namespace kvlens
