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

#include "core/Error.h"
#include "engine/compress/Capture.h"
#include "engine/compress/CompressedCache.h"
#include "engine/compress/MethodEvaluator.h"
#include "engine/compress/presses/Press.h"
#include "engine/model/ModelLoader.h"
#include "engine/model/Sampler.h"

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

TEST(DecodeCompressor, BadSettingsAreOneLineNamingTheFlag) {
    auto message = [](const PressParams& p, int64_t every) {
        try {
            DecodeCompressor rule(p, every);
        } catch (const Error& e) {
            return std::string(e.what());
        }
        return std::string();
    };
    EXPECT_EQ(message(params("tova", 64), 1),
              "--decode-every: tova has no form for compression during decoding here (streamingllm, knorm, keydiff)");
    EXPECT_EQ(message(params("knorm", 64), 0), "--decode-every 0 must be at least 1");
    PressParams ratio = params("knorm", 0);
    ratio.budgetRatio = 0.25;
    EXPECT_EQ(message(ratio, 1), "--decode-every needs --budget in entries (a ratio of what? the cache grows)");
    EXPECT_EQ(message(params("streamingllm", 4), 1), "--budget 4 must exceed --sinks 4 (the budget includes the sinks)");
    EXPECT_EQ(message(params("keydiff", 64), 2), "");
}

}  // namespace
}  // namespace kvlens
