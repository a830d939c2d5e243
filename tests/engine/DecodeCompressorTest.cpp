// Compression during decoding on random:tiny: the cache never holds more than the budget
// after a compression step, the rolling StreamingLLM keeps exactly the sinks and the most
// recent tokens (checked on layer 0, whose keys depend on the token and its position
// alone), KNorm keeps the lowest-norm rows of what the cache held (a double-precision
// reference), a budget that is never reached equals plain decoding, and bad settings are
// one line each.
#include "engine/compress/DecodeCompressor.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <set>
#include <tuple>
#include <utility>

#include "core/Error.h"
#include "engine/compress/Capture.h"
#include "engine/compress/CompressedCache.h"
#include "engine/compress/MethodEvaluator.h"
#include "engine/compress/presses/Press.h"
#include "engine/compress/presses/PyramidKvPress.h"
#include "engine/model/ModelLoader.h"
#include "engine/model/Sampler.h"
#include "LagReference.h"
#include "DecodeError.h"

namespace kvlens {
namespace {

struct Tiny {
    LoadedModel loaded = loadModel("random:tiny", c10::Device(c10::kCPU), c10::kFloat);
    std::vector<int32_t> prompt;
    Tiny() {
        for (int i = 0; i < 60; ++i) prompt.push_back(3 + (i * 37) % 200);
    }
};

Tiny& tiny() {
    static Tiny* t = new Tiny;
    return *t;
}

PressParams params(const std::string& method, int64_t budget) {
    PressParams p;
    p.method = method;
    p.budget = budget;
    p.sinks = 4;
    return p;
}

// softmax_r(q . k_r / sqrt(D)) in double: one query [D] over rows of keys.
std::vector<double> attentionOf(const at::Tensor& q, const std::vector<std::vector<double>>& keys) {
    const int64_t D = q.size(0);
    std::vector<double> logit(keys.size());
    for (size_t r = 0; r < keys.size(); ++r) {
        double dot = 0.0;
        for (int64_t d = 0; d < D; ++d) dot += q[d].item<double>() * keys[r][d];
        logit[r] = dot / std::sqrt(double(D));
    }
    const double top = *std::max_element(logit.begin(), logit.end());
    double z = 0.0;
    for (double& x : logit) z += (x = std::exp(x - top));
    for (double& x : logit) x /= z;
    return logit;
}

// Layer 0's keys and values of head `c` at `selection`'s kept positions, in double ([n, D]
// each): a decode test's reference rows before its first step.
std::pair<at::Tensor, at::Tensor> keptStates(const Capture& capture, const Selection& selection, int64_t c) {
    const std::vector<int32_t>& kept = selection.kept[0][static_cast<size_t>(c)];
    const at::Tensor idx = at::tensor(std::vector<int64_t>(kept.begin(), kept.end()), at::kLong);
    return {capture.keys(0)[c].index_select(0, idx).to(at::kDouble),
            capture.values(0)[c].index_select(0, idx).to(at::kDouble)};
}

int32_t greedy(const at::Tensor& logits) { return Sampler::argmax(logits.data_ptr<float>(), logits.numel()); }

TEST(DecodeCompressor, KeepRowsKeepsThoseRowsAndAppendsAfterThem) {
    Tiny& t = tiny();
    auto capture = Capture::fromPrefill(*t.loaded.model, t.prompt, {}, {}, 8);
    CompressedCache cache(*capture, Press::create("streamingllm")->select(*capture, params("streamingllm", 20)), 8);
    const at::Tensor before = cache.keys(1)[1].clone(), other = cache.keys(1)[0].clone();
    cache.keepRows(1, 1, {0, 2, 5, 19});
    EXPECT_EQ(cache.length(1, 1), 4);
    EXPECT_TRUE(at::equal(cache.keys(1)[1], before.index_select(0, at::tensor({0, 2, 5, 19}, at::kLong))));
    EXPECT_TRUE(at::equal(cache.keys(1)[0], other));  // the other head as it was
    // The next token lands after the kept rows.
    t.loaded.model->decode(7, cache);
    EXPECT_EQ(cache.length(1, 1), 5);
    EXPECT_EQ(cache.length(1, 0), 21);
    EXPECT_THROW(cache.keepRows(1, 1, {3, 2}), Error);
    EXPECT_THROW(cache.keepRows(1, 1, {0, 5}), Error);  // past the head's 5 rows
    // A FullKV cache that reads the capture's buffers refuses.
    PressParams full;
    full.method = "full";
    CompressedCache borrowed(*capture, Press::create("full")->select(*capture, full), 8);
    ASSERT_TRUE(borrowed.borrowsCapture());
    try {
        borrowed.keepRows(0, 0, {0});
        ADD_FAILURE() << "a borrowing cache dropped rows";
    } catch (const Error& e) {
        EXPECT_STREQ(e.what(), "a cache that borrows the capture's buffers cannot drop rows: clone it first");
    }
}

TEST(DecodeCompressor, RollingStreamingLlmKeepsTheSinksAndTheMostRecent) {
    Tiny& t = tiny();
    const int64_t T = static_cast<int64_t>(t.prompt.size()), B = 24, S = 4, n = 30;
    auto capture = Capture::fromPrefill(*t.loaded.model, t.prompt, {}, {}, n);
    PressParams full;
    full.method = "full";
    CompressedCache reference(*capture, Press::create("full")->select(*capture, full), n);
    const PressParams p = params("streamingllm", B);
    CompressedCache cache(*capture, Press::create("streamingllm")->select(*capture, p), n);
    DecodeCompressor rule(p, 1);
    int32_t token = greedy(capture->lastLogits());
    for (int64_t step = 0; step < n; ++step) {
        t.loaded.model->decode(token, reference);
        token = greedy(t.loaded.model->decode(token, cache));
        rule.afterStep(cache);
        const int64_t seen = T + step + 1;  // tokens the cache has been fed
        std::vector<int64_t> expected;
        for (int64_t r = 0; r < S; ++r) expected.push_back(r);
        for (int64_t r = seen - (B - S); r < seen; ++r) expected.push_back(r);
        const at::Tensor want = at::tensor(expected, at::kLong);
        for (int64_t h = 0; h < cache.heads(); ++h) {
            ASSERT_EQ(cache.length(0, h), B) << "step " << step;
            EXPECT_TRUE(at::allclose(cache.keys(0)[h], reference.keys(0)[h].index_select(0, want), 1e-5, 1e-6))
                << "step " << step << " head " << h;
            for (int64_t l = 1; l < cache.layers(); ++l) EXPECT_LE(cache.length(l, h), B);
        }
    }
}

TEST(DecodeCompressor, KnormKeepsTheLowestNormRowsOfWhatTheCacheHeld) {
    Tiny& t = tiny();
    const int64_t B = 40, n = 12;
    auto capture = Capture::fromPrefill(*t.loaded.model, t.prompt, {}, {}, n);
    const PressParams p = params("knorm", B);
    CompressedCache cache(*capture, Press::create("knorm")->select(*capture, p), n);
    DecodeCompressor rule(p, 3);  // every third step: up to B + 2 rows in between
    int32_t token = greedy(capture->lastLogits());
    int compressions = 0;
    for (int64_t step = 0; step < n; ++step) {
        token = greedy(t.loaded.model->decode(token, cache));
        std::vector<at::Tensor> before;
        for (int64_t l = 0; l < cache.layers(); ++l)
            for (const at::Tensor& k : cache.keys(l)) before.push_back(k.to(at::kDouble).clone());
        const bool dropped = rule.afterStep(cache);
        compressions += dropped;
        size_t i = 0;
        for (int64_t l = 0; l < cache.layers(); ++l) {
            for (int64_t h = 0; h < cache.heads(); ++h, ++i) {
                const at::Tensor& k = before[i];
                EXPECT_LE(cache.length(l, h), B + 2);
                if ((step + 1) % 3 != 0 || k.size(0) <= B) {
                    EXPECT_EQ(cache.length(l, h), k.size(0));
                    continue;
                }
                // Reference: the B rows of lowest norm (ties to the lower row), ascending.
                std::vector<double> norms(k.size(0));
                for (int64_t r = 0; r < k.size(0); ++r) norms[r] = k[r].pow(2).sum().sqrt().item<double>();
                std::vector<int64_t> order(norms.size());
                std::iota(order.begin(), order.end(), 0);
                std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return norms[a] < norms[b]; });
                order.resize(B);
                std::sort(order.begin(), order.end());
                ASSERT_EQ(cache.length(l, h), B);
                EXPECT_TRUE(at::equal(cache.keys(l)[h].to(at::kDouble), k.index_select(0, at::tensor(order, at::kLong))))
                    << "step " << step << " layer " << l << " head " << h;
            }
        }
    }
    EXPECT_EQ(compressions, 4);
}

TEST(DecodeCompressor, TheEvaluatorStaysWithinTheBudgetAndEqualsPlainDecodeWhenNeverReached) {
    Tiny& t = tiny();
    const int64_t T = static_cast<int64_t>(t.prompt.size()), n = 24;
    auto capture = Capture::fromPrefill(*t.loaded.model, t.prompt, {}, {}, n);
    MethodEvaluator evaluator(*t.loaded.model, capture, n);
    // A budget the decode never reaches: plain decoding, the cache growing by one a step.
    const PressParams roomy = params("streamingllm", T + n + 8);
    const RunMetrics same =
        evaluator.evaluate(Press::create("streamingllm")->select(*capture, roomy), DecodeCompressor(roomy, 1));
    EXPECT_EQ(same.tokens, same.fullTokens);
    EXPECT_DOUBLE_EQ(same.meanKl, 0.0);
    ASSERT_EQ(same.cacheEntries.size(), static_cast<size_t>(n - 1));
    for (int64_t i = 0; i < n - 1; ++i) EXPECT_EQ(same.cacheEntries[i], T + i + 1);
    // A tight one: never above it after a compression step (here every step).
    const PressParams tight = params("streamingllm", 20);
    const RunMetrics within =
        evaluator.evaluate(Press::create("streamingllm")->select(*capture, tight), DecodeCompressor(tight, 1));
    ASSERT_EQ(within.cacheEntries.size(), static_cast<size_t>(n - 1));
    for (int64_t e : within.cacheEntries) EXPECT_EQ(e, 20);
    // Every 5 steps: up to 4 more in between.
    const RunMetrics sometimes =
        evaluator.evaluate(Press::create("streamingllm")->select(*capture, tight), DecodeCompressor(tight, 5));
    EXPECT_EQ(*std::max_element(sometimes.cacheEntries.begin(), sometimes.cacheEntries.end()), 24);
    EXPECT_EQ(*std::min_element(sometimes.cacheEntries.begin(), sometimes.cacheEntries.end()), 20);
    // Without it the cache grows as it always did.
    const RunMetrics grows = evaluator.evaluate(Press::create("streamingllm")->select(*capture, tight));
    EXPECT_TRUE(grows.cacheEntries.empty());
    // The bytes really allocated: every head's 20 entries and the room for n decode steps.
    const int64_t perRow = 2 * capture->headDim() * capture->keys(0).element_size();
    EXPECT_EQ(grows.bytes, capture->layers() * capture->kvHeads() * 20 * perRow);
    EXPECT_EQ(grows.allocatedBytes, capture->layers() * capture->kvHeads() * (20 + n) * perRow);
}

// H2O's rolling form against a reference written here in double: each step, every row's
// accumulated attention grows by the step's softmax(q.k / sqrt(D)) over the rows the head then
// holds (the new one included), averaged over the query heads reading that head; when due,
// a head above the budget keeps its `window` most recent rows and, of the older ones, the
// budget - window of highest accumulated attention (ties to the lower row).
TEST(DecodeCompressor, RollingH2oKeepsTheRecentRowsAndTheHeavyHitters) {
    const int64_t H = 4, KV = 2, T = 16, D = 8, B = 12, W = 3, G = H / KV;
    for (int64_t every : {1, 3}) {
        at::manual_seed(5 + every);
        const auto capture = Capture::fromTensors({at::randn({H, T, D})}, {at::randn({KV, T, D})}, {at::randn({KV, T, D})});
        PressParams all = params("streamingllm", T);  // keeps the whole prompt
        const Selection selection = Press::create("streamingllm")->select(*capture, all);
        CompressedCache cache(*capture, selection, 40);
        PressParams p = params("h2o", B);
        p.window = W;
        DecodeCompressor rule(p, every);
        rule.start(*capture, selection);  // no H2O scores in tensors: the prompt's rows start at 0
        // The reference: per KV head, its rows' keys and accumulated attention.
        std::vector<std::vector<std::vector<double>>> keys(KV);
        std::vector<std::vector<double>> acc(KV, std::vector<double>(T, 0.0));
        const at::Tensor k0 = capture->keys(0).to(at::kDouble);
        for (int64_t c = 0; c < KV; ++c)
            for (int64_t t = 0; t < T; ++t) keys[c].push_back(std::vector<double>(k0[c][t].data_ptr<double>(), k0[c][t].data_ptr<double>() + D));
        int compressions = 0;
        for (int64_t step = 0; step < 20; ++step) {
            const at::Tensor q = at::randn({1, H, D}) * 2.0, k = at::randn({1, KV, D}), v = at::randn({1, KV, D});
            rule.onQueries(0, q, T + step);
            cache.append(0, k, v);
            const at::Tensor qd = q.to(at::kDouble), kd = k.to(at::kDouble);
            for (int64_t c = 0; c < KV; ++c) {
                keys[c].push_back(std::vector<double>(kd[0][c].data_ptr<double>(), kd[0][c].data_ptr<double>() + D));
                acc[c].push_back(0.0);
                const size_t n = keys[c].size();
                for (int64_t g = 0; g < G; ++g) {
                    const std::vector<double> prob = attentionOf(qd[0][c * G + g], keys[c]);
                    for (size_t r = 0; r < n; ++r) acc[c][r] += prob[r] / double(G);
                }
            }
            const bool due = (step + 1) % every == 0;
            if (rule.afterStep(cache)) ++compressions;
            for (int64_t c = 0; c < KV; ++c) {
                const int64_t n = int64_t(keys[c].size());
                if (due && n > B) {
                    std::vector<int64_t> older(n - W);
                    std::iota(older.begin(), older.end(), 0);
                    std::stable_sort(older.begin(), older.end(), [&](int64_t a, int64_t b) { return acc[c][a] > acc[c][b]; });
                    std::vector<int64_t> kept(older.begin(), older.begin() + (B - W));
                    std::sort(kept.begin(), kept.end());
                    for (int64_t r = n - W; r < n; ++r) kept.push_back(r);
                    std::vector<std::vector<double>> k2;
                    std::vector<double> a2;
                    for (int64_t r : kept) {
                        k2.push_back(keys[c][r]);
                        a2.push_back(acc[c][r]);
                    }
                    keys[c] = k2;
                    acc[c] = a2;
                }
                ASSERT_EQ(cache.length(0, c), int64_t(keys[c].size())) << "every " << every << " step " << step;
                const at::Tensor got = cache.keys(0)[c].to(at::kDouble);
                for (size_t r = 0; r < keys[c].size(); ++r)
                    for (int64_t d = 0; d < D; ++d)
                        ASSERT_EQ(got[r][d].item<double>(), keys[c][r][d]) << "every " << every << " step " << step << " row " << r;
                const std::vector<double>& mine = rule.accumulated(0, c);
                ASSERT_EQ(mine.size(), acc[c].size());
                for (size_t r = 0; r < mine.size(); ++r) EXPECT_NEAR(mine[r], acc[c][r], 1e-5);
            }
        }
        EXPECT_GT(compressions, 0);
    }
}

// H2O's rolling form ranks its accumulated attention in double: rows 0 and 1 get the same
// attention at the first step and, at the second, about 6e-13 and 2e-12 more, far under
// half a float ulp of their sum. Cast to float they tie and the older row 0 stays (the bug
// the review found); in double row 1 holds more and stays.
TEST(DecodeCompressor, RollingH2oRanksInDoubleNotAFloatCastThatMakesTies) {
    const int64_t T = 4, D = 2, B = 5;
    const at::Tensor keys = at::tensor({0.0f, -10.0f, 0.0f, -9.0f, 5.0f, 10.0f, 0.0f, 0.0f}).view({1, T, D});
    const auto capture = Capture::fromTensors({at::zeros({1, T, D})}, {keys}, {at::randn({1, T, D})});
    const Selection all = Press::create("streamingllm")->select(*capture, params("streamingllm", T));
    CompressedCache cache(*capture, all, 8);
    PressParams p = params("h2o", B);
    p.window = 1;
    DecodeCompressor rule(p, 2);
    rule.start(*capture, all);
    const at::Tensor step1 = at::tensor({1.0f, 0.0f}).view({1, 1, D}), step2 = at::tensor({0.0f, 2.0f}).view({1, 1, D});
    for (const at::Tensor& q : {step1, step2}) {
        rule.onQueries(0, q, cache.length(0, 0));
        cache.append(0, at::zeros({1, 1, D}), at::zeros({1, 1, D}));
        rule.afterStep(cache);
    }
    const std::vector<double>& acc = rule.accumulated(0, 0);
    ASSERT_EQ(acc.size(), size_t(B));
    // Rows 1 .. 5 of the six: the dominant row 2, rows 3 and 4 (keys 0), row 1 over row 0, the recent row 5.
    const at::Tensor kept = cache.keys(0)[0];
    const std::vector<float> want = {0.0f, -9.0f, 5.0f, 10.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f};
    ASSERT_EQ(kept.size(0), B);
    for (int64_t r = 0; r < B; ++r)
        for (int64_t d = 0; d < D; ++d) EXPECT_EQ(kept[r][d].item<float>(), want[size_t(r * D + d)]) << "row " << r;
}

// TOVA's rolling form against a double reference: when due, every head keeps the B rows the
// step's query attends to most, its attention averaged over all the layer's query heads (the
// heads hold the same rows, from a TOVA selection), ties to the lower row.
TEST(DecodeCompressor, RollingTovaKeepsWhatTheStepsQueryAttendsToMost) {
    const int64_t H = 4, KV = 2, T = 16, D = 8, B = 12, G = H / KV;
    for (int64_t every : {1, 3}) {
        at::manual_seed(11 + every);
        const auto capture = Capture::fromTensors({at::randn({H, T, D})}, {at::randn({KV, T, D})}, {at::randn({KV, T, D})});
        const Selection selection = Press::create("tova")->select(*capture, params("tova", 14));
        CompressedCache cache(*capture, selection, 40);
        DecodeCompressor rule(params("tova", B), every);
        rule.start(*capture, selection);
        std::vector<std::vector<std::vector<double>>> keys(KV);
        const at::Tensor k0 = capture->keys(0).to(at::kDouble);
        for (int64_t c = 0; c < KV; ++c)
            for (int32_t t : selection.kept[0][c])
                keys[c].push_back(std::vector<double>(k0[c][t].data_ptr<double>(), k0[c][t].data_ptr<double>() + D));
        int compressions = 0;
        for (int64_t step = 0; step < 12; ++step) {
            const at::Tensor q = at::randn({1, H, D}) * 2.0, k = at::randn({1, KV, D}), v = at::randn({1, KV, D});
            rule.onQueries(0, q, T + step);
            cache.append(0, k, v);
            const at::Tensor qd = q.to(at::kDouble), kd = k.to(at::kDouble);
            for (int64_t c = 0; c < KV; ++c)
                keys[c].push_back(std::vector<double>(kd[0][c].data_ptr<double>(), kd[0][c].data_ptr<double>() + D));
            const size_t n = keys[0].size();
            std::vector<double> score(n, 0.0);
            for (int64_t h = 0; h < H; ++h) {
                const std::vector<double> prob = attentionOf(qd[0][h], keys[h / G]);
                for (size_t r = 0; r < n; ++r) score[r] += prob[r] / double(H);
            }
            if (rule.afterStep(cache)) ++compressions;
            if ((step + 1) % every == 0 && int64_t(n) > B) {
                std::vector<int64_t> order(n);
                std::iota(order.begin(), order.end(), 0);
                std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return score[a] > score[b]; });
                std::vector<int64_t> kept(order.begin(), order.begin() + B);
                std::sort(kept.begin(), kept.end());
                for (int64_t c = 0; c < KV; ++c) {
                    std::vector<std::vector<double>> k2;
                    for (int64_t r : kept) k2.push_back(keys[c][r]);
                    keys[c] = k2;
                }
            }
            for (int64_t c = 0; c < KV; ++c) {
                ASSERT_EQ(cache.length(0, c), int64_t(keys[c].size())) << "every " << every << " step " << step;
                const at::Tensor got = cache.keys(0)[c].to(at::kDouble);
                for (size_t r = 0; r < keys[c].size(); ++r)
                    for (int64_t d = 0; d < D; ++d)
                        ASSERT_EQ(got[r][d].item<double>(), keys[c][r][d]) << "every " << every << " step " << step << " row " << r;
            }
        }
        EXPECT_GT(compressions, 0);
    }
}

// On the model: with the prompt's H2O scores, the cache stays at the budget after every
// compression step, and a budget never reached decodes as the full cache does.
TEST(DecodeCompressor, RollingH2oStaysWithinTheBudgetOnTheModel) {
    Tiny& t = tiny();
    const int64_t T = static_cast<int64_t>(t.prompt.size()), n = 16;
    auto capture = Capture::fromPrefill(*t.loaded.model, t.prompt, {}, {}, n);
    capture->keepScoresFor(*t.loaded.model, "h2o");
    MethodEvaluator evaluator(*t.loaded.model, capture, n);
    PressParams tight = params("h2o", 24);
    tight.window = 8;
    {
        // start() begins each kept row at its position's prompt score, the mean of the KV
        // head's query heads (h = c G + g), as the press ranked them.
        const Selection s = Press::create("h2o")->select(*capture, tight);
        DecodeCompressor rule(tight, 1);
        rule.start(*capture, s);
        const int64_t G = capture->queryHeads() / capture->kvHeads();
        for (int64_t l = 0; l < capture->layers(); ++l) {
            const at::Tensor h2o = capture->h2oScores(l).to(at::kDouble);
            for (int64_t c = 0; c < capture->kvHeads(); ++c) {
                ASSERT_EQ(rule.accumulated(l, c).size(), s.kept[l][c].size());
                for (size_t i = 0; i < s.kept[l][c].size(); ++i) {
                    double want = 0.0;
                    for (int64_t g = 0; g < G; ++g) want += h2o[c * G + g][s.kept[l][c][i]].item<double>() / double(G);
                    EXPECT_NEAR(rule.accumulated(l, c)[i], want, 1e-6 * std::max(1.0, want));
                }
            }
        }
    }
    const RunMetrics within = evaluator.evaluate(Press::create("h2o")->select(*capture, tight), DecodeCompressor(tight, 1));
    ASSERT_EQ(within.cacheEntries.size(), static_cast<size_t>(n - 1));
    for (int64_t e : within.cacheEntries) EXPECT_EQ(e, 24);
    PressParams roomy = params("h2o", T + n + 8);
    roomy.window = 8;
    const RunMetrics same = evaluator.evaluate(Press::create("h2o")->select(*capture, roomy), DecodeCompressor(roomy, 1));
    EXPECT_EQ(same.tokens, same.fullTokens);
    EXPECT_DOUBLE_EQ(same.meanKl, 0.0);
}

// SnapKV's decode form against a double reference written from its definition: the window is
// the last W queries of the sequence (the prompt's, then each step's); when due, a head above
// the budget keeps its last W rows and, of the rows before them, the B - W of most votes: each
// window query's causal softmax(q.k / sqrt(D)) over the head's rows (query i of W sees rows up
// to n - W + i), summed over the window, averaged over the query heads reading the head,
// pooled along the rows (kernel 3, max or avg with zeros outside), ties to the lower row.
TEST(DecodeCompressor, SnapKvsDecodeFormVotesWithTheLastWindowQueries) {
    const int64_t H = 4, KV = 2, T = 20, D = 8, B = 12, W = 4, K = 3;
    int compressions = 0;
    for (GqaMode mode : {GqaMode::KvHead, GqaMode::QueryHead}) {
        for (Pooling pooling : {Pooling::Max, Pooling::Avg}) {
            for (int64_t every : {1, 3}) {
                at::manual_seed(21 + every + 2 * int(pooling) + 4 * int(mode));
                const auto capture =
                    Capture::fromTensors({at::randn({H, T, D})}, {at::randn({KV, T, D})}, {at::randn({KV, T, D})});
                PressParams p = params("snapkv", 16);
                p.window = W;
                p.kernel = K;
                p.pooling = pooling;
                p.gqa = mode;
                const Selection selection = Press::create("snapkv")->select(*capture, p);
                CompressedCache cache(*capture, selection, 40);
                p.budget = B;
                DecodeCompressor rule(p, every);
                rule.start(*capture, selection);
                const std::string where = std::string(gqaModeName(mode)) + (pooling == Pooling::Max ? " max" : " avg") +
                                          " every " + std::to_string(every);
                // The reference: each cache head's rows, the window's queries per query head.
                const int64_t heads = cache.heads();
                ASSERT_EQ(heads, mode == GqaMode::KvHead ? KV : H);
                auto kvOf = [&](int64_t c) { return mode == GqaMode::KvHead ? c : c / (H / KV); };
                auto readers = [&](int64_t c) {
                    std::vector<int64_t> r;
                    for (int64_t h = 0; h < H; ++h)
                        if ((mode == GqaMode::KvHead ? h / (H / KV) : h) == c) r.push_back(h);
                    return r;
                };
                std::vector<std::vector<std::vector<double>>> keys(heads), window(H);
                const at::Tensor k0 = capture->keys(0).to(at::kDouble), q0 = capture->windowQueries(0).to(at::kDouble);
                auto row = [&](const at::Tensor& t) { return std::vector<double>(t.data_ptr<double>(), t.data_ptr<double>() + D); };
                for (int64_t c = 0; c < heads; ++c)
                    for (int32_t t : selection.kept[0][c]) keys[c].push_back(row(k0[kvOf(c)][t].contiguous()));
                for (int64_t h = 0; h < H; ++h)
                    for (int64_t t = T - W; t < T; ++t) window[h].push_back(row(q0[h][t].contiguous()));
                for (int64_t step = 0; step < 14; ++step) {
                    const at::Tensor q = at::randn({1, H, D}) * 2.0, k = at::randn({1, KV, D}), v = at::randn({1, KV, D});
                    rule.onQueries(0, q, T + step);
                    cache.append(0, k, v);
                    const at::Tensor qd = q.to(at::kDouble), kd = k.to(at::kDouble);
                    for (int64_t h = 0; h < H; ++h) {
                        window[h].push_back(row(qd[0][h].contiguous()));
                        window[h].erase(window[h].begin());
                    }
                    for (int64_t c = 0; c < heads; ++c) keys[c].push_back(row(kd[0][kvOf(c)].contiguous()));
                    if (rule.afterStep(cache)) ++compressions;
                    for (int64_t c = 0; c < heads; ++c) {
                        const int64_t n = int64_t(keys[c].size());
                        if ((step + 1) % every == 0 && n > B) {
                            std::vector<double> votes(n - W, 0.0);
                            const std::vector<int64_t> rs = readers(c);
                            for (int64_t h : rs) {
                                for (int64_t i = 0; i < W; ++i) {
                                    std::vector<std::vector<double>> seen(keys[c].begin(), keys[c].begin() + (n - W + i + 1));
                                    const std::vector<double> prob =
                                        attentionOf(at::tensor(window[h][i], at::kDouble), seen);
                                    for (int64_t r = 0; r < n - W; ++r) votes[r] += prob[r] / double(rs.size());
                                }
                            }
                            std::vector<double> pooled(n - W);
                            for (int64_t r = 0; r < n - W; ++r) {
                                double m = -1e300, sum = 0.0;
                                for (int64_t j = r - K / 2; j <= r + K / 2; ++j) {
                                    if (j < 0 || j >= n - W) continue;
                                    m = std::max(m, votes[j]);
                                    sum += votes[j];
                                }
                                pooled[r] = pooling == Pooling::Max ? m : sum / double(K);
                            }
                            std::vector<int64_t> order(n - W);
                            std::iota(order.begin(), order.end(), 0);
                            std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return pooled[a] > pooled[b]; });
                            std::vector<int64_t> kept(order.begin(), order.begin() + (B - W));
                            std::sort(kept.begin(), kept.end());
                            for (int64_t r = n - W; r < n; ++r) kept.push_back(r);
                            std::vector<std::vector<double>> k2;
                            for (int64_t r : kept) k2.push_back(keys[c][r]);
                            keys[c] = k2;
                        }
                        ASSERT_EQ(cache.length(0, c), int64_t(keys[c].size())) << where << " step " << step;
                        const at::Tensor got = cache.keys(0)[c].to(at::kDouble);
                        for (size_t r = 0; r < keys[c].size(); ++r)
                            for (int64_t d = 0; d < D; ++d)
                                ASSERT_EQ(got[r][d].item<double>(), keys[c][r][d]) << where << " step " << step << " head " << c << " row " << r;
                    }
                }
            }
        }
    }
    EXPECT_GE(compressions, 8 * 4);
}

// CUR's decode form against a double reference: when due, a head above the budget keeps its
// first `sinks` rows and the B - sinks others of highest (k^2 / its group's sum) x (v^2 / its
// group's sum), the groups 16 rows aligned from row 0 (the last as long as the rows leave it).
TEST(DecodeCompressor, CurKeepsTheSinksAndTheRowsOfMostLocalEnergy) {
    const int64_t KV = 2, T = 30, D = 8, B = 20, S = 3;
    for (int64_t every : {1, 4}) {
        at::manual_seed(31 + every);
        const auto capture = Capture::fromTensors({at::randn({KV, T, D})}, {at::randn({KV, T, D})}, {at::randn({KV, T, D})});
        PressParams p = params("cur", 24);
        p.sinks = S;
        const Selection selection = Press::create("cur")->select(*capture, p);
        CompressedCache cache(*capture, selection, 40);
        p.budget = B;
        DecodeCompressor rule(p, every);
        rule.start(*capture, selection);
        std::vector<at::Tensor> keys(KV), values(KV);  // [n, D] double, the reference's rows
        for (int64_t c = 0; c < KV; ++c) std::tie(keys[c], values[c]) = keptStates(*capture, selection, c);
        int compressions = 0;
        for (int64_t step = 0; step < 16; ++step) {
            const at::Tensor q = at::randn({1, KV, D}), k = at::randn({1, KV, D}) * (1.0 + step % 3), v = at::randn({1, KV, D});
            rule.onQueries(0, q, T + step);
            cache.append(0, k, v);
            if (rule.afterStep(cache)) ++compressions;
            for (int64_t c = 0; c < KV; ++c) {
                keys[c] = at::cat({keys[c], k[0][c].unsqueeze(0).to(at::kDouble)});
                values[c] = at::cat({values[c], v[0][c].unsqueeze(0).to(at::kDouble)});
                const int64_t n = keys[c].size(0);
                if ((step + 1) % every == 0 && n > B) {
                    auto local = [&](const at::Tensor& x) {
                        std::vector<double> sq(n), out(n);
                        for (int64_t r = 0; r < n; ++r) sq[r] = x[r].pow(2).sum().item<double>();
                        for (int64_t g = 0; g < n; g += 16) {
                            double sum = 0.0;
                            for (int64_t r = g; r < std::min(n, g + 16); ++r) sum += sq[r];
                            for (int64_t r = g; r < std::min(n, g + 16); ++r) out[r] = sum > 0 ? sq[r] / sum : 0.0;
                        }
                        return out;
                    };
                    const std::vector<double> ks = local(keys[c]), vs = local(values[c]);
                    std::vector<int64_t> order;
                    for (int64_t r = S; r < n; ++r) order.push_back(r);
                    std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return ks[a] * vs[a] > ks[b] * vs[b]; });
                    std::vector<int64_t> kept(order.begin(), order.begin() + (B - S));
                    for (int64_t r = 0; r < S; ++r) kept.push_back(r);
                    std::sort(kept.begin(), kept.end());
                    const at::Tensor idx = at::tensor(kept, at::kLong);
                    keys[c] = keys[c].index_select(0, idx);
                    values[c] = values[c].index_select(0, idx);
                }
                ASSERT_EQ(cache.length(0, c), keys[c].size(0)) << "every " << every << " step " << step;
                EXPECT_TRUE(at::equal(cache.keys(0)[c].to(at::kDouble), keys[c])) << "every " << every << " step " << step;
                EXPECT_TRUE(at::equal(cache.values(0)[c].to(at::kDouble), values[c])) << "every " << every << " step " << step;
            }
        }
        EXPECT_EQ(compressions, every == 1 ? 16 : 4);
    }
}

// AdaKV around KNorm during decoding, against a double reference from AdaKV's definition:
// when due and the layer holds more than heads x B rows, every head keeps its last W rows,
// then its own floor(alpha x P) of lowest key norm (P = B - W), then the layer's remaining
// heads x (P - floor) go to the lowest norms of any head (ties: lower head, then lower row).
// The heads end up ragged; the layer holds exactly heads x B.
TEST(DecodeCompressor, AdaKvSharesEachLayersBudgetAmongItsHeads) {
    const int64_t KV = 3, T = 30, D = 8, B = 14, W = 4;
    const double alpha = 0.25;
    int compressions = 0;
    for (int64_t every : {1, 3}) {
        at::manual_seed(41 + every);
        // Heads of different scales, so the shared pool really moves between them.
        const at::Tensor scale = at::tensor({0.5f, 1.0f, 2.0f}).view({KV, 1, 1});
        const auto capture = Capture::fromTensors({at::randn({KV, T, D})}, {at::randn({KV, T, D}) * scale},
                                                  {at::randn({KV, T, D})});
        PressParams p = params("adakv", 20);
        p.scorer = "knorm";
        p.window = W;
        p.alpha = alpha;
        const Selection selection = Press::create("adakv")->select(*capture, p);
        CompressedCache cache(*capture, selection, 40);
        p.budget = B;
        DecodeCompressor rule(p, every);
        rule.start(*capture, selection);
        std::vector<std::vector<std::vector<double>>> keys(KV);  // [head][row][D]
        const at::Tensor k0 = capture->keys(0).to(at::kDouble);
        auto row = [&](const at::Tensor& t) {
            const at::Tensor c = t.contiguous();
            return std::vector<double>(c.data_ptr<double>(), c.data_ptr<double>() + D);
        };
        for (int64_t c = 0; c < KV; ++c)
            for (int32_t t : selection.kept[0][c]) keys[c].push_back(row(k0[c][t]));
        for (int64_t step = 0; step < 15; ++step) {
            const at::Tensor k = at::randn({1, KV, D}) * scale.view({1, KV, 1}) * (1.0 + step % 3), v = at::randn({1, KV, D});
            cache.append(0, k, v);
            for (int64_t c = 0; c < KV; ++c) keys[c].push_back(row(k.to(at::kDouble)[0][c]));
            if (rule.afterStep(cache)) ++compressions;
            int64_t total = 0;
            for (const auto& h : keys) total += int64_t(h.size());
            if ((step + 1) % every == 0 && total > KV * B) {
                const int64_t P = B - W, floorPerHead = int64_t(std::floor(alpha * double(P)));
                auto norm = [](const std::vector<double>& x) {
                    double s = 0.0;
                    for (double e : x) s += e * e;
                    return std::sqrt(s);
                };
                std::vector<std::vector<char>> keep(KV);
                struct Row {
                    double norm;
                    int64_t head, row;
                };
                std::vector<Row> rest;
                for (int64_t c = 0; c < KV; ++c) {
                    const int64_t n = int64_t(keys[c].size());
                    keep[c].assign(n, 0);
                    for (int64_t r = n - W; r < n; ++r) keep[c][r] = 1;
                    std::vector<Row> own;
                    for (int64_t r = 0; r < n - W; ++r) own.push_back({norm(keys[c][r]), c, r});
                    std::stable_sort(own.begin(), own.end(), [](const Row& a, const Row& b) { return a.norm < b.norm; });
                    for (int64_t i = 0; i < int64_t(own.size()); ++i) {
                        if (i < floorPerHead) keep[c][own[i].row] = 1;
                        else rest.push_back(own[i]);
                    }
                }
                std::sort(rest.begin(), rest.end(), [](const Row& a, const Row& b) {
                    if (a.norm != b.norm) return a.norm < b.norm;
                    return a.head != b.head ? a.head < b.head : a.row < b.row;
                });
                for (int64_t i = 0; i < KV * (P - floorPerHead); ++i) keep[rest[i].head][rest[i].row] = 1;
                for (int64_t c = 0; c < KV; ++c) {
                    std::vector<std::vector<double>> kept;
                    for (size_t r = 0; r < keys[c].size(); ++r)
                        if (keep[c][r]) kept.push_back(keys[c][r]);
                    keys[c] = kept;
                }
            }
            int64_t held = 0;
            std::set<int64_t> lengths;
            for (int64_t c = 0; c < KV; ++c) {
                ASSERT_EQ(cache.length(0, c), int64_t(keys[c].size())) << "every " << every << " step " << step << " head " << c;
                const at::Tensor got = cache.keys(0)[c].to(at::kDouble);
                for (size_t r = 0; r < keys[c].size(); ++r)
                    for (int64_t d = 0; d < D; ++d)
                        ASSERT_EQ(got[r][d].item<double>(), keys[c][r][d]) << "every " << every << " step " << step;
                held += cache.length(0, c);
                lengths.insert(cache.length(0, c));
            }
            if ((step + 1) % every == 0) {
                EXPECT_EQ(held, KV * B) << "every " << every << " step " << step;
                EXPECT_GT(lengths.size(), 1u) << "the heads share the layer's entries unevenly";
            }
        }
    }
    EXPECT_EQ(compressions, 15 + 5);
}

// PyramidKV during decoding: when due, layer l holds its PyramidKV share of layers x B for a
// prompt as long as the sequence so far (prefixBudgets + W; its rows are SnapKV's decode form's,
// checked above), so the cache's mean stays at B; on the model, with a budget never reached,
// it decodes as the full cache does.
TEST(DecodeCompressor, PyramidKvKeepsEachLayersShareOfTheBudget) {
    Tiny& t = tiny();
    const int64_t T = static_cast<int64_t>(t.prompt.size()), n = 12, B = 24, W = 8;
    auto capture = Capture::fromPrefill(*t.loaded.model, t.prompt, {}, {}, n);
    PressParams p = params("pyramidkv", B);
    p.window = W;
    const Selection selection = Press::create("pyramidkv")->select(*capture, p);
    CompressedCache cache(*capture, selection, n);
    DecodeCompressor rule(p, 2);
    rule.start(*capture, selection);
    int32_t token = greedy(capture->lastLogits());
    int compressions = 0;
    for (int64_t step = 0; step < n; ++step) {
        token = greedy(t.loaded.model->decode(token, cache, &rule));
        const int64_t length = T + step + 1;  // the sequence so far
        const std::vector<int64_t> share =
            PyramidKvPress::prefixBudgets(cache.layers(), length, W, B, p.beta, p.schedule);
        ASSERT_GT(share.front(), share.back());
        compressions += rule.afterStep(cache);
        int64_t total = 0;
        for (int64_t l = 0; l < cache.layers(); ++l) {
            for (int64_t h = 0; h < cache.heads(); ++h) {
                total += cache.length(l, h);
                if ((step + 1) % 2 == 0) {
                    EXPECT_EQ(cache.length(l, h), share[l] + W) << "step " << step << " layer " << l;
                }
            }
        }
        if ((step + 1) % 2 == 0) {
            EXPECT_EQ(total, cache.layers() * cache.heads() * B) << "step " << step;
        }
    }
    EXPECT_EQ(compressions, n / 2);
    MethodEvaluator evaluator(*t.loaded.model, capture, n);
    PressParams roomy = params("pyramidkv", T + n + 8);
    roomy.window = W;
    const RunMetrics same = evaluator.evaluate(Press::create("pyramidkv")->select(*capture, roomy), DecodeCompressor(roomy, 1));
    EXPECT_EQ(same.tokens, same.fullTokens);
    EXPECT_DOUBLE_EQ(same.meanKl, 0.0);
}

// LagKV during decoding against a double reference from its definition: when due, a head
// above the budget splits its rows after the S sinks into partitions of `lag`; the last full
// one and the remainder (the tail) stay whole with the sinks, and each earlier partition keeps
// its share of B - S - tail (the earlier ones one more while any are left) of highest
// lag-relative score (keys' plus values' softmax of the spread against the next partition's
// per-channel range; ties to the lower row).
TEST(DecodeCompressor, LagKvKeepsEachPartitionsShareAndTheTailWhole) {
    const int64_t KV = 2, T = 30, D = 8, B = 17, S = 2, lag = 4;
    int compressions = 0;
    for (int64_t every : {1, 4}) {
        at::manual_seed(51 + every);
        const auto capture = Capture::fromTensors({at::randn({KV, T, D})}, {at::randn({KV, T, D})}, {at::randn({KV, T, D})});
        PressParams p = params("lagkv", 20);
        p.sinks = S;
        p.lag = lag;
        const Selection selection = Press::create("lagkv")->select(*capture, p);
        CompressedCache cache(*capture, selection, 40);
        p.budget = B;
        DecodeCompressor rule(p, every);
        rule.start(*capture, selection);
        std::vector<at::Tensor> keys(KV), values(KV);  // [n, D] double, the reference's rows
        for (int64_t c = 0; c < KV; ++c) std::tie(keys[c], values[c]) = keptStates(*capture, selection, c);
        for (int64_t step = 0; step < 16; ++step) {
            const at::Tensor k = at::randn({1, KV, D}) * (1.0 + step % 3), v = at::randn({1, KV, D});
            cache.append(0, k, v);
            if (rule.afterStep(cache)) ++compressions;
            for (int64_t c = 0; c < KV; ++c) {
                keys[c] = at::cat({keys[c], k[0][c].unsqueeze(0).to(at::kDouble)});
                values[c] = at::cat({values[c], v[0][c].unsqueeze(0).to(at::kDouble)});
                const int64_t n = keys[c].size(0);
                if ((step + 1) % every == 0 && n > B) {
                    const std::vector<double> score =
                        test::lagScores(keys[c].unsqueeze(0), values[c].unsqueeze(0), 0, n, S, lag);
                    const int64_t partitions = (n - S) / lag - 1, tailStart = S + partitions * lag;
                    const int64_t spare = B - S - (n - tailStart);
                    std::vector<int64_t> kept;
                    for (int64_t r = 0; r < S; ++r) kept.push_back(r);
                    for (int64_t part = 0; part < partitions; ++part) {
                        std::vector<int64_t> order(lag);
                        std::iota(order.begin(), order.end(), S + part * lag);
                        std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return score[a] > score[b]; });
                        order.resize(spare / partitions + (part < spare % partitions ? 1 : 0));
                        kept.insert(kept.end(), order.begin(), order.end());
                    }
                    for (int64_t r = tailStart; r < n; ++r) kept.push_back(r);
                    std::sort(kept.begin(), kept.end());
                    ASSERT_EQ(int64_t(kept.size()), B);
                    const at::Tensor idx = at::tensor(kept, at::kLong);
                    keys[c] = keys[c].index_select(0, idx);
                    values[c] = values[c].index_select(0, idx);
                }
                ASSERT_EQ(cache.length(0, c), keys[c].size(0)) << "every " << every << " step " << step;
                EXPECT_TRUE(at::equal(cache.keys(0)[c].to(at::kDouble), keys[c])) << "every " << every << " step " << step;
                EXPECT_TRUE(at::equal(cache.values(0)[c].to(at::kDouble), values[c])) << "every " << every << " step " << step;
            }
        }
    }
    EXPECT_EQ(compressions, 16 + 4);
}

// On the model: SnapKV's, CUR's, AdaKV's, PyramidKV's and LagKV's decode forms hold the budget
// (entries per head, the mean over the cache) after every compression, and a budget never
// reached decodes as the full cache does.
TEST(DecodeCompressor, SnapKvCurAdaKvPyramidKvAndLagKvStayWithinTheBudgetOnTheModel) {
    Tiny& t = tiny();
    const int64_t T = static_cast<int64_t>(t.prompt.size()), n = 16;
    auto capture = Capture::fromPrefill(*t.loaded.model, t.prompt, {}, {}, n);
    MethodEvaluator evaluator(*t.loaded.model, capture, n);
    for (const char* method : {"snapkv", "cur", "adakv", "pyramidkv", "lagkv"}) {
        PressParams tight = params(method, 24);
        tight.lag = 8;
        tight.window = 8;
        const RunMetrics within = evaluator.evaluate(Press::create(method)->select(*capture, tight), DecodeCompressor(tight, 2));
        ASSERT_EQ(within.cacheEntries.size(), static_cast<size_t>(n - 1)) << method;
        for (size_t i = 0; i < within.cacheEntries.size(); ++i)
            EXPECT_EQ(within.cacheEntries[i], i % 2 == 0 ? 25 : 24) << method << " step " << i + 1;
        PressParams roomy = params(method, T + n + 8);
        roomy.window = 8;
        roomy.lag = 8;
        const RunMetrics same = evaluator.evaluate(Press::create(method)->select(*capture, roomy), DecodeCompressor(roomy, 1));
        EXPECT_EQ(same.tokens, same.fullTokens) << method;
        EXPECT_DOUBLE_EQ(same.meanKl, 0.0) << method;
    }
}

TEST(DecodeCompressor, BadSettingsAreOneLineNamingTheFlag) {
    const auto message = [](const PressParams& p, int64_t every = 1) { return test::decodeError(p, every); };
    EXPECT_EQ(message(params("cake", 64), 1),
              "--decode-every: cake has no form for compression during decoding here (snapkv, pyramidkv, "
              "streamingllm, h2o, adakv, random, tova, knorm, keydiff, lagkv, chunkkv, expected, cur, simlayerkv, "
              "perlayer, criticalkv and criticaladakv)");
    PressParams ada = params("adakv", 64);
    ada.scorer = "leverage";
    EXPECT_EQ(message(ada, 1), "--decode-every: adakv with --scorer leverage has no form for compression during "
                               "decoding here (adakv, chunkkv, perlayer, criticalkv and criticaladakv decode with "
                               "--scorer snapkv, h2o, tova, knorm, keydiff, lagkv, expected or cur)");
    ada.scorer = "cur";
    ada.budget = 36;  // window 32 + sinks 4
    EXPECT_EQ(message(ada, 1), "--budget 36 must exceed --window 32 + --sinks 4 (AdaKV keeps them on every head)");
    ada.scorer = "";  // SnapKV's votes
    ada.budget = 32;
    EXPECT_EQ(message(ada, 1), "--budget 32 must exceed --window 32 (AdaKV keeps it on every head)");
    PressParams lagkv = params("lagkv", 34);
    lagkv.lag = 16;
    EXPECT_EQ(message(lagkv, 1), "--budget 34 must hold LagKV's 4 sinks and its longest tail while decoding, 2 x --lag "
                                 "- 1 = 31 rows (the last full partition with the remainder, kept whole): raise the "
                                 "budget or lower --lag");
    lagkv.budget = 35;
    EXPECT_EQ(message(lagkv, 1), "");
    PressParams pyramid = params("pyramidkv", 32);
    EXPECT_EQ(message(pyramid, 1), "--budget 32 must exceed --window 32 (PyramidKV's observation window is part of the budget)");
    PressParams snap = params("snapkv", 32);
    snap.window = 32;
    EXPECT_EQ(message(snap, 1), "--budget 32 must exceed --window 32 (SnapKV's observation window is part of the budget)");
    EXPECT_EQ(message(params("cur", 4), 1), "--budget 4 must exceed --sinks 4 (the budget includes the sinks)");
    EXPECT_EQ(message(params("expected", 4), 1), "--budget 4 must exceed --sinks 4 (the budget includes the sinks)");
    // Expected Attention's statistics come from a model prefill; tensors have none.
    const auto tensors = Capture::fromTensors({at::randn({2, 40, 8})}, {at::randn({2, 40, 8})}, {at::randn({2, 40, 8})});
    DecodeCompressor expected(params("expected", 20), 1);
    try {
        expected.start(*tensors, Press::create("streamingllm")->select(*tensors, params("streamingllm", 20)));
        ADD_FAILURE() << "started without query statistics";
    } catch (const Error& e) {
        EXPECT_STREQ(e.what(), "--decode-every with expected needs the statistics of every prompt query, which only a "
                               "model prefill records (not tensors given with --inputs)");
    }
    PressParams h2o = params("h2o", 32);
    EXPECT_EQ(message(h2o, 1), "--budget 32 must exceed --window 32 (H2O's recent rows are part of the budget)");
    EXPECT_EQ(message(params("knorm", 64), 0), "--decode-every 0 must be at least 1");
    PressParams ratio = params("knorm", 0);
    ratio.budgetRatio = 0.25;
    EXPECT_EQ(message(ratio, 1), "--decode-every needs --budget in entries (a ratio of what? the cache grows)");
    EXPECT_EQ(message(params("streamingllm", 4), 1), "--budget 4 must exceed --sinks 4 (the budget includes the sinks)");
    EXPECT_EQ(message(params("keydiff", 64), 2), "");
    PressParams kvpress = params("knorm", 64);
    kvpress.convention = Convention::Kvpress;
    EXPECT_EQ(message(kvpress, 1), "--decode-every: --convention kvpress compresses the prompt only (kvpress's decoding "
                                   "presses are not reproduced here)");
}

}  // namespace
}  // namespace kvlens
