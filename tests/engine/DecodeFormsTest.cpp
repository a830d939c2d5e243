// CriticalKV's, CriticalAdaKV's, Random's and SimLayerKV's forms for compression during
// decoding (DecodeCompressor), against references written from their definitions:
// CriticalKV keeps, beside the window, half of what it ranks by the scorer and the rest by
// (score + 1e-4) x ||W_o v||_1, each row's norm the mean over its readers of the value through
// their slices of the output projection (the capture's for the prompt's rows, W_o on the
// decoded ones); CriticalAdaKV does so on AdaKV's allocation of the layer; Random keeps the
// window and a fresh uniform draw of the older rows at each compression; SimLayerKV rolls its
// lazy layers as StreamingLLM does and leaves the others whole.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <string>
#include <utility>
#include <vector>

#include "core/Error.h"
#include "engine/compress/Capture.h"
#include "engine/compress/CompressedCache.h"
#include "engine/compress/DecodeCompressor.h"
#include "engine/compress/MethodEvaluator.h"
#include "engine/compress/presses/Press.h"
#include "engine/model/ModelLoader.h"
#include "engine/model/Sampler.h"
#include "AdaKvReference.h"
#include "DecodeError.h"

namespace kvlens {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// ||W_o^(h) v_t||_1 for every row t of `v` [n, D], averaged over the G query heads h reading KV
// head `c` (h = c G .. c G + G - 1); wo [E, H D] in double.
std::vector<double> normsReference(const at::Tensor& wo, const at::Tensor& v, int64_t c, int64_t G) {
    const int64_t D = v.size(1);
    at::Tensor sum = at::zeros({v.size(0)}, at::kDouble);
    for (int64_t g = 0; g < G; ++g) sum += at::matmul(v, wo.narrow(1, (c * G + g) * D, D).t()).abs().sum(1);
    sum /= double(G);
    return std::vector<double>(sum.data_ptr<double>(), sum.data_ptr<double>() + sum.numel());
}

// CriticalKV on one head: the NaN rows, then of the k ranked ones the max(firstAtLeast,
// floor(k / 2)) best by the score, the rest by (score + 1e-4) x norm; ties to the lower row.
std::vector<int64_t> criticalReference(const std::vector<double>& s, const std::vector<double>& norm, int64_t k,
                                       int64_t firstAtLeast) {
    std::vector<int64_t> kept, ranked;
    for (int64_t r = 0; r < int64_t(s.size()); ++r) (std::isnan(s[r]) ? kept : ranked).push_back(r);
    k = std::min<int64_t>(k, int64_t(ranked.size()));
    const int64_t first = std::min(k, std::max(firstAtLeast, k / 2));
    const std::vector<int64_t> order = test::byScore(ranked, s);
    kept.insert(kept.end(), order.begin(), order.begin() + first);
    std::vector<int64_t> rest(order.begin() + first, order.end());
    std::vector<double> second(s.size(), 0.0);
    for (int64_t r : rest) second[r] = (s[r] + 1e-4) * norm[r];
    std::sort(rest.begin(), rest.end());  // ties to the lower row
    const std::vector<int64_t> byNorm = test::byScore(rest, second);
    kept.insert(kept.end(), byNorm.begin(), byNorm.begin() + (k - first));
    std::sort(kept.begin(), kept.end());
    return kept;
}

// The rows of `t` at `rows`.
at::Tensor rowsAt(const at::Tensor& t, const std::vector<int64_t>& rows) {
    return t.index_select(0, at::tensor(rows, at::kLong));
}

// Hands each decode step's queries to the compressor and keeps them ([H, D] double per layer).
struct QueryTee : ForwardObserver {
    explicit QueryTee(DecodeCompressor& r) : rule(r) {}
    void onQueries(int64_t layer, const at::Tensor& q, int64_t position) override {
        if (static_cast<int64_t>(queries.size()) <= layer) queries.resize(static_cast<size_t>(layer) + 1);
        queries[static_cast<size_t>(layer)] = q.select(0, 0).to(at::kDouble).clone();
        rule.onQueries(layer, q, position);
    }
    // The rest of the observer's calls go to the compressor as they are.
    void onKeys(int64_t layer, const at::Tensor& keysSoFar) override { rule.onKeys(layer, keysSoFar); }
    bool wantsAttentionColumnSums() const override { return rule.wantsAttentionColumnSums(); }
    void onAttentionColumnSums(int64_t layer, const at::Tensor& sums) override { rule.onAttentionColumnSums(layer, sums); }
    DecodeCompressor& rule;
    std::vector<at::Tensor> queries;
};

// On the model (random:tiny, 8 query heads reading 4 KV heads): each compression of
// criticalkv and criticaladakv (scored by KNorm, and by TOVA: the step's attention, each
// head's own readers' mean, as their heads keep different rows) keeps what the references
// keep from the cache as it stood after the step, every 1 and 3 steps, in every layer.
TEST(DecodeCritical, TheSecondStageRanksByTheProjectedValueNormsOfEveryRow) {
    LoadedModel loaded = loadModel("random:tiny", c10::Device(c10::kCPU), c10::kFloat);
    std::vector<int32_t> prompt;
    for (int i = 0; i < 40; ++i) prompt.push_back(5 + (i * 29) % 200);
    const int64_t W = 4, B = 24, steps = 12;
    const double alpha = 0.2;
    for (const std::string method : {"criticalkv", "criticaladakv"}) {
        int compressions = 0, secondStageMatters = 0, uneven = 0;
        const std::vector<std::pair<std::string, int64_t>> runs = {{"knorm", 1}, {"knorm", 3}, {"tova", 1}, {"tova", 3}};
        for (const auto& [scorer, every] : runs) {
            auto capture = Capture::fromPrefill(*loaded.model, prompt, {}, {}, steps);
            PressParams p;
            p.method = method;
            p.scorer = scorer;
            p.budget = 30;
            p.window = W;
            p.alpha = alpha;
            capture->keepScoresFor(*loaded.model, p);
            const Selection selection = Press::create(method)->select(*capture, p);
            CompressedCache cache = CompressedCache(*capture, selection, steps).clone();
            p.budget = B;
            DecodeCompressor rule(p, every);
            rule.start(*capture, selection, loaded.model.get());
            QueryTee tee(rule);
            const int64_t L = cache.layers(), KV = cache.heads(), G = capture->queryHeads() / KV, D = capture->headDim();
            std::vector<at::Tensor> wo;
            for (int64_t l = 0; l < L; ++l) wo.push_back(loaded.model->weights().layers[l].wo.dense().to(at::kDouble));
            int32_t token = 7;
            for (int64_t step = 0; step < steps; ++step) {
                const at::Tensor logits = loaded.model->decode(token, cache, &tee);
                token = Sampler::argmax(logits.data_ptr<float>(), logits.numel());
                std::vector<std::vector<at::Tensor>> keys(L), values(L);
                for (int64_t l = 0; l < L; ++l) {
                    for (int64_t c = 0; c < KV; ++c) {
                        keys[l].push_back(cache.keys(l)[c].to(at::kDouble));
                        values[l].push_back(cache.values(l)[c].to(at::kDouble));
                    }
                }
                if (rule.afterStep(cache)) ++compressions;
                const bool due = (step + 1) % every == 0;
                const std::string where =
                    method + "(" + scorer + ") every " + std::to_string(every) + " step " + std::to_string(step);
                for (int64_t l = 0; l < L; ++l) {
                    // Scores: minus the key's L2 norm, or the step's softmax of q.k / sqrt(D) averaged
                    // over the head's readers; NaN on the window; norms from W_o.
                    std::vector<std::vector<double>> scores(KV), norms(KV);
                    int64_t total = 0;
                    for (int64_t c = 0; c < KV; ++c) {
                        const int64_t n = keys[l][c].size(0);
                        total += n;
                        at::Tensor attention = at::zeros({n}, at::kDouble);
                        for (int64_t g = 0; g < G; ++g)
                            attention += at::softmax(at::mv(keys[l][c], tee.queries[l][c * G + g]) / std::sqrt(double(D)), 0);
                        attention /= double(G);
                        for (int64_t r = 0; r < n; ++r) {
                            const double score = scorer == "knorm" ? -keys[l][c][r].norm().item<double>()
                                                                   : attention[r].item<double>();
                            scores[c].push_back(r >= n - W ? kNaN : score);
                        }
                        norms[c] = normsReference(wo[l], values[l][c], c, G);
                    }
                    std::vector<std::vector<int64_t>> kept(KV);
                    for (int64_t c = 0; c < KV; ++c) {
                        kept[c].resize(static_cast<size_t>(keys[l][c].size(0)));
                        std::iota(kept[c].begin(), kept[c].end(), 0);
                    }
                    if (due && method == "criticalkv") {
                        for (int64_t c = 0; c < KV; ++c) {
                            if (keys[l][c].size(0) <= B) continue;
                            kept[c] = criticalReference(scores[c], norms[c], B - W, 0);
                            // Without the second stage: the scorer's best alone.
                            if (kept[c] != criticalReference(scores[c], std::vector<double>(norms[c].size(), 1.0), B - W,
                                                             B - W))
                                ++secondStageMatters;
                        }
                    } else if (due && total > KV * B) {
                        const std::vector<std::vector<int64_t>> allocated = test::adaKvReference(scores, B, alpha);
                        const int64_t safeguard = int64_t(std::floor(alpha * double(B - W) + 1e-9));
                        for (int64_t c = 0; c < KV; ++c) {
                            const int64_t k = int64_t(allocated[c].size()) - W;
                            kept[c] = criticalReference(scores[c], norms[c], k, safeguard);
                            if (kept[c] != criticalReference(scores[c], std::vector<double>(norms[c].size(), 1.0), k, k))
                                ++secondStageMatters;
                            if (allocated[c].size() != allocated[0].size()) ++uneven;
                        }
                    }
                    for (int64_t c = 0; c < KV; ++c) {
                        ASSERT_EQ(cache.length(l, c), int64_t(kept[c].size())) << where << " layer " << l << " head " << c;
                        EXPECT_TRUE(at::equal(cache.keys(l)[c].to(at::kDouble), rowsAt(keys[l][c], kept[c])))
                            << where << " layer " << l << " head " << c;
                        EXPECT_TRUE(at::equal(cache.values(l)[c].to(at::kDouble), rowsAt(values[l][c], kept[c])))
                            << where << " layer " << l << " head " << c;
                    }
                }
            }
        }
        EXPECT_EQ(compressions, 2 * (12 + 4)) << method;  // the cache starts above B: every due step drops rows
        EXPECT_GT(secondStageMatters, 0) << method;  // the norms change what is kept
        if (method == "criticaladakv") {
            EXPECT_GT(uneven, 0);  // and AdaKV's heads differ in length
        }
    }
}

// Random's decode form: each compression keeps the last W rows and B - W of the older ones,
// each older row with the same chance whatever its age, a new draw each time; the same seed
// keeps the same rows, another seed other ones.
TEST(DecodeRandom, KeepsTheWindowAndAFreshUniformDrawOfTheOlderRows) {
    const int64_t KV = 2, T = 20, D = 8, W = 4, B = 12, every = 4;
    at::manual_seed(83);
    const auto capture = Capture::fromTensors({at::randn({KV, T, D})}, {at::randn({KV, T, D})}, {at::randn({KV, T, D})});
    PressParams p;
    p.method = "random";
    p.budget = 16;
    p.window = W;
    const Selection selection = Press::create("random")->select(*capture, p);
    p.budget = B;
    PressParams other = p;
    other.seed = 7;
    std::vector<CompressedCache> caches;
    std::vector<DecodeCompressor> rules = {DecodeCompressor(p, every), DecodeCompressor(p, every),
                                           DecodeCompressor(other, every)};
    for (auto& rule : rules) {
        caches.push_back(CompressedCache(*capture, selection, 400).clone());
        rule.start(*capture, selection);
    }
    std::vector<int64_t> survived(B + every - W, 0);  // per older row index, over every compression and head
    int64_t trials = 0, seedsDiffer = 0, headsDiffer = 0;
    std::vector<int64_t> lastRows;
    int64_t drawsRepeat = 0;
    for (int64_t step = 0; step < 300; ++step) {
        const at::Tensor k = at::randn({1, KV, D}), v = at::randn({1, KV, D});
        std::vector<at::Tensor> before;
        for (int64_t c = 0; c < KV; ++c) before.push_back(at::cat({caches[0].keys(0)[c], k[0][c].unsqueeze(0)}));
        for (size_t i = 0; i < caches.size(); ++i) {
            caches[i].append(0, k, v);
            rules[i].afterStep(caches[i]);
        }
        if ((step + 1) % every != 0) continue;
        std::vector<std::vector<int64_t>> rows(KV);
        for (int64_t c = 0; c < KV; ++c) {
            const at::Tensor now = caches[0].keys(0)[c];
            const int64_t n = before[c].size(0);
            ASSERT_EQ(now.size(0), B) << "step " << step;
            // Each kept row found among the rows before the compression, in order; the window last.
            for (int64_t i = 0, r = 0; i < B; ++i) {
                while (r < n && !at::equal(before[c][r], now[i])) ++r;
                ASSERT_LT(r, n) << "step " << step << " row " << i;
                rows[c].push_back(r);
            }
            for (int64_t i = 0; i < W; ++i) EXPECT_EQ(rows[c][B - W + i], n - W + i) << "step " << step;
            for (int64_t i = 0; i < B - W; ++i) ++survived[rows[c][i]];
            ++trials;
            EXPECT_TRUE(at::equal(caches[1].keys(0)[c], now)) << "step " << step;  // the same seed
            if (!at::equal(caches[2].keys(0)[c], now)) ++seedsDiffer;
        }
        if (rows[0] != rows[1]) ++headsDiffer;
        if (rows[0] == lastRows) ++drawsRepeat;
        lastRows = rows[0];
    }
    ASSERT_EQ(trials, 2 * 75);
    // 8 of the 12 older rows kept: each with chance 2/3 (sd 0.038 over 150 draws).
    for (size_t r = 0; r < survived.size(); ++r)
        EXPECT_NEAR(double(survived[r]) / double(trials), 2.0 / 3.0, 0.15) << "older row " << r;
    EXPECT_GT(seedsDiffer, 100);
    EXPECT_GT(headsDiffer, 50);
    EXPECT_LT(drawsRepeat, 10);

    // A budget never reached decodes as the full cache does.
    LoadedModel loaded = loadModel("random:tiny", c10::Device(c10::kCPU), c10::kFloat);
    std::vector<int32_t> prompt;
    for (int i = 0; i < 40; ++i) prompt.push_back(3 + (i * 31) % 200);
    auto model = Capture::fromPrefill(*loaded.model, prompt, {}, {}, 8);
    MethodEvaluator evaluator(*loaded.model, model, 8);
    PressParams roomy;
    roomy.method = "random";
    roomy.budget = 40 + 8 + 4;
    roomy.window = 8;
    const RunMetrics same = evaluator.evaluate(Press::create("random")->select(*model, roomy), DecodeCompressor(roomy, 1));
    EXPECT_EQ(same.tokens, same.fullTokens);
    EXPECT_DOUBLE_EQ(same.meanKl, 0.0);
}

// SimLayerKV's decode form: the layer whose last prompt query looks at a sink is lazy and rolls
// (the first sinks rows and the most recent, at the budget, when due); the layer looking at a
// middle position keeps every row.
TEST(DecodeSimLayerKv, TheLazyLayersRollAndTheOthersKeepEveryRow) {
    const int64_t KV = 2, T = 40, D = 8, B = 12, S = 4, every = 3;
    at::manual_seed(91);
    std::vector<at::Tensor> q, k, v;
    for (int64_t l = 0; l < 2; ++l) {
        at::Tensor keys = at::randn({KV, T, D}) * 0.3;
        keys.select(1, 0).zero_().select(1, 0).fill_(4.0);    // position 0: along channel 0
        keys.select(1, 20).zero_().select(1, 1).fill_(4.0);   // position 20: along channel 1
        at::Tensor queries = at::zeros({KV, 1, D});
        queries.select(2, l).fill_(4.0);  // layer 0 looks at position 0 (a sink), layer 1 at 20
        q.push_back(queries);
        k.push_back(keys);
        v.push_back(at::randn({KV, T, D}));
    }
    const auto capture = Capture::fromTensors(q, k, v);
    PressParams p;
    p.method = "simlayerkv";
    p.budget = B;
    p.sinks = S;
    p.lazy = 0.5;
    const Selection selection = Press::create("simlayerkv")->select(*capture, p);
    ASSERT_EQ(selection.layerBudgets, (std::vector<int64_t>{B, T}));  // layer 0 lazy, layer 1 not
    CompressedCache cache = CompressedCache(*capture, selection, 30).clone();
    DecodeCompressor rule(p, every);
    rule.start(*capture, selection);
    std::vector<std::vector<at::Tensor>> keys(2);
    for (int64_t l = 0; l < 2; ++l)
        for (int64_t c = 0; c < KV; ++c) keys[l].push_back(cache.keys(l)[c].clone());
    int compressions = 0;
    for (int64_t step = 0; step < 12; ++step) {
        for (int64_t l = 0; l < 2; ++l) {
            const at::Tensor kn = at::randn({1, KV, D});
            cache.append(l, kn, at::randn({1, KV, D}));
            for (int64_t c = 0; c < KV; ++c) keys[l][c] = at::cat({keys[l][c], kn[0][c].unsqueeze(0)});
        }
        if (rule.afterStep(cache)) ++compressions;
        for (int64_t c = 0; c < KV; ++c) {
            if ((step + 1) % every == 0) {  // the lazy layer: its sinks and its most recent
                const int64_t n = keys[0][c].size(0);
                keys[0][c] = at::cat({keys[0][c].narrow(0, 0, S), keys[0][c].narrow(0, n - (B - S), B - S)});
            }
            for (int64_t l = 0; l < 2; ++l) {
                ASSERT_EQ(cache.length(l, c), keys[l][c].size(0)) << "step " << step << " layer " << l;
                EXPECT_TRUE(at::equal(cache.keys(l)[c], keys[l][c])) << "step " << step << " layer " << l;
            }
        }
        EXPECT_EQ(cache.length(1, 0), T + step + 1);  // never compressed
    }
    EXPECT_EQ(compressions, 4);

    // A budget holding the whole prompt: its selection keeps every layer whole, so no layer is
    // lazy while decoding either, however long the output.
    PressParams whole = p;
    whole.budget = T;
    const Selection all = Press::create("simlayerkv")->select(*capture, whole);
    ASSERT_EQ(all.layerBudgets, (std::vector<int64_t>{T, T}));
    CompressedCache grown = CompressedCache(*capture, all, 30).clone();
    DecodeCompressor none(whole, 1);
    none.start(*capture, all);
    for (int64_t step = 0; step < 6; ++step) {
        for (int64_t l = 0; l < 2; ++l) grown.append(l, at::randn({1, KV, D}), at::randn({1, KV, D}));
        EXPECT_FALSE(none.afterStep(grown)) << "step " << step;
    }
    EXPECT_EQ(grown.length(0, 0), T + 6);

    // A budget never reached decodes as the full cache does.
    LoadedModel loaded = loadModel("random:tiny", c10::Device(c10::kCPU), c10::kFloat);
    std::vector<int32_t> prompt;
    for (int i = 0; i < 40; ++i) prompt.push_back(3 + (i * 23) % 200);
    auto model = Capture::fromPrefill(*loaded.model, prompt, {}, {}, 8);
    MethodEvaluator evaluator(*loaded.model, model, 8);
    PressParams roomy = p;
    roomy.budget = 40 + 8 + 4;
    const RunMetrics same = evaluator.evaluate(Press::create("simlayerkv")->select(*model, roomy), DecodeCompressor(roomy, 1));
    EXPECT_EQ(same.tokens, same.fullTokens);
    EXPECT_DOUBLE_EQ(same.meanKl, 0.0);
}

TEST(DecodeCritical, BadSettingsAreOneLine) {
    const auto message = [](const PressParams& p, int64_t every = 1) { return test::decodeError(p, every); };
    PressParams p;
    p.method = "criticalkv";
    p.scorer = "leverage";
    p.budget = 64;
    EXPECT_EQ(message(p), "--decode-every: criticalkv with --scorer leverage has no form for compression during "
                          "decoding here (adakv, chunkkv, perlayer, criticalkv and criticaladakv decode with --scorer "
                          "snapkv, h2o, tova, knorm, keydiff, lagkv, expected or cur)");
    p.scorer = "cur";
    p.budget = 36;
    EXPECT_EQ(message(p), "--budget 36 must exceed --window 32 + --sinks 4 (CriticalKV keeps them on every head)");
    p.method = "criticaladakv";
    p.scorer = "";
    p.budget = 32;
    EXPECT_EQ(message(p), "--budget 32 must exceed --window 32 (CriticalAdaKV keeps it on every head)");
    p.method = "random";
    EXPECT_EQ(message(p), "--budget 32 must exceed --window 32 (Random keeps the window's rows and draws the rest)");
    p.budget = 33;
    EXPECT_EQ(message(p), "");
    p.method = "simlayerkv";
    p.budget = 4;
    EXPECT_EQ(message(p), "--budget 4 must exceed --sinks 4 (the budget includes the sinks)");

    // Without the model, the decoded rows' norms cannot be computed.
    const auto capture = Capture::fromTensors({at::randn({2, 40, 8})}, {at::randn({2, 40, 8})}, {at::randn({2, 40, 8})});
    PressParams c;
    c.method = "criticalkv";
    c.budget = 40;
    c.window = 4;
    Selection selection = Press::create("snapkv")->select(*capture, [&] {
        PressParams s = c;
        s.method = "snapkv";
        return s;
    }());
    selection.params = c;
    DecodeCompressor rule(c, 1);
    try {
        rule.start(*capture, selection);
        FAIL() << "no error";
    } catch (const Error& e) {
        EXPECT_STREQ(e.what(), "--decode-every with criticalkv needs the model's output projection for the rows it "
                               "decodes, which tensors given with --inputs do not have");
    }
}

}  // namespace
}  // namespace kvlens
