// Compression on a model with sliding-window layers (ModelConfig::windowAt): the capture's
// window votes apply each query's window (against a double-precision reference); a local
// layer keeps only what a decode step still reaches, the method's best there (the method
// table's sliding-window rule, Press::select); the compressed decode drops rows as the window
// slides and so gives the full cache's logits; the hit rate leaves out what a window hides;
// what cannot run on a window yet says so in one line.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <numeric>

#include "core/Error.h"
#include "engine/analysis/HitRate.h"
#include "engine/compress/Capture.h"
#include "engine/compress/CompressedCache.h"
#include "engine/compress/DecodeCompressor.h"
#include "engine/compress/presses/Press.h"
#include "engine/model/ModelLoader.h"
#include "engine/model/Sampler.h"
#include "support/OneLineError.h"
#include "VoteReference.h"

namespace kvlens {
namespace {

constexpr int64_t kT = 60, kSliding = 16, kFirst = kT - kSliding + 1;  // positions 45 .. 59 reached
// Layers 0 and 2 local (window 16), 1 and 3 global, as Gemma 2 alternates them.
const char* const kMixed = "random:tiny:layers=4:window=16:window-period=2";

std::vector<int32_t> promptOf(int n) {
    std::vector<int32_t> p = {1};
    for (int i = 1; i < n; ++i) p.push_back(3 + (i * 53) % 400);
    return p;
}

std::vector<int32_t> range(int32_t first, int32_t end) {
    std::vector<int32_t> r(size_t(end - first));
    std::iota(r.begin(), r.end(), first);
    return r;
}

class SlidingWindowCompression : public ::testing::Test {
protected:
    static void SetUpTestSuite() {
        loaded_ = new LoadedModel(loadModel(kMixed, c10::Device(c10::kCPU), c10::kFloat));
        capture_ = new std::shared_ptr<Capture>(Capture::fromPrefill(*loaded_->model, promptOf(kT)));
    }
    static void TearDownTestSuite() {
        delete capture_;
        delete loaded_;
    }
    static Selection select(const std::string& method, int64_t budget, const std::string& scorer = "") {
        PressParams p;
        p.method = method;
        p.budget = budget;
        p.window = 8;
        p.scorer = scorer;
        (*capture_)->keepScoresFor(*loaded_->model, p);
        return Press::create(method)->select(**capture_, p);
    }
    static const Capture& capture() { return **capture_; }
    static LlamaModel& model() { return *loaded_->model; }
    static LoadedModel* loaded_;
    static std::shared_ptr<Capture>* capture_;
};
LoadedModel* SlidingWindowCompression::loaded_ = nullptr;
std::shared_ptr<Capture>* SlidingWindowCompression::capture_ = nullptr;

TEST_F(SlidingWindowCompression, TheCaptureKnowsEachLayersWindow) {
    EXPECT_EQ(model().config().windowAt(0), kSliding);
    EXPECT_EQ(model().config().windowAt(1), 0);
    EXPECT_EQ(capture().slidingWindow(2), kSliding);
    EXPECT_EQ(capture().slidingWindow(3), 0);
    EXPECT_EQ(capture().firstReached(0), kFirst);
    EXPECT_EQ(capture().firstReached(1), 0);
    EXPECT_TRUE(capture().windowed());
    // A prompt the window spans leaves nothing out: no layer is cut.
    const auto inside = Capture::fromPrefill(model(), promptOf(kSliding));
    EXPECT_EQ(inside->firstReached(0), 1);
    const auto shorter = Capture::fromPrefill(model(), promptOf(kSliding - 1));
    EXPECT_EQ(shorter->firstReached(0), 0);
    EXPECT_FALSE(shorter->windowed());
}

// The window votes (SnapKV's and every method built on them) sum each window query's softmax
// over the keys inside its own sliding window: a double-precision reference from the
// definition, and zero for the columns no window query reaches.
TEST_F(SlidingWindowCompression, WindowVotesApplyEachQuerysWindow) {
    constexpr int64_t W = 8;
    for (int64_t l : {0, 1}) {
        const at::Tensor votes = capture().votes(l, W).to(at::kDouble).contiguous();  // [H, T - W]
        ASSERT_EQ(votes.size(1), kT - W);
        for (int64_t h = 0; h < capture().queryHeads(); ++h) {
            const std::vector<double> ref =
                test::votesReference(capture(), l, h, W, /*perQueryHead=*/true, capture().slidingWindow(l));
            for (int64_t j = 0; j < kT - W; ++j)
                ASSERT_NEAR(votes[h][j].item<double>(), ref[size_t(j)], 1e-5) << "layer " << l << " head " << h << " col " << j;
        }
        if (l == 0) {
            // The first window query, at T - 8, reaches keys from T - 8 - 15 on.
            EXPECT_EQ(votes.narrow(1, 0, kT - W - kSliding + 1).abs().max().item<double>(), 0.0);
        } else {
            EXPECT_GT(votes.narrow(1, 0, kT - W - kSliding + 1).min().item<double>(), 0.0);
        }
    }
}

// On a local layer a head keeps min(its budget, W - 1) positions of T - W + 1 .. T - 1: the
// method's best there by its own scores (NaN first, ties to the lower position). A global
// layer keeps its budget anywhere.
TEST_F(SlidingWindowCompression, ALocalLayerKeepsTheMethodsBestInsideItsWindow) {
    for (const std::string method : {"snapkv", "tova", "knorm", "expected"}) {
        for (int64_t budget : {10, 12, 40}) {
            const Selection s = select(method, budget);
            const auto press = Press::create(method);
            for (int64_t l = 0; l < s.layers(); ++l) {
                const bool local = l % 2 == 0;
                const std::vector<std::vector<float>> scores = press->scores(capture(), s.params, l);
                for (size_t h = 0; h < s.kept[l].size(); ++h) {
                    const std::vector<int32_t>& kept = s.kept[l][h];
                    if (!local) {
                        EXPECT_EQ(int64_t(kept.size()), budget) << method << " layer " << l;
                        continue;
                    }
                    std::vector<int32_t> want = range(kFirst, kT);
                    auto key = [&](int32_t p) {
                        const float v = scores[h][size_t(p)];
                        return std::isnan(v) ? std::numeric_limits<float>::infinity() : v;
                    };
                    std::stable_sort(want.begin(), want.end(), [&](int32_t a, int32_t b) { return key(a) > key(b); });
                    want.resize(size_t(std::min<int64_t>(budget, kSliding - 1)));
                    std::sort(want.begin(), want.end());
                    EXPECT_EQ(kept, want) << method << " budget " << budget << " layer " << l << " head " << h;
                }
            }
            // The funnel reads what each layer holds: the window caps a local layer.
            EXPECT_EQ(s.layerBudgets[0], std::min<int64_t>(budget, kSliding - 1)) << method;
            EXPECT_EQ(s.layerBudgets[1], budget) << method;
        }
    }
}

// StreamingLLM's recent positions are inside the window; its sinks are not, and the window's
// next most recent take their place (the window is all a decode step reaches there).
TEST_F(SlidingWindowCompression, StreamingLlmKeepsTheWindowsMostRecent) {
    const Selection s = select("streamingllm", 12);  // 4 sinks and the 8 most recent
    std::vector<int32_t> global = range(0, 4), recent = range(kT - 8, kT);
    global.insert(global.end(), recent.begin(), recent.end());
    for (size_t h = 0; h < s.kept[0].size(); ++h) {
        EXPECT_EQ(s.kept[0][h], range(kT - 12, kT)) << "head " << h;
        EXPECT_EQ(s.kept[1][h], global) << "head " << h;
    }
}

// FullKV keeps a local layer's window only (all its full cache still holds), and the
// compressed decode, dropping a local layer's oldest row at each step, gives the logits of
// the full cache's decode (LlamaModel::forward applying the window) far past the window.
TEST_F(SlidingWindowCompression, FullKvDecodesAsTheFullCacheAsTheWindowSlides) {
    const Selection full = select("full", 0);
    for (int64_t l = 0; l < full.layers(); ++l)
        for (const std::vector<int32_t>& kept : full.kept[l]) EXPECT_EQ(kept, l % 2 == 0 ? range(kFirst, kT) : range(0, kT));
    CompressedCache compressed(capture(), full, 4);
    EXPECT_EQ(compressed.slidingWindow(0), kSliding);
    EXPECT_EQ(compressed.bytes(0) * kT, compressed.bytes(1) * (kSliding - 1));

    KvCache plain = model().makeCache(kT + 40);
    const at::Tensor first = model().forward(promptOf(kT), plain);
    int32_t token = Sampler::argmax(first.data_ptr<float>(), first.numel());
    constexpr int kSteps = 2 * kSliding + 3;  // the window turns over twice; the buffers grow past the 4 reserved
    for (int step = 0; step < kSteps; ++step) {
        const at::Tensor a = model().forward({token}, plain);
        const at::Tensor b = model().decode(token, compressed);
        ASSERT_LE((a - b).abs().max().item<float>(), 1e-5f) << "step " << step;
        token = Sampler::argmax(a.data_ptr<float>(), a.numel());
    }
    for (int64_t c = 0; c < compressed.heads(); ++c) {
        EXPECT_EQ(compressed.length(0, c), kSliding);  // the last appended position and the W - 1 before it
        EXPECT_EQ(compressed.length(1, c), kT + kSteps);
    }
}

// A prompt the window spans: FullKV keeps it whole and borrows the capture's room, and the
// decode that then passes the window drops the rows it leaves, in the borrowed buffers too.
TEST_F(SlidingWindowCompression, APromptInsideTheWindowDecodesPastIt) {
    const std::vector<int32_t> prompt = promptOf(10);
    const auto inside = Capture::fromPrefill(model(), prompt, {}, {}, 4);
    const Selection full = Press::create("full")->select(*inside, [] {
        PressParams p;
        p.method = "full";
        return p;
    }());
    CompressedCache borrowed(*inside, full, 4), copied(*inside, full, 4);
    ASSERT_TRUE(borrowed.borrowsCapture());
    KvCache plain = model().makeCache(64);
    model().forward(prompt, plain);
    int32_t token = Sampler::argmax(inside->lastLogits().data_ptr<float>(), inside->lastLogits().numel());
    for (int step = 0; step < 2 * kSliding; ++step) {
        const at::Tensor a = model().forward({token}, plain);
        ASSERT_LE((a - model().decode(token, borrowed)).abs().max().item<float>(), 1e-5f) << "step " << step;
        ASSERT_LE((a - model().decode(token, copied)).abs().max().item<float>(), 1e-5f) << "step " << step;
        token = Sampler::argmax(a.data_ptr<float>(), a.numel());
    }
    EXPECT_EQ(borrowed.length(0, 0), kSliding);
    EXPECT_EQ(borrowed.length(1, 0), 10 + 2 * kSliding);
}

// A method's compressed cache on a local layer holds its kept rows while the window still
// reaches them and every decoded row inside the window: each step drops what the window
// passed, no more.
TEST_F(SlidingWindowCompression, SnapKvDecodeHoldsItsRowsUntilTheWindowPassesThem) {
    const Selection s = select("snapkv", 10);
    CompressedCache compressed(capture(), s, 8);
    int32_t token = Sampler::argmax(capture().lastLogits().data_ptr<float>(), capture().lastLogits().numel());
    for (int step = 0; step < kSliding + 2; ++step) {
        const int64_t position = kT + step;
        model().decode(token, compressed);
        for (int64_t l = 0; l < 4; l += 2) {
            for (size_t h = 0; h < s.kept[l].size(); ++h) {
                // Kept prompt rows the window still reaches, then every decoded row it reaches.
                int64_t rows = 0;
                for (int32_t p : s.kept[l][h]) rows += p > position - kSliding;
                rows += std::min<int64_t>(step + 1, kSliding);
                ASSERT_EQ(compressed.length(l, int64_t(h)), rows) << "step " << step << " layer " << l;
            }
        }
        token = (token * 7 + 11) % 400;
    }
}

// The hit rate counts, on a local layer, only the places a decode step's query can fill:
// step s (position T + s) reaches W - 1 - s prompt positions, its other top-k places are -1.
TEST_F(SlidingWindowCompression, TheHitRateLeavesOutWhatTheWindowHides) {
    constexpr int64_t kSteps = 4, kK = kSliding;
    HitRate hit(model(), *capture_, kSteps, kK);
    for (int64_t s = 0; s < kSteps; ++s) {
        for (int64_t h = 0; h < capture().queryHeads(); ++h) {
            const int32_t* local = hit.topPositions(s, 0, h);
            const int64_t unfilled = std::count(local, local + kK, -1);
            EXPECT_EQ(unfilled, s + 1) << "step " << s;
            for (int64_t i = 0; i < kK; ++i) {
                if (local[i] >= 0) {
                    EXPECT_GE(local[i], kFirst + s);
                }
            }
            const int32_t* global = hit.topPositions(s, 1, h);
            EXPECT_EQ(std::count(global, global + kK, -1), 0);
        }
    }
    for (double r : hit.of(select("full", 0), 8).perLayer) EXPECT_EQ(r, 1.0);
    const HitRate::Result snap = hit.of(select("snapkv", 10), 8);
    EXPECT_LT(snap.perLayer[0], 1.0);
    EXPECT_GT(snap.perLayer[0], 0.0);
}

// What does not run on a window yet is refused in one line naming the method.
TEST_F(SlidingWindowCompression, WhatCannotRunOnAWindowSaysSo) {
    const std::string ignore = "; --sliding-window ignore (the window's 'window: ignore') attends over the whole sequence";
    EXPECT_EQ(test::errorOf([] { select("finch", 12); }),
              "--method finch: its own chunked prefill and the positions it decodes from do not apply the model's "
              "sliding window yet" + ignore);
    EXPECT_EQ(test::errorOf([] { select("finch-kvpress", 12); }),
              "--method finch-kvpress: it turns the kept keys to positions 0 .. B-1, which a sliding window would then "
              "cut wrongly" + ignore);
    EXPECT_EQ(test::errorOf([] { select("adakv", 12, "noncausal"); }),
              "--method adakv --scorer noncausal: the non-causal attention of its chunks is not defined across a "
              "sliding window yet" + ignore);
    EXPECT_EQ(test::errorOf([] { select("kvzip", 12); }),
              "--method kvzip: KVzip's reconstruction runs the prompt again after it, where a sliding window hides the "
              "prompt it reconstructs: its scores do not apply the window yet" + ignore);
    const Selection snap = select("snapkv", 12);
    DecodeCompressor every(snap.params, 8);
    EXPECT_EQ(test::errorOf([&] { every.start(capture(), snap, &model()); }),
              "--decode-every on a model with a sliding window (16 tokens from layer 0): compression while decoding "
              "does not follow the rows a window drops yet" + ignore);
    // Past nothing: a prompt the window spans runs the non-causal scorer.
    const auto shorter = Capture::fromPrefill(model(), promptOf(kSliding - 1));
    PressParams p;
    p.method = "adakv";
    p.scorer = "noncausal";
    p.budget = 8;
    p.window = 4;
    shorter->keepScoresFor(model(), p);
    EXPECT_EQ(Press::create("adakv")->select(*shorter, p).layerBudgets[0], 8);
}

}  // namespace
}  // namespace kvlens
