// The compressed cache holds exactly what a selection kept, heads of different
// lengths take only their own memory, and decode on a cache that kept
// everything is bit-identical to decode on the plain cache.
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <tuple>

#include "core/Error.h"
#include "engine/compress/Capture.h"
#include "engine/compress/CompressedCache.h"
#include "engine/compress/MethodEvaluator.h"
#include "engine/model/ModelLoader.h"
#include "engine/model/Sampler.h"
#include "engine/compress/presses/Press.h"

namespace kvlens {
namespace {

std::vector<int32_t> promptOf(int n) {
    std::vector<int32_t> p = {1};
    for (int i = 1; i < n; ++i) p.push_back(3 + (i * 53) % 400);
    return p;
}

Selection select(const Capture& c, const std::string& method, int64_t budget, GqaMode gqa = GqaMode::KvHead,
                 int64_t window = 8) {
    PressParams p;
    p.method = method;
    p.budget = budget;
    p.window = window;
    p.gqa = gqa;
    return Press::create(method)->select(c, p);
}

// random:tiny's heads have 32 dimensions (the scalar attention rows); TinyLlama's 64
// take the vectorised GQA group kernel of this CPU.
class FullKvBitIdentity : public ::testing::TestWithParam<std::tuple<const char*, c10::ScalarType>> {};

TEST_P(FullKvBitIdentity, CompressedDecodeEqualsPlainDecode) {
    LoadedModel loaded =
        loadModel(std::get<0>(GetParam()), c10::Device(c10::kCPU), std::get<1>(GetParam()));
    LlamaModel& model = *loaded.model;
    const std::vector<int32_t> prompt = promptOf(40);
    auto capture = Capture::fromPrefill(model, prompt);
    CompressedCache compressed(*capture, select(*capture, "full", 0), 4);

    KvCache plain = model.makeCache(64);
    at::Tensor plainLogits = model.forward(prompt, plain);
    ASSERT_TRUE(at::equal(plainLogits, capture->lastLogits()));
    int32_t token = Sampler::argmax(plainLogits.data_ptr<float>(), plainLogits.numel());
    for (int step = 0; step < 12; ++step) {  // past the reserved 4 rows: the buffers grow
        at::Tensor a = model.forward({token}, plain);
        at::Tensor b = model.decode(token, compressed);
        ASSERT_TRUE(at::equal(a, b)) << "step " << step << ": max diff " << (a - b).abs().max().item<float>();
        token = Sampler::argmax(a.data_ptr<float>(), a.numel());
    }
    EXPECT_EQ(compressed.nextPosition(), 40 + 12);
    EXPECT_EQ(compressed.length(model.config().nLayers - 1, 0), 40 + 12);
}

// A capture with room after the prompt lends it to one FullKV cache, which then
// copies nothing: it decodes in the capture's own buffers (past the prompt rows,
// which stay as they were), bit-identical to plain decode, also once it outgrows
// the room; a second FullKV cache meanwhile copies, and the room returns after.
TEST_P(FullKvBitIdentity, AFullKvCacheBorrowsTheCapturesRoomInsteadOfCopying) {
    LoadedModel loaded =
        loadModel(std::get<0>(GetParam()), c10::Device(c10::kCPU), std::get<1>(GetParam()));
    LlamaModel& model = *loaded.model;
    const std::vector<int32_t> prompt = promptOf(40);
    auto capture = Capture::fromPrefill(model, prompt, {}, {}, 4);
    EXPECT_EQ(capture->spareTokens(), 4);
    const int64_t last = model.config().nLayers - 1;
    const at::Tensor promptKeys = capture->keys(last).clone(), promptValues = capture->values(last).clone();
    const Selection full = select(*capture, "full", 0);
    {
        auto borrowed = std::make_unique<CompressedCache>(*capture, full, 4);
        CompressedCache copied(*capture, full, 4);
        ASSERT_TRUE(borrowed->borrowsCapture());
        EXPECT_FALSE(copied.borrowsCapture());
        EXPECT_EQ(borrowed->keys(0)[1].data_ptr(), capture->keys(0)[1].data_ptr());
        EXPECT_FALSE(CompressedCache(*capture, full, 5).borrowsCapture());  // more than the room
        EXPECT_FALSE(borrowed->clone().borrowsCapture());
        KvCache plain = model.makeCache(64);
        int32_t token = Sampler::argmax(capture->lastLogits().data_ptr<float>(), capture->lastLogits().numel());
        model.forward(prompt, plain);
        for (int step = 0; step < 9; ++step) {  // the room holds 4: then layer buffers grow
            const at::Tensor a = model.forward({token}, plain);
            ASSERT_TRUE(at::equal(a, model.decode(token, *borrowed))) << "step " << step;
            ASSERT_TRUE(at::equal(a, model.decode(token, copied))) << "step " << step;
            token = Sampler::argmax(a.data_ptr<float>(), a.numel());
        }
        EXPECT_EQ(capture->keys(last).size(1), 40);
        EXPECT_TRUE(at::equal(capture->keys(last), promptKeys));
        EXPECT_TRUE(at::equal(capture->values(last), promptValues));
        const auto b = capture->borrowSpare();
        EXPECT_EQ(b, nullptr);  // still lent
        borrowed.reset();
    }
    EXPECT_TRUE(CompressedCache(*capture, full, 4).borrowsCapture());
    // A selection that dropped anything gathers its own copy.
    EXPECT_FALSE(CompressedCache(*capture, select(*capture, "streamingllm", 20), 4).borrowsCapture());
}

INSTANTIATE_TEST_SUITE_P(
    DTypes, FullKvBitIdentity,
    ::testing::Combine(::testing::Values("random:tiny:layers=2", "random:tinyllama-1.1b:layers=1"),
                       ::testing::Values(c10::kFloat, c10::kBFloat16)),
    [](const ::testing::TestParamInfo<std::tuple<const char*, c10::ScalarType>>& i) {
        return std::string(std::string(std::get<0>(i.param)).find("tinyllama") != std::string::npos ? "d64_" : "d32_") +
               (std::get<1>(i.param) == c10::kFloat ? "f32" : "bf16");
    });

class CompressedCacheTest : public ::testing::Test {
protected:
    void SetUp() override {
        loaded_ = loadModel("random:tiny:layers=2", c10::Device(c10::kCPU), c10::kFloat);
        capture_ = Capture::fromPrefill(*loaded_.model, promptOf(60));
        capture_->keepScoresFor(*loaded_.model, "h2o");
    }
    LoadedModel loaded_;
    std::shared_ptr<Capture> capture_;
};

TEST_F(CompressedCacheTest, HoldsExactlyTheKeptEntries) {
    for (GqaMode mode : {GqaMode::KvHead, GqaMode::QueryHead}) {
        const Selection s = select(*capture_, "snapkv", 20, mode);
        CompressedCache cache(*capture_, s);
        ASSERT_EQ(cache.heads(), mode == GqaMode::KvHead ? 4 : 8);
        for (int64_t l = 0; l < 2; ++l) {
            const auto keys = cache.keys(l), values = cache.values(l);
            for (int64_t c = 0; c < cache.heads(); ++c) {
                const int64_t kvHead = mode == GqaMode::KvHead ? c : c / 2;
                const auto& kept = s.kept[l][c];
                ASSERT_EQ(keys[c].size(0), int64_t(kept.size()));
                for (size_t i = 0; i < kept.size(); ++i) {
                    ASSERT_TRUE(at::equal(keys[c][i], capture_->keys(l)[kvHead][kept[i]]));
                    ASSERT_TRUE(at::equal(values[c][i], capture_->values(l)[kvHead][kept[i]]));
                }
            }
        }
        for (int64_t h = 0; h < 8; ++h) EXPECT_EQ(cache.headOf(h), mode == GqaMode::KvHead ? h / 2 : h);
    }
}

TEST_F(CompressedCacheTest, AdaKvHeadsOfDifferentLengthsTakeOnlyTheirOwnMemory) {
    const Selection s = select(*capture_, "adakv", 24);
    CompressedCache cache(*capture_, s);
    bool differ = false;
    int64_t rows = 0;
    for (int64_t l = 0; l < 2; ++l) {
        for (int64_t c = 0; c < cache.heads(); ++c) {
            rows += cache.length(l, c);
            differ |= cache.length(l, c) != cache.length(l, 0);
        }
    }
    EXPECT_TRUE(differ) << "AdaKV gave every head the same length on this prompt";
    EXPECT_EQ(rows, 2 * 4 * 24);  // the layer pools add up to heads x budget
    EXPECT_EQ(cache.bytes(), rows * 2 * 32 * 4);  // K and V rows of head dim 32, fp32
    EXPECT_LT(cache.bytes(), capture_->cache().bytes() / 2);
    // Decoding appends one row to every head, whatever its length.
    loaded_.model->decode(5, cache);
    EXPECT_EQ(cache.bytes(), (rows + 2 * 4) * 2 * 32 * 4);
}

TEST_F(CompressedCacheTest, EvaluatorScoresFullKvAsPerfect) {
    MethodEvaluator evaluator(*loaded_.model, capture_, 12);
    PressParams full;
    full.method = "full";
    const RunMetrics m = evaluator.evaluate(full);
    EXPECT_EQ(m.tokens, m.fullTokens);
    EXPECT_EQ(m.agreedPrefix, 12);
    EXPECT_EQ(m.tokenAgreement, 1.0);
    EXPECT_EQ(m.meanKl, 0.0);
    EXPECT_EQ(m.top1Agreement, 1.0);
    EXPECT_EQ(m.ratio, 1.0);

    PressParams snap;
    snap.budget = 16;
    snap.window = 8;
    const RunMetrics s = evaluator.evaluate(snap);
    EXPECT_EQ(s.fullTokens, m.fullTokens);
    EXPECT_EQ(s.tokens.size(), 12u);
    EXPECT_GT(s.meanKl, 0.0);
    EXPECT_TRUE(std::isfinite(s.meanKl));
    EXPECT_NEAR(s.ratio, 16.0 / 60.0, 1e-12);
    EXPECT_EQ(s.bytesPerLayer.size(), 2u);
    EXPECT_EQ(s.bytesPerHead[0].size(), 4u);
    EXPECT_EQ(s.tokens[0], s.fullTokens[0]);  // the first token comes from the full prefill
    // Agreement before the first divergence is consistent with the token lists.
    for (int64_t i = 0; i < s.agreedPrefix; ++i) EXPECT_EQ(s.tokens[i], s.fullTokens[i]);
    if (s.agreedPrefix < 12) {
        EXPECT_NE(s.tokens[s.agreedPrefix], s.fullTokens[s.agreedPrefix]);
    }
}

TEST_F(CompressedCacheTest, GreedyTokensEqualAFreeRunningDecodeOnTheCompressedCache) {
    MethodEvaluator evaluator(*loaded_.model, capture_, 10);
    PressParams p;
    p.method = "streamingllm";
    p.budget = 12;
    const RunMetrics m = evaluator.evaluate(p);
    CompressedCache cache(*capture_, Press::create("streamingllm")->select(*capture_, p));
    std::vector<int32_t> tokens = {m.fullTokens[0]};
    while (tokens.size() < 10) {
        at::Tensor logits = loaded_.model->decode(tokens.back(), cache);
        tokens.push_back(Sampler::argmax(logits.data_ptr<float>(), logits.numel()));
    }
    EXPECT_EQ(m.tokens, tokens);
}

TEST_F(CompressedCacheTest, AQuestionAfterTheCaptureIsFedToEveryCacheBeforeTheAnswer) {
    // The context (40 tokens) captured alone, 6 question tokens appended to each cache.
    const std::vector<int32_t> all = promptOf(46);
    const std::vector<int32_t> context(all.begin(), all.begin() + 40), question(all.begin() + 40, all.end());
    auto capture = Capture::fromPrefill(*loaded_.model, context, {}, {}, 8 + 6);
    MethodEvaluator evaluator(*loaded_.model, capture, 8, {}, question);
    // FullKV: the greedy answer of a plain run over context + question.
    KvCache plain = loaded_.model->makeCache(64);
    at::Tensor logits = loaded_.model->forward(all, plain);
    std::vector<int32_t> want;
    for (int i = 0; i < 8; ++i) {
        want.push_back(Sampler::argmax(logits.data_ptr<float>(), logits.numel()));
        logits = loaded_.model->forward({want.back()}, plain);
    }
    PressParams full;
    full.method = "full";
    const RunMetrics f = evaluator.evaluate(full);
    EXPECT_EQ(f.fullTokens, want);
    EXPECT_EQ(f.tokens, want);
    EXPECT_EQ(f.meanKl, 0.0);
    // A compressed cache answers from its own logits after the question, the first
    // token included: a free-running decode of the question then the answer on it.
    PressParams p;
    p.method = "streamingllm";
    p.budget = 8;
    const RunMetrics m = evaluator.evaluate(p);
    CompressedCache cache(*capture, Press::create("streamingllm")->select(*capture, p));
    for (int32_t t : question) logits = loaded_.model->decode(t, cache);
    std::vector<int32_t> tokens;
    for (int i = 0; i < 8; ++i) {
        tokens.push_back(Sampler::argmax(logits.data_ptr<float>(), logits.numel()));
        logits = loaded_.model->decode(tokens.back(), cache);
    }
    EXPECT_EQ(m.tokens, tokens);
    EXPECT_EQ(m.klPerStep.size(), 8u);
    // No room for the question and the answer: one line.
    try {
        MethodEvaluator tight(*loaded_.model, Capture::fromPrefill(*loaded_.model, promptOf(4090)), 4, {}, question);
        FAIL();
    } catch (const Error& e) {
        EXPECT_STREQ(e.what(), "-n 4 after 6 question tokens does not fit: the prompt leaves 6 tokens of the model's context");
    }
}

TEST_F(CompressedCacheTest, QueryHeadModeIsOnlyForTheVotingMethods) {
    // Per-query-head copies of a StreamingLLM, H2O, Random or Full selection would
    // only multiply their memory by the group size.
    for (const char* method : {"full", "streamingllm", "h2o", "random"}) {
        const Selection s = select(*capture_, method, 20, GqaMode::QueryHead);
        EXPECT_EQ(s.gqa, GqaMode::KvHead) << method;
        EXPECT_EQ(s.kept[0].size(), 4u) << method;
    }
    for (const char* method : {"snapkv", "pyramidkv", "adakv"}) {
        EXPECT_EQ(select(*capture_, method, 20, GqaMode::QueryHead).kept[0].size(), 8u) << method;
    }
}

}  // namespace
}  // namespace kvlens
