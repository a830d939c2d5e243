// Press::scores is what each press ranks by: for every method of the table (and every
// wrapper over several scorers), on a model's capture with every replay and norm made, the
// positions a head keeps score at least every position it drops, but where the method
// table's rankRule says how else its scores order what it keeps (LagKV per partition,
// CriticalKV's first stage), and NaN exactly where it keeps whole. Also the GQA mode: the
// scores have the selection's heads whatever the panel's disabled combo says.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/Methods.h"
#include "engine/compress/Capture.h"
#include "engine/compress/RepeatPrompt.h"
#include "engine/compress/presses/CriticalKvPress.h"
#include "engine/compress/presses/Press.h"
#include "engine/compress/presses/PressScores.h"
#include "engine/model/LlamaModel.h"
#include "engine/model/ModelSpec.h"
#include "engine/model/ModelWeights.h"

namespace kvlens {
namespace {

struct Fixture {
    ModelConfig config;
    std::unique_ptr<LlamaModel> model;
    std::shared_ptr<Capture> capture;

    Fixture() {
        config = ModelSpec::parse("random:tiny:layers=2").randomConfig();  // 8 query heads, D = 32
        config.nKvHeads = 2;
        model = std::make_unique<LlamaModel>(config, ModelWeights::random(config, 21, c10::Device(c10::kCPU), c10::kFloat),
                                             c10::Device(c10::kCPU), c10::kFloat);
        std::vector<int32_t> prompt(180);
        for (size_t i = 0; i < prompt.size(); ++i) prompt[i] = int32_t((i * 41 + 7) % 480 + 2);
        capture = Capture::fromPrefill(*model, prompt);
        RepeatPrompt repeat;
        repeat.first = {7, 8, 9};
        repeat.later = {10, 11};
        repeat.suffix = {12};
        capture->setRepeatPrompt(repeat);
    }
};

Fixture& fixture() {
    static Fixture f;
    return f;
}

struct Case {
    std::string method, scorer;
    Convention convention = Convention::Paper;
};

std::vector<Case> cases() {
    std::vector<Case> out;
    for (const MethodInfo& m : methods::all()) {
        out.push_back({m.name, ""});
        if (m.takesScorer)
            for (const char* s : {"knorm", "cur", "lagkv", "expected", "snapkv"})
                if (s != std::string(m.defaultScorer)) out.push_back({m.name, s});
    }
    // And under --convention kvpress, every method (and scorer) it can run.
    const size_t paper = out.size();
    for (size_t i = 0; i < paper; ++i) {
        PressParams p;
        p.method = out[i].method;
        p.scorer = out[i].scorer;
        // chunkkv and finch run as their kvpress twins, which have their own cases.
        if (methods::kvpressReproduced(p) && !methods::named(p.method).kvpressTwin)
            out.push_back({out[i].method, out[i].scorer, Convention::Kvpress});
    }
    for (const char* s : {"tova", "keydiff"}) out.push_back({"adakv", s, Convention::Kvpress});
    return out;
}

class PressScoresRule : public ::testing::TestWithParam<Case> {};

TEST_P(PressScoresRule, KeptPositionsScoreAtLeastDroppedOnes) {
    Fixture& f = fixture();
    const Capture& c = *f.capture;
    const int64_t T = c.promptLength();
    PressParams p;
    p.method = GetParam().method;
    p.scorer = GetParam().scorer;
    p.budget = 90;
    p.window = 16;
    p.lag = 24;
    p.chunk = 6;
    p.repeatChunk = 64;
    p.finchChunk = 64;
    p.attnChunk = 64;
    p.gqa = GqaMode::QueryHead;  // as a disabled combo may still say: only voting methods read it
    p.convention = GetParam().convention;
    if (p.convention == Convention::Kvpress) {  // kvpress's only settings
        p.pooling = Pooling::Avg;
        p.gqa = GqaMode::KvHead;
    }
    const MethodInfo& info = methods::named(p.method);
    c.keepScoresFor(*f.model, p);
    const std::unique_ptr<Press> press = Press::create(p.method);
    const Selection s = press->select(c, p);
    const PressParams shown = Press::selectionParams(p);
    EXPECT_EQ(shown.gqa, s.gqa) << p.method;
    for (int64_t l = 0; l < c.layers(); ++l) {
        const std::vector<std::vector<float>> scores = press->scores(c, shown, l);
        if (info.decode == DecodeForm::None && info.family == MethodFamily::OwnPrefill) {
            EXPECT_TRUE(scores.empty()) << p.method;
            continue;
        }
        if (std::string(info.rankRule).rfind("ranks nothing", 0) == 0) {
            EXPECT_TRUE(scores.empty()) << p.method << ": " << info.rankRule;
            continue;
        }
        ASSERT_EQ(int64_t(scores.size()), s.headsPerLayer()) << p.method << " layer " << l;
        // The first stage of CriticalKV: the scorer's own best, kept whatever the second stage shows.
        presses::HeadScores scorer;
        if (info.id == MethodId::CriticalKv || info.id == MethodId::CriticalAdaKv)
            scorer = presses::scorerScores(c, l, shown);
        for (int64_t h = 0; h < s.headsPerLayer(); ++h) {
            const std::vector<float>& row = scores[size_t(h)];
            ASSERT_EQ(int64_t(row.size()), T) << p.method;
            std::vector<char> kept(size_t(T), 0);
            for (int32_t pos : s.kept[size_t(l)][size_t(h)]) kept[size_t(pos)] = 1;
            if (info.id == MethodId::SimLayerKv) continue;  // keeps by recency (its rankRule)
            // NaN only where kept whole.
            for (int64_t t = 0; t < T; ++t) {
                if (std::isnan(row[size_t(t)])) {
                    EXPECT_TRUE(kept[size_t(t)]) << p.method << " NaN but dropped at " << t;
                }
            }
            // Compare within each group the rule names: a LagKV partition, or the whole head.
            auto groupOf = [&](int64_t t) -> int64_t {
                return info.id == MethodId::LagKv ? (t - p.sinks) / p.lag : 0;
            };
            // The first stage's picks: the head's best scorer scores among what it kept.
            std::vector<char> firstStage(size_t(T), 0);
            if (!scorer.empty()) {
                std::vector<int32_t> ranked;
                for (int64_t t = 0; t < T; ++t)
                    if (kept[size_t(t)] && !std::isnan(scorer[size_t(h)][size_t(t)])) ranked.push_back(int32_t(t));
                std::stable_sort(ranked.begin(), ranked.end(), [&](int32_t a, int32_t b) {
                    return scorer[size_t(h)][size_t(a)] > scorer[size_t(h)][size_t(b)];
                });
                for (size_t i = 0; i < ranked.size(); ++i) {
                    // A kept position at least as good by the scorer as every dropped one may
                    // be a first-stage pick.
                    float bestDropped = -INFINITY;
                    for (int64_t t = 0; t < T; ++t)
                        if (!kept[size_t(t)] && !std::isnan(scorer[size_t(h)][size_t(t)]))
                            bestDropped = std::max(bestDropped, scorer[size_t(h)][size_t(t)]);
                    if (scorer[size_t(h)][size_t(ranked[i])] >= bestDropped) firstStage[size_t(ranked[i])] = 1;
                }
            }
            std::map<int64_t, float> lowestKept, highestDropped;
            for (int64_t t = 0; t < T; ++t) {
                const float v = row[size_t(t)];
                if (std::isnan(v) || firstStage[size_t(t)]) continue;
                const int64_t g = groupOf(t);
                if (kept[size_t(t)]) {
                    auto it = lowestKept.emplace(g, v).first;
                    it->second = std::min(it->second, v);
                } else {
                    auto it = highestDropped.emplace(g, v).first;
                    it->second = std::max(it->second, v);
                }
            }
            for (const auto& [g, low] : lowestKept) {
                auto d = highestDropped.find(g);
                if (d == highestDropped.end()) continue;
                EXPECT_GE(low, d->second) << p.method << (p.scorer.empty() ? "" : " --scorer " + p.scorer) << " layer "
                                          << l << " head " << h << " group " << g;
            }
        }
    }
}

std::string caseName(const ::testing::TestParamInfo<Case>& info) {
    std::string n = info.param.method + (info.param.scorer.empty() ? "" : "_" + info.param.scorer) +
                    (info.param.convention == Convention::Kvpress ? "_kvpress" : "");
    for (char& ch : n)
        if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
    return n;
}

INSTANTIATE_TEST_SUITE_P(AllMethods, PressScoresRule, ::testing::ValuesIn(cases()), caseName);

}  // namespace
}  // namespace kvlens
