// The GUI's engine facade on random:tiny: what it reports about the model and the
// capture agrees with the engine's own classes, selections equal Press::select,
// maps are proper attention rows, cancelling stops long work and keeps the previous
// state, and every user-reachable refusal names the culprit.
#include "engine/Workbench.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <string>

#include "engine/compress/Capture.h"
#include "core/Error.h"
#include "engine/model/ModelLoader.h"
#include "engine/compress/presses/Press.h"
#include "engine/tokenizer/ChatTemplate.h"
#include "support/TinyModelFile.h"

namespace kvlens {
namespace {

std::string prompt(int words) {
    std::string s;
    for (int i = 0; i < words; ++i) s += "word" + std::to_string(i % 17) + " ";
    return s;
}

WorkbenchPrompt plain(const std::string& text) {
    WorkbenchPrompt p;
    p.text = text;
    return p;
}

Workbench::LoadOptions tiny() {
    Workbench::LoadOptions o;
    o.model = "random:tiny";
    o.dtype = "f32";
    o.threads = 2;
    return o;
}

template <typename F>
std::string errorOf(F&& f) {
    try {
        f();
    } catch (const Error& e) {
        return e.what();
    }
    return "(no error)";
}

TEST(WorkbenchTest, ModelFiguresMatchTheConfig) {
    Workbench w;
    EXPECT_FALSE(w.hasModel());
    EXPECT_EQ(w.gpuBytesInUse(), -1);
    const WorkbenchModel m = w.load(tiny(), {}, nullptr);
    EXPECT_EQ(w.gpuBytesInUse(), -1);  // a CPU model holds no GPU memory
    EXPECT_TRUE(w.hasModel());
    EXPECT_EQ(m.layers, 4);
    EXPECT_EQ(m.heads, 8);
    EXPECT_EQ(m.kvHeads, 4);
    EXPECT_EQ(m.headDim, 32);
    EXPECT_EQ(m.dtype, "f32");
    EXPECT_EQ(m.kvBytesPerToken, 2 * 4 * 4 * 32 * 4);  // K+V, layers, KV heads, D, fp32
    EXPECT_GT(m.parameters, 0);
    EXPECT_EQ(m.weightBytes, m.parameters * 4);
    EXPECT_FALSE(m.isFile);
}

// A model with a sliding window (the phi3 test file, 64 on every layer): a capture past it
// goes, and the Memory panel's full bytes of each layer count the window's 63 rows (what a
// decode step reaches); loaded with ignoreSlidingWindow, the whole prompt.
TEST(WorkbenchTest, ACapturePastASlidingWindowCountsTheWindowsBytes) {
    Workbench::LoadOptions o;
    o.model = std::string(KVLENS_SOURCE_DIR) + "/tests/data/gguf/tiny-phi3-F16.gguf";
    o.dtype = "f32";
    o.threads = 2;
    const std::string text = "Once upon a time, there was a little girl named Lily. She loved to play outside in the sun "
                             "with her friends. One day, she found a big red ball in the park. She ran to her mom and "
                             "said, look what I found! Her mom smiled and said they could play with it together after "
                             "lunch. Lily was very happy.";
    Workbench w;
    const WorkbenchModel m = w.load(o, {}, nullptr);
    const WorkbenchCapture windowed = w.capture(plain(text), 32, {}, nullptr);
    const int64_t T = static_cast<int64_t>(windowed.tokenIds.size());
    ASSERT_GT(T, 64);
    ASSERT_EQ(windowed.fullBytesPerLayer.size(), size_t(m.layers));
    const int64_t perRow = m.kvBytesPerToken / m.layers;
    for (int64_t b : windowed.fullBytesPerLayer) EXPECT_EQ(b, 63 * perRow);
    EXPECT_EQ(windowed.slidingWindows, std::vector<int64_t>(size_t(m.layers), 64));
    EXPECT_EQ(windowed.firstReached, std::vector<int64_t>(size_t(m.layers), T - 63));
    o.ignoreSlidingWindow = true;
    w.load(o, {}, nullptr);
    const WorkbenchCapture whole = w.capture(plain(text), 32, {}, nullptr);
    for (int64_t b : whole.fullBytesPerLayer) EXPECT_EQ(b, T * perRow);
    EXPECT_EQ(whole.slidingWindows, std::vector<int64_t>(size_t(m.layers), 0));
}

TEST(WorkbenchTest, CaptureSelectScoresAndBytes) {
    Workbench w;
    w.load(tiny(), {}, nullptr);
    const std::string text = prompt(60);
    const int64_t tokens = w.countTokens(plain(text));
    double last = -1.0;
    bool monotone = true;
    const WorkbenchCapture c = w.capture(plain(text), 8, [&](double f, const std::string&) {
        monotone = monotone && f >= last;
        last = f;
    }, nullptr);
    EXPECT_TRUE(monotone);
    EXPECT_DOUBLE_EQ(last, 1.0);
    ASSERT_EQ(static_cast<int64_t>(c.tokenIds.size()), tokens);
    EXPECT_EQ(c.pieces.size(), c.tokenIds.size());
    EXPECT_EQ(c.stats.size(), 4u);
    EXPECT_EQ(c.fullBytesPerLayer.size(), 4u);
    EXPECT_EQ(c.fullBytesPerLayer[0], 2 * 4 * tokens * 32 * 4);

    // The selection equals the press's own on an identical capture.
    PressParams p;
    p.method = "snapkv";
    p.budget = 64;
    p.window = 16;
    const Selection s = w.select(p);
    LoadedModel loaded = loadModel("random:tiny", c10::Device(c10::kCPU), c10::kFloat);
    auto capture = Capture::fromPrefill(*loaded.model, c.tokenIds);
    const Selection expected = Press::create("snapkv")->select(*capture, p);
    EXPECT_EQ(s.kept, expected.kept);

    // Bytes per layer: kept entries x K and V x D x 4 bytes.
    const std::vector<int64_t> bytes = w.bytesPerLayer(s);
    for (int64_t l = 0; l < 4; ++l) EXPECT_EQ(bytes[l], s.entries(l) * 2 * 32 * 4);

    // Scores: one per selection head and position, NaN in the window, and the kept
    // prefix positions hold the highest scores (ties aside).
    const auto scores = w.scores(p, 1);
    ASSERT_EQ(static_cast<int64_t>(scores.size()), s.headsPerLayer());
    for (size_t h = 0; h < scores.size(); ++h) {
        ASSERT_EQ(static_cast<int64_t>(scores[h].size()), tokens);
        EXPECT_TRUE(std::isnan(scores[h][tokens - 1]));
        EXPECT_FALSE(std::isnan(scores[h][0]));
        float lowestKept = 1e30f;
        std::vector<bool> kept(tokens, false);
        for (int32_t pos : s.kept[1][h]) kept[pos] = true;
        for (int64_t t = 0; t < tokens - p.window; ++t)
            if (kept[t]) lowestKept = std::min(lowestKept, scores[h][t]);
        for (int64_t t = 0; t < tokens - p.window; ++t)
            if (!kept[t]) {
                EXPECT_LE(scores[h][t], lowestKept) << "head " << h << " position " << t;
            }
    }
    // H2O's statistics come on first use, with progress the GUI shows; then its
    // selection equals Press::select on a capture that computed them alike.
    std::vector<std::string> heard;
    PressParams snap = p, h2o = p;
    snap.method = "snapkv";
    h2o.method = "h2o";
    w.prepareMethod(snap, [&](double, const std::string& what) { heard.push_back(what); });
    EXPECT_TRUE(heard.empty());  // SnapKV needs nothing more
    w.prepareMethod(h2o, [&](double, const std::string& what) { heard.push_back(what); });
    ASSERT_FALSE(heard.empty());
    EXPECT_EQ(heard.front().rfind("H2O's accumulated attention (a replay of the prompt): ", 0), 0u) << heard.front();
    {
        PressParams h = p;
        h.method = "h2o";
        capture->keepScoresFor(*loaded.model, "h2o");
        EXPECT_EQ(w.select(h).kept, Press::create("h2o")->select(*capture, h).kept);
    }
    PressParams streaming = p;
    streaming.method = "streamingllm";
    EXPECT_TRUE(w.scores(streaming, 0).empty());
    // The key-only and last-query methods score every position (no window), and their
    // kept positions hold the highest scores.
    for (const std::string method : {"knorm", "keydiff", "tova"}) {
        PressParams k = p;
        k.method = method;
        const Selection ks = w.select(k);
        const auto table = w.scores(k, 1);
        ASSERT_EQ(static_cast<int64_t>(table.size()), ks.headsPerLayer()) << method;
        for (size_t h = 0; h < table.size(); ++h) {
            ASSERT_EQ(static_cast<int64_t>(table[h].size()), tokens) << method;
            std::vector<bool> in(tokens, false);
            for (int32_t pos : ks.kept[1][h]) in[pos] = true;
            float lowestKept = 1e30f, highestDropped = -1e30f;
            for (int64_t t = 0; t < tokens; ++t) {
                EXPECT_FALSE(std::isnan(table[h][t])) << method;
                (in[t] ? lowestKept : highestDropped) =
                    in[t] ? std::min(lowestKept, table[h][t]) : std::max(highestDropped, table[h][t]);
            }
            EXPECT_GE(lowestKept, highestDropped) << method << " head " << h;
        }
    }

    // LagKV, ChunkKV, Expected Attention and kvpress's Finch: NaN exactly where they always
    // keep (the sinks, LagKV's tail, ChunkKV's and Finch's window), and the others' kept
    // positions hold the highest scores (ChunkKV: of their chunks).
    for (const std::string method : {"lagkv", "chunkkv", "expected", "finch-kvpress"}) {
        PressParams k = p;
        k.method = method;
        k.lag = 8;
        const Selection ks = w.select(k);
        const auto table = w.scores(k, 1);
        ASSERT_EQ(static_cast<int64_t>(table.size()), ks.headsPerLayer()) << method;
        for (size_t h = 0; h < table.size(); ++h) {
            ASSERT_EQ(static_cast<int64_t>(table[h].size()), tokens) << method;
            std::vector<bool> in(tokens, false);
            for (int32_t pos : ks.kept[1][h]) in[pos] = true;
            const int64_t keptFrom = method == "lagkv" ? k.lagTailStart(tokens) : tokens - k.window;
            float lowestKept = 1e30f, highestDropped = -1e30f;
            for (int64_t t = 0; t < tokens; ++t) {
                const bool always = (method != "chunkkv" && method != "finch-kvpress" && t < k.sinks) ||
                                    (method != "expected" && t >= keptFrom);
                EXPECT_EQ(std::isnan(table[h][t]), always) << method << " position " << t;
                if (always) {
                    EXPECT_TRUE(in[t]) << method << " position " << t;
                } else if (in[t]) {
                    lowestKept = std::min(lowestKept, table[h][t]);
                } else {
                    highestDropped = std::max(highestDropped, table[h][t]);
                }
            }
            if (method != "lagkv") {
                EXPECT_GE(lowestKept, highestDropped) << method << " head " << h;
            }
        }
    }
    // ChunkKV scored by LagKV with a tail longer than the window: NaN exactly on the sinks and
    // LagKV's tail (ChunkKV ranks chunks between them), and the kept chunks' sums the highest.
    {
        PressParams k = p;
        k.method = "chunkkv";
        k.scorer = "lagkv";
        k.lag = 24;
        k.chunk = 5;  // chunks from the sinks that do not end where the tail starts
        const int64_t tailStart = k.lagTailStart(tokens);
        ASSERT_GT(tokens - tailStart, k.window);
        ASSERT_NE((tailStart - k.sinks) % k.chunk, 0);
        const Selection ks = w.select(k);
        const auto table = w.scores(k, 1);
        ASSERT_EQ(static_cast<int64_t>(table.size()), ks.headsPerLayer());
        for (size_t h = 0; h < table.size(); ++h) {
            std::vector<bool> in(tokens, false);
            for (int32_t pos : ks.kept[1][h]) in[pos] = true;
            float lowestKept = 1e30f, highestDropped = -1e30f;
            for (int64_t t = 0; t < tokens; ++t) {
                const bool always = t < k.sinks || t >= tailStart;
                EXPECT_EQ(std::isnan(table[h][t]), always) << "position " << t;
                if (always) {
                    EXPECT_TRUE(in[t]) << "position " << t;
                } else if (in[t]) {
                    lowestKept = std::min(lowestKept, table[h][t]);
                } else {
                    highestDropped = std::max(highestDropped, table[h][t]);
                }
            }
            EXPECT_GE(lowestKept, highestDropped) << "head " << h;
        }
    }
    // A budget that holds a prompt shorter than the sinks keeps it all: no scores to rank,
    // and none asked for fails.
    PressParams whole = p;
    whole.budget = tokens + 10;
    whole.sinks = tokens + 5;
    for (const std::string method : {"lagkv", "expected"}) {
        whole.method = method;
        EXPECT_EQ(w.select(whole).entries(1), tokens * 4);  // 4 KV heads
        EXPECT_NO_THROW(w.scores(whole, 1)) << method;
    }

    // In query-head mode only the voting methods select per query head: H2O's
    // scores have one row per KV head, as its selection does, and rank it;
    // StreamingLLM and Random have none.
    for (const std::string method : {"h2o", "streamingllm", "random", "snapkv"}) {
        PressParams q = p;
        q.method = method;
        q.gqa = GqaMode::QueryHead;
        const Selection sq = w.select(q);
        const auto sc = w.scores(q, 1);
        if (method == "streamingllm" || method == "random") {
            EXPECT_TRUE(sc.empty()) << method;
            continue;
        }
        ASSERT_EQ(static_cast<int64_t>(sc.size()), sq.headsPerLayer()) << method;
        for (size_t h = 0; h < sc.size(); ++h) {
            std::vector<bool> kept(tokens, false);
            for (int32_t pos : sq.kept[1][h]) kept[pos] = true;
            float lowestKept = 1e30f, highestDropped = -1e30f;
            for (int64_t t = 0; t < tokens - q.window; ++t) {
                if (kept[t]) {
                    lowestKept = std::min(lowestKept, sc[h][t]);
                } else {
                    highestDropped = std::max(highestDropped, sc[h][t]);
                }
            }
            EXPECT_LE(highestDropped, lowestKept) << method << " head " << h;
        }
    }
    EXPECT_EQ(w.select([&] { PressParams h = p; h.method = "h2o"; h.gqa = GqaMode::QueryHead; return h; }())
                  .headsPerLayer(),
              4);

    // A budget over the prompt keeps everything, whatever the window; there is
    // then nothing to rank with a window the capture cannot vote with.
    PressParams all = p;
    all.budget = tokens + 10;
    all.window = tokens + 5;
    EXPECT_EQ(w.select(all).entries(1), 4 * tokens);
    EXPECT_TRUE(w.scores(all, 1).empty());

    // kvpress's ChunkKV over a window-free scorer ranks whatever the window: every position
    // shows its chunk's mean, the same in every head, and the kept chunks are the highest.
    PressParams chunked = all;
    chunked.method = "chunkkv-kvpress";
    chunked.scorer = "knorm";
    chunked.chunk = 5;
    chunked.budget = tokens / 2;
    const Selection sc = w.select(chunked);
    const auto table = w.scores(chunked, 1);
    ASSERT_EQ(static_cast<int64_t>(table.size()), 4);
    std::vector<bool> kept(tokens, false);
    for (int32_t pos : sc.kept[1][0]) kept[pos] = true;
    float lowestKept = 1e30f, highestDropped = -1e30f;
    for (int64_t t = 0; t < tokens; ++t) {
        EXPECT_EQ(table[3][t], table[0][t]);
        EXPECT_EQ(table[0][t], table[0][t - t % 5]) << t;
        if (kept[t]) lowestKept = std::min(lowestKept, table[0][t]);
        else highestDropped = std::max(highestDropped, table[0][t]);
    }
    EXPECT_GE(lowestKept, highestDropped);
    EXPECT_EQ(sc.kept[1][0].size() % 5 == 0 || kept[tokens - 1], true);  // whole chunks
}

TEST(WorkbenchTest, AttentionRowsAreCausalDistributions) {
    Workbench w;
    w.load(tiny(), {}, nullptr);
    w.capture(plain(prompt(30)), 0, {}, nullptr);
    const int64_t T = w.promptLength();
    int64_t rowsSeen = 0;
    w.attention(2, 5, [&](int64_t row0, int64_t rows, const float* probs) {
        for (int64_t r = 0; r < rows; ++r) {
            double sum = 0.0;
            for (int64_t c = 0; c < T; ++c) {
                if (c > row0 + r) {
                    EXPECT_EQ(probs[r * T + c], 0.0f);
                }
                sum += probs[r * T + c];
            }
            EXPECT_NEAR(sum, 1.0, 1e-4);
        }
        rowsSeen += rows;
    }, {}, nullptr);
    EXPECT_EQ(rowsSeen, T);
    const std::vector<float> region = w.attentionRegion(2, 5, T - 2, T, 0, T);
    double sum = 0.0;
    for (int64_t c = 0; c < T; ++c) sum += region[c];
    EXPECT_NEAR(sum, 1.0, 1e-4);
}

TEST(WorkbenchTest, EvaluateMatchesFullCacheForFullKv) {
    Workbench w;
    w.load(tiny(), {}, nullptr);
    w.capture(plain(prompt(30)), 6, {}, nullptr);
    PressParams full;
    full.method = "full";
    const WorkbenchOutputs out = w.evaluate(full, 6, {}, nullptr);
    EXPECT_EQ(out.metrics.tokens, out.metrics.fullTokens);
    EXPECT_EQ(out.pieces.size(), 6u);
    EXPECT_EQ(out.fullText, out.text);
    EXPECT_DOUBLE_EQ(out.metrics.tokenAgreement, 1.0);
    PressParams snap;
    snap.budget = 20;
    snap.window = 8;
    const WorkbenchOutputs small = w.evaluate(snap, 6, {}, nullptr);
    EXPECT_EQ(small.metrics.fullTokens, out.metrics.fullTokens);  // the same continuation, reused
    EXPECT_LT(small.metrics.bytes, out.metrics.bytes);
}

// Compression during decoding from the GUI's path: KNorm at 20 entries, cut back every 3 steps,
// never holds more than 22 after a step and comes back to 20; a method without a decode rule
// is one line naming the flag.
TEST(WorkbenchTest, EvaluateCompressesDuringDecodingWhenAsked) {
    Workbench w;
    w.load(tiny(), {}, nullptr);
    w.capture(plain(prompt(30)), 12, {}, nullptr);
    PressParams p;
    p.method = "knorm";
    p.budget = 20;
    const WorkbenchOutputs out = w.evaluate(p, 12, {}, nullptr, 3);
    EXPECT_EQ(out.decodeEvery, 3);
    ASSERT_EQ(out.metrics.cacheEntries.size(), 11u);
    EXPECT_EQ(*std::max_element(out.metrics.cacheEntries.begin(), out.metrics.cacheEntries.end()), 22);
    EXPECT_EQ(*std::min_element(out.metrics.cacheEntries.begin(), out.metrics.cacheEntries.end()), 20);
    EXPECT_TRUE(w.evaluate(p, 12, {}, nullptr).metrics.cacheEntries.empty());  // off: it grows
    p.method = "chunkkv";  // a wrapper around its scorer's decode form (SnapKV's votes)
    p.window = 8;
    p.chunk = 4;
    const WorkbenchOutputs chunked = w.evaluate(p, 12, {}, nullptr, 3);
    ASSERT_EQ(chunked.metrics.cacheEntries.size(), 11u);
    EXPECT_LE(*std::max_element(chunked.metrics.cacheEntries.begin(), chunked.metrics.cacheEntries.end()), 22);
    p.method = "cake";
    EXPECT_EQ(errorOf([&] { w.evaluate(p, 12, {}, nullptr, 3); }),
              "compress every: cake has no form for compression during decoding here (snapkv, pyramidkv, "
              "streamingllm, h2o, adakv, random, tova, knorm, keydiff, lagkv, chunkkv, expected, cur, simlayerkv, "
              "perlayer, criticalkv and criticaladakv)");
    p.method = "knorm";
    p.budget = 0;
    p.budgetRatio = 0.5;
    EXPECT_EQ(errorOf([&] { w.evaluate(p, 12, {}, nullptr, 3); }),
              "compress every needs --budget in entries (a ratio of what? the cache grows)");
}

// A decode asked for a method whose first use has not run yet (Finch at a budget it has not
// prefilled) runs it first, saying what it runs, and a cancel stops it there.
TEST(WorkbenchTest, EvaluateRunsAMissingFirstUseWithItsProgress) {
    Workbench w;
    w.load(tiny(), {}, nullptr);
    w.capture(plain(prompt(60)), 6, {}, nullptr);
    PressParams p;
    p.method = "finch";
    p.budget = 20;
    p.window = 8;
    p.finchChunk = 16;
    std::vector<std::string> said;
    std::vector<double> fractions;
    const WorkbenchOutputs out = w.evaluate(
        p, 6,
        [&](double f, const std::string& what) {
            said.push_back(what);
            fractions.push_back(f);
        },
        nullptr);
    EXPECT_EQ(out.metrics.tokens.size(), 6u);
    // One bar: the prefill fills its first half, the decodes the rest, never going back.
    ASSERT_FALSE(fractions.empty());
    for (size_t i = 1; i < fractions.size(); ++i) EXPECT_GE(fractions[i], fractions[i - 1]) << said[i];
    EXPECT_LE(fractions.back(), 1.0);
    EXPECT_GE(fractions.back(), 0.5);
    EXPECT_TRUE(std::any_of(said.begin(), said.end(), [](const std::string& what) {
        return what.rfind("Finch's chunked prefill (chunks of 16): Finch: chunk 1 of ", 0) == 0;
    }));
    std::atomic<bool> stop{true};
    p.budget = 24;
    EXPECT_THROW(w.evaluate(p, 6, {}, &stop), Cancelled);
}

TEST(WorkbenchTest, CancelStopsAndKeepsThePreviousCapture) {
    Workbench w;
    w.load(tiny(), {}, nullptr);
    w.capture(plain(prompt(20)), 0, {}, nullptr);
    const int64_t before = w.promptLength();
    std::atomic<bool> cancel{false};
    EXPECT_THROW(w.capture(plain(prompt(80)), 0,
                           [&](double f, const std::string&) {
                               if (f > 0.2) cancel = true;
                           },
                           &cancel),
                 Cancelled);
    EXPECT_EQ(w.promptLength(), before);
    cancel = true;
    EXPECT_THROW(w.load(tiny(), {}, &cancel), Cancelled);
    EXPECT_TRUE(w.hasCapture());
}

TEST(WorkbenchTest, RefusalsNameTheCulprit) {
    Workbench w;
    EXPECT_EQ(errorOf([&] { w.capture(plain("x"), 0, {}, nullptr); }),
              "no model is loaded: open a model first");
    Workbench::LoadOptions bad = tiny();
    bad.model = "/nonexistent/model.gguf";
    EXPECT_NE(errorOf([&] { w.load(bad, {}, nullptr); }).find("/nonexistent/model.gguf"), std::string::npos);
    EXPECT_FALSE(w.hasModel());
    bad.model = "random:tiny:ctx=64";
    w.load(bad, {}, nullptr);
    EXPECT_EQ(errorOf([&] { w.capture(plain(""), 0, {}, nullptr); }), "prompt: the prompt is empty");
    const std::string longText = prompt(40);
    const int64_t n = w.countTokens(plain(longText));
    EXPECT_EQ(errorOf([&] { w.capture(plain(longText), 0, {}, nullptr); }),
              "prompt: " + std::to_string(n) + " tokens, over the model's context of 64");
    EXPECT_EQ(errorOf([&] { w.select(PressParams{}); }), "no prompt has been run yet");
    w.capture(plain("hello there"), 0, {}, nullptr);
    PressParams p;
    p.budget = 4;
    p.window = 8;
    EXPECT_NE(errorOf([&] { w.select(p); }), "(no error)");
}

// A chat goes as the model's template renders one user turn, its markers parsed as
// control tokens; plain text leaves them as text; a model without a (recognised)
// template refuses a chat in one line naming the file.
TEST(WorkbenchTest, ChatPromptsGoThroughTheModelsTemplate) {
    test::TinyModelShape shape;
    shape.context = 256;
    shape.chatTemplate = "{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}";
    shape.controlTokens = {"<|im_start|>", "<|im_end|>"};
    test::TinyModelFile file = test::makeTinyModelFile(shape);
    const std::string path = test::testOutputPath("workbench_chat.gguf");
    file.builder.writeFile(path);
    const int32_t imStart = static_cast<int32_t>(file.vocab) - 2, imEnd = imStart + 1;

    Workbench w;
    Workbench::LoadOptions o = tiny();
    o.model = path;
    const WorkbenchModel m = w.load(o, {}, nullptr);
    EXPECT_EQ(m.chatTemplate, "chatml");
    const WorkbenchPrompt chat{"the cat", true, true, "be brief"};
    const std::string wrapped = ChatTemplate::apply(ChatTemplate::Family::ChatML, "be brief", "the cat");
    EXPECT_EQ(w.promptText(chat), wrapped);
    const WorkbenchCapture c = w.capture(chat, 0, {}, nullptr);
    EXPECT_EQ(c.text, wrapped);
    EXPECT_EQ(static_cast<int64_t>(c.tokenIds.size()), w.countTokens(chat));
    EXPECT_EQ(std::count(c.tokenIds.begin(), c.tokenIds.end(), imStart), 3);  // system, user, assistant
    EXPECT_EQ(std::count(c.tokenIds.begin(), c.tokenIds.end(), imEnd), 2);
    EXPECT_EQ(c.tokenIds.front(), 1);  // BOS, as the vocabulary asks

    // The same text sent plain: the markers are bytes, not control tokens.
    const WorkbenchCapture raw = w.capture(plain(wrapped), 0, {}, nullptr);
    EXPECT_EQ(std::count(raw.tokenIds.begin(), raw.tokenIds.end(), imStart), 0);
    // Without chat the system message is not sent.
    EXPECT_EQ(w.promptText({"the cat", true, false, "be brief"}), "the cat");

    w.load(tiny(), {}, nullptr);
    EXPECT_EQ(w.model().chatTemplate, "");
    EXPECT_EQ(errorOf([&] { w.countTokens(chat); }),
              "chat template: random:tiny is a random model, without tokenizer.chat_template: send plain text");

    test::TinyModelShape noTemplate;
    test::TinyModelFile bare = test::makeTinyModelFile(noTemplate);
    const std::string barePath = test::testOutputPath("workbench_no_chat.gguf");
    bare.builder.writeFile(barePath);
    o.model = barePath;
    w.load(o, {}, nullptr);
    EXPECT_EQ(errorOf([&] { w.capture(chat, 0, {}, nullptr); }),
              "chat template: " + barePath + " has no tokenizer.chat_template: send plain text");

    test::TinyModelShape odd;
    odd.chatTemplate = "{{ bos }}<<turn>>{{ content }}";
    test::TinyModelFile oddFile = test::makeTinyModelFile(odd);
    const std::string oddPath = test::testOutputPath("workbench_odd_chat.gguf");
    oddFile.builder.writeFile(oddPath);
    o.model = oddPath;
    w.load(o, {}, nullptr);
    EXPECT_EQ(w.model().chatTemplate, "");
    EXPECT_EQ(errorOf([&] { w.countTokens(chat); }).rfind("chat template: " + oddPath +
                                                           ": tokenizer.chat_template is not one KV Lens recognises (it begins '{{ bos }}<<turn>>",
                                                           0),
              0u);
}

// A needle sample on the testbed model: the capture holds the sample's exact tokens
// (the whole of it, or only the context with the question fed after the compression),
// and both ways the full cache answers the same, with the needle's value.
TEST(WorkbenchTest, ANeedleSampleIsCapturedAsTheSweepTokenizedIt) {
    Workbench w;
    Workbench::LoadOptions o;
    o.model = std::string(KVLENS_SOURCE_DIR) + "/models/kvlens-testbed.gguf";
    o.dtype = "f32";
    o.threads = 2;
    w.load(o, {}, nullptr);
    NeedleSpec spec;
    spec.tokens = 512;
    spec.depth = 40;
    spec.seed = 11;
    const NeedleSample sample = makeNeedleSample(spec, *loadTokenizer(o.model));

    const WorkbenchCapture inside = w.captureNeedle(spec, false, 12, {}, nullptr);
    EXPECT_EQ(inside.tokenIds, sample.tokens);
    ASSERT_TRUE(inside.needle.has_value());
    EXPECT_EQ(inside.needle->positions, sample.needlePositions);
    EXPECT_EQ(inside.needle->answers, sample.answers);
    EXPECT_EQ(inside.needle->sampleTokens, static_cast<int64_t>(sample.tokens.size()));
    EXPECT_EQ(inside.text, sample.prompt());
    PressParams full;
    full.method = "full";
    const WorkbenchOutputs a = w.evaluate(full, 12, {}, nullptr);
    EXPECT_NE(a.fullText.find(sample.answers[0]), std::string::npos) << a.fullText;

    const WorkbenchCapture after = w.captureNeedle(spec, true, 12, {}, nullptr);
    EXPECT_EQ(after.tokenIds,
              std::vector<int32_t>(sample.tokens.begin(), sample.tokens.begin() + sample.contextTokens));
    EXPECT_TRUE(after.needle->questionAfter);
    EXPECT_EQ(after.text, sample.context);
    EXPECT_EQ(w.promptLength(), sample.contextTokens);
    const WorkbenchOutputs b = w.evaluate(full, 12, {}, nullptr);
    EXPECT_EQ(b.metrics.fullTokens, a.metrics.fullTokens);  // the question was fed before the answer
    // The question's tokens count against the room for new tokens.
    const int64_t room = w.model().contextLength - static_cast<int64_t>(sample.tokens.size());
    EXPECT_EQ(errorOf([&] { w.evaluate(full, room + 1, {}, nullptr); }),
              "decode: " + std::to_string(room + 1) + " new tokens do not fit: the prompt of " +
                  std::to_string(sample.tokens.size()) + " tokens leaves " + std::to_string(room) +
                  " of the model's context");
    spec.tokens = 8;
    EXPECT_NE(errorOf([&] { w.captureNeedle(spec, false, 12, {}, nullptr); }).find("needs at least"),
              std::string::npos);
}

}  // namespace
}  // namespace kvlens
