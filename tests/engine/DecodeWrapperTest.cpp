// The wrappers' forms for compression during decoding (DecodeCompressor: adakv, chunkkv and
// perlayer around a --scorer's decode form), each against a double-precision reference
// written from its definition: ChunkKV keeps the best chunks of consecutive rows between the
// scorer's sinks and its window (or LagKV's tail); per-layer shares layers x (B - fixed) by
// the layer weights; AdaKV shares a layer's heads x B among heads whose always-kept rows
// differ (LagKV's tail) and ranks by TOVA's step attention. On the model each stays within
// the budget, and a budget never reached decodes as the full cache does.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <set>
#include <tuple>
#include <utility>

#include "core/Error.h"
#include "engine/compress/Capture.h"
#include "engine/compress/CompressedCache.h"
#include "engine/compress/DecodeCompressor.h"
#include "engine/compress/MethodEvaluator.h"
#include "engine/compress/presses/Press.h"
#include "engine/model/ModelLoader.h"
#include "engine/model/Sampler.h"
#include "AdaKvReference.h"
#include "LagReference.h"
#include "DecodeError.h"

namespace kvlens {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

PressParams params(const std::string& method, const std::string& scorer, int64_t budget) {
    PressParams p;
    p.method = method;
    p.scorer = scorer;
    p.budget = budget;
    p.sinks = 4;
    return p;
}

// Head c of `layer`'s keys and values at `selection`'s kept positions, in double ([n, D]).
std::pair<at::Tensor, at::Tensor> keptStates(const Capture& capture, const Selection& selection, int64_t layer,
                                             int64_t c) {
    const std::vector<int32_t>& kept = selection.kept[layer][static_cast<size_t>(c)];
    const at::Tensor idx = at::tensor(std::vector<int64_t>(kept.begin(), kept.end()), at::kLong);
    return {capture.keys(layer)[c].index_select(0, idx).to(at::kDouble),
            capture.values(layer)[c].index_select(0, idx).to(at::kDouble)};
}

// The scorer's score of every row of one head ([n, D] double keys and values), NaN where it
// always keeps, the last W rows included: knorm minus the L2 norm; lagkv LagKV's.
std::vector<double> scoresOf(const std::string& scorer, const at::Tensor& keys, const at::Tensor& values, int64_t W,
                             int64_t sinks, int64_t lag) {
    const int64_t n = keys.size(0);
    std::vector<double> s(n);
    if (scorer == "knorm") {
        for (int64_t r = 0; r < n; ++r) s[r] = -std::sqrt(keys[r].pow(2).sum().item<double>());
    } else {
        s = test::lagScores(keys.unsqueeze(0), values.unsqueeze(0), 0, n, sinks, lag);
    }
    for (int64_t r = std::max<int64_t>(0, n - W); r < n; ++r) s[r] = kNaN;
    return s;
}

using test::adaKvReference;
using test::byScore;

at::Tensor rowsAt(const at::Tensor& t, const std::vector<int64_t>& rows) {
    return t.index_select(0, at::tensor(rows, at::kLong));
}

int32_t greedy(const at::Tensor& logits) { return Sampler::argmax(logits.data_ptr<float>(), logits.numel()); }

// ChunkKV while decoding: when due, a head above B keeps its scorer's sinks, its last W rows
// (with LagKV's scorer the longer of them and the tail) and, of the rows between, the
// floor((B - kept whole) / chunk) chunks of `chunk` consecutive rows (from the first after the
// sinks, the last maybe short) of highest score sum, whole.
TEST(DecodeWrapper, ChunkKvKeepsTheBestChunksOfRowsBetweenTheSinksAndTheWindow) {
    const int64_t KV = 2, T = 30, D = 8, W = 4, C = 3, B = 16, S = 2, lag = 4;
    for (const std::string scorer : {"knorm", "lagkv"}) {
        int compressions = 0;
        for (int64_t every : {1, 3}) {
            at::manual_seed(61 + every + (scorer == "lagkv" ? 10 : 0));
            const auto capture =
                Capture::fromTensors({at::randn({KV, T, D})}, {at::randn({KV, T, D})}, {at::randn({KV, T, D})});
            PressParams p = params("chunkkv", scorer, 22);
            p.window = W;
            p.chunk = C;
            p.sinks = S;
            p.lag = lag;
            const Selection selection = Press::create("chunkkv")->select(*capture, p);
            CompressedCache cache(*capture, selection, 40);
            p.budget = B;
            DecodeCompressor rule(p, every);
            rule.start(*capture, selection);
            const std::string where = scorer + " every " + std::to_string(every);
            std::vector<at::Tensor> keys(KV), values(KV);
            for (int64_t c = 0; c < KV; ++c) std::tie(keys[c], values[c]) = keptStates(*capture, selection, 0, c);
            for (int64_t step = 0; step < 15; ++step) {
                const at::Tensor k = at::randn({1, KV, D}) * (1.0 + step % 3), v = at::randn({1, KV, D});
                cache.append(0, k, v);
                if (rule.afterStep(cache)) ++compressions;
                for (int64_t c = 0; c < KV; ++c) {
                    keys[c] = at::cat({keys[c], k[0][c].unsqueeze(0).to(at::kDouble)});
                    values[c] = at::cat({values[c], v[0][c].unsqueeze(0).to(at::kDouble)});
                    const int64_t n = keys[c].size(0);
                    if ((step + 1) % every == 0 && n > B) {
                        const std::vector<double> s = scoresOf(scorer, keys[c], values[c], W, S, lag);
                        int64_t lead = 0, trail = 0;
                        while (std::isnan(s[lead])) ++lead;
                        while (std::isnan(s[n - 1 - trail])) ++trail;
                        const int64_t ranked = n - lead - trail, chunks = (ranked + C - 1) / C;
                        std::vector<double> sum(chunks, 0.0);
                        for (int64_t i = 0; i < ranked; ++i) sum[i / C] += s[lead + i];
                        std::vector<int64_t> order(chunks);
                        std::iota(order.begin(), order.end(), 0);
                        order = byScore(order, sum);
                        order.resize(std::min(chunks, (B - lead - trail) / C));
                        std::vector<int64_t> kept;
                        for (int64_t r = 0; r < lead; ++r) kept.push_back(r);
                        for (int64_t chunk : order)
                            for (int64_t i = chunk * C; i < std::min(ranked, (chunk + 1) * C); ++i) kept.push_back(lead + i);
                        for (int64_t r = n - trail; r < n; ++r) kept.push_back(r);
                        std::sort(kept.begin(), kept.end());
                        ASSERT_LE(int64_t(kept.size()), B);
                        // Short of B by the budget's remainder and a short last chunk at most.
                        ASSERT_GE(int64_t(kept.size()), B - 2 * (C - 1)) << where;
                        keys[c] = rowsAt(keys[c], kept);
                        values[c] = rowsAt(values[c], kept);
                    }
                    ASSERT_EQ(cache.length(0, c), keys[c].size(0)) << where << " step " << step;
                    EXPECT_TRUE(at::equal(cache.keys(0)[c].to(at::kDouble), keys[c])) << where << " step " << step;
                    EXPECT_TRUE(at::equal(cache.values(0)[c].to(at::kDouble), values[c])) << where << " step " << step;
                }
            }
        }
        EXPECT_GE(compressions, 8) << scorer;  // 11 and 13 when written
    }
}

// ChunkKV around SnapKV sums the votes unpooled: with chunks of one row it keeps what SnapKV's
// decode form keeps with --kernel 1 (whose votes have their own double reference).
TEST(DecodeWrapper, ChunkKvOfOneRowChunksIsSnapKvUnpooled) {
    LoadedModel loaded = loadModel("random:tiny", c10::Device(c10::kCPU), c10::kFloat);
    std::vector<int32_t> prompt;
    for (int i = 0; i < 60; ++i) prompt.push_back(3 + (i * 37) % 200);
    const int64_t n = 12;
    auto capture = Capture::fromPrefill(*loaded.model, prompt, {}, {}, n);
    PressParams chunk = params("chunkkv", "", 24), snap = params("snapkv", "", 24);
    chunk.window = snap.window = 8;
    chunk.chunk = 1;
    snap.kernel = 1;
    const Selection selection = Press::create("snapkv")->select(*capture, snap);
    CompressedCache a(*capture, selection, n), b(*capture, selection, n);
    DecodeCompressor ruleA(chunk, 2), ruleB(snap, 2);
    ruleA.start(*capture, selection);
    ruleB.start(*capture, selection);
    int32_t token = greedy(capture->lastLogits());
    int compressions = 0;
    for (int64_t step = 0; step < n; ++step) {
        const int32_t next = greedy(loaded.model->decode(token, a, &ruleA));
        loaded.model->decode(token, b, &ruleB);
        token = next;
        compressions += ruleA.afterStep(a);
        ruleB.afterStep(b);
        for (int64_t l = 0; l < a.layers(); ++l)
            for (int64_t h = 0; h < a.heads(); ++h)
                ASSERT_TRUE(at::equal(a.keys(l)[h], b.keys(l)[h])) << "step " << step << " layer " << l << " head " << h;
    }
    EXPECT_EQ(compressions, n / 2);
}

// Per-layer while decoding: when due, the layers share layers x (B - W) in proportion to the
// weights (truncated, the remainder one by one from the first layer), each head keeping its
// W last rows and its layer's share of lowest key norm.
TEST(DecodeWrapper, PerLayerSharesTheBudgetByTheLayerWeights) {
    const int64_t KV = 2, T = 30, D = 8, W = 4, B = 14;
    int compressions = 0;
    for (int64_t every : {1, 3}) {
        at::manual_seed(71 + every);
        std::vector<at::Tensor> q, k, v;
        for (int l = 0; l < 2; ++l) {
            q.push_back(at::randn({KV, T, D}));
            k.push_back(at::randn({KV, T, D}));
            v.push_back(at::randn({KV, T, D}));
        }
        const auto capture = Capture::fromTensors(q, k, v);
        PressParams p = params("perlayer", "knorm", 20);
        p.window = W;
        p.layerWeights = {1.0, 2.0};
        const Selection selection = Press::create("perlayer")->select(*capture, p);
        CompressedCache cache(*capture, selection, 40);
        p.budget = B;
        DecodeCompressor rule(p, every);
        rule.start(*capture, selection);
        // 2 x (14 - 4) = 20 shared 1:2: 6.67 and 13.33 truncated to 6 and 13, the one left to
        // layer 0.
        const int64_t share[2] = {7 + W, 13 + W};
        std::vector<std::vector<at::Tensor>> keys(2, std::vector<at::Tensor>(KV));
        for (int64_t l = 0; l < 2; ++l)
            for (int64_t c = 0; c < KV; ++c) keys[l][c] = keptStates(*capture, selection, l, c).first;
        for (int64_t step = 0; step < 12; ++step) {
            for (int64_t l = 0; l < 2; ++l) {
                const at::Tensor kn = at::randn({1, KV, D}) * (1.0 + step % 3);
                cache.append(l, kn, at::randn({1, KV, D}));
                for (int64_t c = 0; c < KV; ++c) keys[l][c] = at::cat({keys[l][c], kn[0][c].unsqueeze(0).to(at::kDouble)});
            }
            if (rule.afterStep(cache)) ++compressions;
            int64_t total = 0;
            for (int64_t l = 0; l < 2; ++l) {
                for (int64_t c = 0; c < KV; ++c) {
                    const int64_t n = keys[l][c].size(0);
                    if ((step + 1) % every == 0 && n > share[l]) {
                        const std::vector<double> s = scoresOf("knorm", keys[l][c], keys[l][c], W, 0, 0);
                        std::vector<int64_t> rows(n - W);
                        std::iota(rows.begin(), rows.end(), 0);
                        std::vector<int64_t> kept = byScore(rows, s);
                        kept.resize(share[l] - W);
                        for (int64_t r = n - W; r < n; ++r) kept.push_back(r);
                        std::sort(kept.begin(), kept.end());
                        keys[l][c] = rowsAt(keys[l][c], kept);
                    }
                    ASSERT_EQ(cache.length(l, c), keys[l][c].size(0)) << "every " << every << " step " << step;
                    EXPECT_TRUE(at::equal(cache.keys(l)[c].to(at::kDouble), keys[l][c]))
                        << "every " << every << " step " << step << " layer " << l;
                    total += cache.length(l, c);
                }
            }
            if ((step + 1) % every == 0) {
                EXPECT_EQ(total, 2 * KV * B) << "every " << every << " step " << step;  // the mean at B
            }
        }
    }
    EXPECT_EQ(compressions, 12 + 4);
}

// AdaKV around LagKV while decoding: the heads' lengths differ, so do their tails (the last
// full partition with the remainder, kept whole with the sinks and the window); each head's
// pool is B less what it keeps whole, and the layer still holds exactly heads x B.
TEST(DecodeWrapper, AdaKvOfLagKvSharesTheLayerAmongHeadsOfDifferentTails) {
    const int64_t KV = 3, T = 30, D = 8, W = 2, B = 16, S = 2, lag = 4;
    const double alpha = 0.25;
    int compressions = 0, raggedTails = 0;
    for (int64_t every : {1, 3}) {
        at::manual_seed(81 + every);
        const at::Tensor scale = at::tensor({0.5f, 1.0f, 2.0f}).view({KV, 1, 1});
        const auto capture = Capture::fromTensors({at::randn({KV, T, D})}, {at::randn({KV, T, D}) * scale},
                                                  {at::randn({KV, T, D}) * scale});
        PressParams p = params("adakv", "lagkv", 22);
        p.window = W;
        p.sinks = S;
        p.lag = lag;
        p.alpha = alpha;
        const Selection selection = Press::create("adakv")->select(*capture, p);
        CompressedCache cache(*capture, selection, 40);
        p.budget = B;
        DecodeCompressor rule(p, every);
        rule.start(*capture, selection);
        std::vector<at::Tensor> keys(KV), values(KV);
        for (int64_t c = 0; c < KV; ++c) std::tie(keys[c], values[c]) = keptStates(*capture, selection, 0, c);
        for (int64_t step = 0; step < 15; ++step) {
            const at::Tensor k = at::randn({1, KV, D}) * scale.view({1, KV, 1}), v = at::randn({1, KV, D});
            cache.append(0, k, v);
            if (rule.afterStep(cache)) ++compressions;
            int64_t total = 0;
            for (int64_t c = 0; c < KV; ++c) {
                keys[c] = at::cat({keys[c], k[0][c].unsqueeze(0).to(at::kDouble)});
                values[c] = at::cat({values[c], v[0][c].unsqueeze(0).to(at::kDouble)});
                total += keys[c].size(0);
            }
            if ((step + 1) % every == 0 && total > KV * B) {
                std::vector<std::vector<double>> scores;
                std::set<int64_t> tails;
                for (int64_t c = 0; c < KV; ++c) {
                    scores.push_back(scoresOf("lagkv", keys[c], values[c], W, S, lag));
                    const int64_t n = keys[c].size(0);
                    tails.insert(n - (S + ((n - S) / lag - 1) * lag));
                }
                raggedTails += tails.size() > 1;
                const std::vector<std::vector<int64_t>> kept = adaKvReference(scores, B, alpha);
                for (int64_t c = 0; c < KV; ++c) {
                    keys[c] = rowsAt(keys[c], kept[c]);
                    values[c] = rowsAt(values[c], kept[c]);
                }
            }
            int64_t held = 0;
            for (int64_t c = 0; c < KV; ++c) {
                ASSERT_EQ(cache.length(0, c), keys[c].size(0)) << "every " << every << " step " << step << " head " << c;
                EXPECT_TRUE(at::equal(cache.keys(0)[c].to(at::kDouble), keys[c])) << "every " << every << " step " << step;
                EXPECT_TRUE(at::equal(cache.values(0)[c].to(at::kDouble), values[c])) << "every " << every << " step " << step;
                held += cache.length(0, c);
            }
            if ((step + 1) % every == 0) {
                EXPECT_EQ(held, KV * B) << "every " << every << " step " << step;
            }
        }
    }
    EXPECT_EQ(compressions, 15 + 5);
    EXPECT_GT(raggedTails, 0) << "the heads' tails never differed: the per-head pools went untested";
}

// AdaKV around TOVA while decoding: a row's score is the step's query's attention (softmax of
// q.k / sqrt(D) over the head's rows, the mean of the query heads reading it: AdaKV's heads
// keep different rows, so no layer mean); the last W rows kept; AdaKV shares heads x B.
TEST(DecodeWrapper, AdaKvOfTovaRanksByTheStepsAttention) {
    const int64_t H = 4, KV = 2, G = H / KV, T = 24, D = 8, W = 2, B = 12;
    const double alpha = 0.2;
    int compressions = 0;
    for (int64_t every : {1, 3}) {
        at::manual_seed(91 + every);
        const auto capture = Capture::fromTensors({at::randn({H, T, D})}, {at::randn({KV, T, D})}, {at::randn({KV, T, D})});
        PressParams p = params("adakv", "tova", 16);
        p.window = W;
        p.alpha = alpha;
        const Selection selection = Press::create("adakv")->select(*capture, p);
        CompressedCache cache(*capture, selection, 40);
        p.budget = B;
        DecodeCompressor rule(p, every);
        rule.start(*capture, selection);
        std::vector<at::Tensor> keys(KV);
        for (int64_t c = 0; c < KV; ++c) keys[c] = keptStates(*capture, selection, 0, c).first;
        for (int64_t step = 0; step < 12; ++step) {
            const at::Tensor q = at::randn({1, H, D}) * 2.0, k = at::randn({1, KV, D}), v = at::randn({1, KV, D});
            rule.onQueries(0, q, T + step);
            cache.append(0, k, v);
            if (rule.afterStep(cache)) ++compressions;
            int64_t total = 0;
            for (int64_t c = 0; c < KV; ++c) {
                keys[c] = at::cat({keys[c], k[0][c].unsqueeze(0).to(at::kDouble)});
                total += keys[c].size(0);
            }
            if ((step + 1) % every == 0 && total > KV * B) {
                std::vector<std::vector<double>> attention(KV);  // per cache head: its readers' mean
                for (int64_t c = 0; c < KV; ++c) {
                    const int64_t n = keys[c].size(0);
                    attention[c].assign(n, 0.0);
                    for (int64_t g = 0; g < G; ++g) {
                        const at::Tensor logits = at::mv(keys[c], q[0][c * G + g].to(at::kDouble)) / std::sqrt(double(D));
                        const at::Tensor prob = at::softmax(logits, 0);
                        for (int64_t r = 0; r < n; ++r) attention[c][r] += prob[r].item<double>() / double(G);
                    }
                }
                std::vector<std::vector<double>> scores = attention;
                for (auto& s : scores)
                    for (size_t r = s.size() - W; r < s.size(); ++r) s[r] = kNaN;
                const std::vector<std::vector<int64_t>> kept = adaKvReference(scores, B, alpha);
                for (int64_t c = 0; c < KV; ++c) keys[c] = rowsAt(keys[c], kept[c]);
            }
            for (int64_t c = 0; c < KV; ++c) {
                ASSERT_EQ(cache.length(0, c), keys[c].size(0)) << "every " << every << " step " << step << " head " << c;
                EXPECT_TRUE(at::allclose(cache.keys(0)[c].to(at::kDouble), keys[c], 0.0, 0.0))
                    << "every " << every << " step " << step;
            }
        }
    }
    EXPECT_EQ(compressions, 12 + 4);
}

// AdaKV around H2O while decoding: a row's score is the attention it has accumulated, the
// prompt's (none on tensors: zero) and every step's since (softmax of q.k / sqrt(D) over the
// head's rows, the mean of its readers), kept with the row through each compression; the last
// W rows kept; AdaKV shares heads x B.
TEST(DecodeWrapper, AdaKvOfH2oRanksByTheAttentionAccumulatedOverTheSteps) {
    const int64_t H = 4, KV = 2, G = H / KV, T = 24, D = 8, W = 2, B = 12;
    const double alpha = 0.2;
    int compressions = 0;
    for (int64_t every : {1, 3}) {
        at::manual_seed(101 + every);
        const auto capture = Capture::fromTensors({at::randn({H, T, D})}, {at::randn({KV, T, D})}, {at::randn({KV, T, D})});
        PressParams p = params("adakv", "knorm", 16);  // tensors have no H2O scores to select by
        p.window = W;
        p.alpha = alpha;
        const Selection selection = Press::create("adakv")->select(*capture, p);
        CompressedCache cache(*capture, selection, 40);
        p.scorer = "h2o";
        p.budget = B;
        DecodeCompressor rule(p, every);
        rule.start(*capture, selection);
        std::vector<at::Tensor> keys(KV);
        std::vector<std::vector<double>> acc(KV);
        for (int64_t c = 0; c < KV; ++c) {
            keys[c] = keptStates(*capture, selection, 0, c).first;
            acc[c].assign(keys[c].size(0), 0.0);
        }
        for (int64_t step = 0; step < 12; ++step) {
            const at::Tensor q = at::randn({1, H, D}) * 2.0, k = at::randn({1, KV, D}), v = at::randn({1, KV, D});
            rule.onQueries(0, q, T + step);
            cache.append(0, k, v);
            if (rule.afterStep(cache)) ++compressions;
            int64_t total = 0;
            for (int64_t c = 0; c < KV; ++c) {
                keys[c] = at::cat({keys[c], k[0][c].unsqueeze(0).to(at::kDouble)});
                acc[c].push_back(0.0);
                for (int64_t g = 0; g < G; ++g) {
                    const at::Tensor prob =
                        at::softmax(at::mv(keys[c], q[0][c * G + g].to(at::kDouble)) / std::sqrt(double(D)), 0);
                    for (size_t r = 0; r < acc[c].size(); ++r) acc[c][r] += prob[r].item<double>() / double(G);
                }
                total += keys[c].size(0);
            }
            if ((step + 1) % every == 0 && total > KV * B) {
                std::vector<std::vector<double>> scores = acc;
                for (auto& s : scores)
                    for (size_t r = s.size() - W; r < s.size(); ++r) s[r] = kNaN;
                const std::vector<std::vector<int64_t>> kept = adaKvReference(scores, B, alpha);
                for (int64_t c = 0; c < KV; ++c) {
                    keys[c] = rowsAt(keys[c], kept[c]);
                    std::vector<double> a;
                    for (int64_t r : kept[c]) a.push_back(acc[c][r]);
                    acc[c] = a;
                }
            }
            for (int64_t c = 0; c < KV; ++c) {
                ASSERT_EQ(cache.length(0, c), keys[c].size(0)) << "every " << every << " step " << step << " head " << c;
                EXPECT_TRUE(at::equal(cache.keys(0)[c].to(at::kDouble), keys[c])) << "every " << every << " step " << step;
                ASSERT_EQ(rule.accumulated(0, c).size(), acc[c].size());
                for (size_t r = 0; r < acc[c].size(); ++r) EXPECT_NEAR(rule.accumulated(0, c)[r], acc[c][r], 1e-5);
            }
        }
    }
    EXPECT_EQ(compressions, 12 + 4);
}

// On the model: every wrapper's decode form holds the budget after each compression (ChunkKV
// at or under it, AdaKV and per-layer the cache's mean at it), and a budget never reached
// decodes as the full cache does.
TEST(DecodeWrapper, EveryWrapperStaysWithinTheBudgetOnTheModel) {
    LoadedModel loaded = loadModel("random:tiny", c10::Device(c10::kCPU), c10::kFloat);
    std::vector<int32_t> prompt;
    for (int i = 0; i < 60; ++i) prompt.push_back(3 + (i * 37) % 200);
    const int64_t T = static_cast<int64_t>(prompt.size()), n = 12;
    auto capture = Capture::fromPrefill(*loaded.model, prompt, {}, {}, n);
    capture->keepScoresFor(*loaded.model, "h2o");  // the h2o scorer's prompt attention
    capture->keepScoresFor(*loaded.model, params("criticalkv", "", 40));  // the prompt's projected value norms
    MethodEvaluator evaluator(*loaded.model, capture, n);
    const std::vector<std::pair<std::string, std::string>> runs = {
        {"chunkkv", ""},     {"chunkkv", "lagkv"}, {"chunkkv", "tova"}, {"perlayer", ""}, {"perlayer", "cur"},
        {"perlayer", "lagkv"}, {"adakv", "lagkv"},  {"adakv", "tova"},   {"adakv", "h2o"}, {"chunkkv", "h2o"},
        {"criticalkv", ""},  {"criticalkv", "h2o"}, {"criticaladakv", "lagkv"}, {"criticaladakv", "tova"}};
    for (const auto& [method, scorer] : runs) {
        const std::string what = method + "(" + scorer + ")";
        PressParams tight = params(method, scorer, 28);
        tight.window = 8;
        tight.lag = 8;
        tight.chunk = 4;
        const RunMetrics within =
            evaluator.evaluate(Press::create(method)->select(*capture, tight), DecodeCompressor(tight, 2));
        ASSERT_EQ(within.cacheEntries.size(), static_cast<size_t>(n - 1)) << what;
        for (size_t i = 1; i < within.cacheEntries.size(); i += 2) {  // after each compression
            if (method == "chunkkv") {
                EXPECT_LE(within.cacheEntries[i], 28) << what << " step " << i + 1;
                EXPECT_GE(within.cacheEntries[i], 28 - 2 * 3) << what << " step " << i + 1;
            } else {
                EXPECT_EQ(within.cacheEntries[i], 28) << what << " step " << i + 1;
            }
        }
        PressParams roomy = params(method, scorer, T + n + 8);
        roomy.window = 8;
        roomy.lag = 8;
        roomy.chunk = 4;
        const RunMetrics same =
            evaluator.evaluate(Press::create(method)->select(*capture, roomy), DecodeCompressor(roomy, 1));
        EXPECT_EQ(same.tokens, same.fullTokens) << what;
        EXPECT_DOUBLE_EQ(same.meanKl, 0.0) << what;
    }
}

TEST(DecodeWrapper, BadSettingsAreOneLineNamingTheFlag) {
    const auto message = [](const PressParams& p, int64_t every = 1) { return test::decodeError(p, every); };
    EXPECT_EQ(message(params("chunkkv", "compactor", 64)),
              "--decode-every: chunkkv with --scorer compactor has no form for compression during decoding here "
              "(adakv, chunkkv, perlayer, criticalkv and criticaladakv decode with --scorer snapkv, h2o, tova, knorm, "
              "keydiff, lagkv, expected or cur)");
    PressParams chunk = params("chunkkv", "", 41);  // window 32, chunk 10
    EXPECT_EQ(message(chunk), "--budget 41 leaves 9 entries beside --window 32, less than one --chunk of 10");
    chunk.budget = 42;
    EXPECT_EQ(message(chunk), "");
    chunk.scorer = "cur";
    EXPECT_EQ(message(chunk), "--budget 42 leaves 6 entries beside --window 32 + --sinks 4, less than one --chunk of 10");
    PressParams lag = params("perlayer", "lagkv", 40);
    lag.lag = 20;  // tail up to 39 rows, longer than the window
    EXPECT_EQ(message(lag), "--budget 40 must exceed the longer of --window 32 and LagKV's tail (2 x --lag - 1 = 39 "
                            "rows) + --sinks 4 (per-layer keeps them on every head)");
    lag.budget = 44;
    EXPECT_EQ(message(lag), "");
    lag.method = "adakv";
    lag.budget = 43;
    EXPECT_EQ(message(lag), "--budget 43 must exceed the longer of --window 32 and LagKV's tail (2 x --lag - 1 = 39 "
                            "rows) + --sinks 4 (AdaKV keeps them on every head)");
    EXPECT_EQ(message(params("perlayer", "tova", 32)), "--budget 32 must exceed --window 32 (per-layer keeps it on every head)");
}

}  // namespace
}  // namespace kvlens
