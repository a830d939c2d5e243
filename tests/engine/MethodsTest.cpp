// The method table (core/Methods) and what reads it: the tables' order against their enums,
// the knobs each method in effect reads, describe() lines that read back as the same doubles,
// the one-line errors, and docs/methods.md equal to `kvlens methods --markdown`.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <limits>
#include <set>
#include <sstream>

#include "core/Error.h"
#include "core/Methods.h"
#include "core/ParamsJson.h"
#include "core/PressParams.h"
#include "engine/compress/DecodeCompressor.h"
#include "engine/compress/presses/Press.h"

namespace kvlens {
namespace {

std::string errorOf(const std::function<void()>& f) {
    try {
        f();
    } catch (const Error& e) {
        return e.what();
    }
    return "";
}

TEST(Methods, TheTablesAreInTheirEnumsOrder) {
    ASSERT_EQ(methods::all().size(), size_t(MethodId::ChunkKvKvpress) + 1);
    std::set<std::string> names;
    for (size_t i = 0; i < methods::all().size(); ++i) {
        const MethodInfo& m = methods::all()[i];
        EXPECT_EQ(size_t(m.id), i) << m.name;
        EXPECT_TRUE(names.insert(m.name).second) << "twice: " << m.name;
        EXPECT_EQ(&methods::info(m.id), &m);
        EXPECT_EQ(methods::find(m.name), &m);
        // A method that takes --scorer reads it and names a scorer that exists.
        EXPECT_EQ(m.takesScorer, m.knobs.has(Knob::Scorer)) << m.name;
        if (m.takesScorer) {
            const MethodInfo* s = methods::find(m.defaultScorer);
            ASSERT_NE(s, nullptr) << m.name;
            EXPECT_TRUE(s->usableAsScorer) << m.name;
        } else {
            EXPECT_STREQ(m.defaultScorer, "") << m.name;
        }
        // A scorer lends the knobs it reads as a method (CAKE's layer preference aside).
        if (m.usableAsScorer && m.id != MethodId::Cake) {
            EXPECT_EQ(m.scorerKnobs, m.knobs) << m.name;
        }
        if (!m.usableAsScorer) {
            EXPECT_TRUE(m.scorerKnobs.empty()) << m.name;
        }
        // Every method the press registry knows.
        EXPECT_NE(Press::create(m.name), nullptr) << m.name;
    }
    ASSERT_EQ(methods::knobs().size(), size_t(Knob::Count_));
    for (size_t i = 0; i < methods::knobs().size(); ++i) EXPECT_EQ(size_t(methods::knobs()[i].knob), i);
}

// The kvpress column: a method with a kvpress form names its press (or its twin, kvpress's port
// of it, that runs for it); one refused under
// --convention kvpress says why (its delta, or no press at all); only a method whose form
// changes with the convention keeps something else whole under it.
TEST(Methods, TheKvpressColumnsAgree) {
    for (const MethodInfo& m : methods::all()) {
        if (m.kvpressForm != KvpressForm::None && m.kvpressForm != KvpressForm::Twin &&
            m.id != MethodId::Full) {  // (FullKV needs no press)
            EXPECT_STRNE(m.kvpress, "") << m.name;
        }
        // A twin is named exactly when the form says so, and it is itself reproduced.
        EXPECT_EQ(m.kvpressTwin.has_value(), m.kvpressForm == KvpressForm::Twin) << m.name;
        if (m.kvpressTwin) {
            const KvpressForm twin = methods::info(*m.kvpressTwin).kvpressForm;
            EXPECT_TRUE(twin == KvpressForm::Same || twin == KvpressForm::Convention) << m.name;
        }
        if (m.kvpressForm == KvpressForm::None && *m.kvpress) {
            EXPECT_STRNE(m.kvpressDelta, "") << m.name;
        }
        if (m.kvpressKeeps) {
            EXPECT_EQ(m.kvpressForm, KvpressForm::Convention) << m.name;
        }
        PressParams p;
        p.method = m.name;
        EXPECT_EQ(methods::effectiveKnobs(p).has(Knob::Convention), m.kvpressForm != KvpressForm::None) << m.name;
        p.convention = Convention::Kvpress;
        EXPECT_EQ(p.keepsOwn(Keep::Window), (m.kvpressKeeps ? *m.kvpressKeeps : m.keeps).has(Keep::Window)) << m.name;
    }
    // AdaKV keeps its window under the paper's convention, not under kvpress's; TOVA the reverse for
    // the last position.
    PressParams ada;
    ada.method = "adakv";
    EXPECT_TRUE(ada.keepsOwn(Keep::Window));
    ada.convention = Convention::Kvpress;
    EXPECT_FALSE(ada.keepsOwn(Keep::Window));
    PressParams tova;
    tova.method = "tova";
    EXPECT_FALSE(tova.keepsOwn(Keep::Last));
    tova.convention = Convention::Kvpress;
    EXPECT_TRUE(tova.keepsOwn(Keep::Last));
}

// The table's tests column (kvlens methods --json/--markdown) names tests of this binary:
// every filter matches at least one registered test, so a renamed test breaks the column here.
TEST(Methods, EveryMethodsTestsColumnNamesTestsThatExist) {
    std::vector<std::string> registered;
    const ::testing::UnitTest& unit = *::testing::UnitTest::GetInstance();
    for (int i = 0; i < unit.total_test_suite_count(); ++i) {
        const ::testing::TestSuite& suite = *unit.GetTestSuite(i);
        for (int j = 0; j < suite.total_test_count(); ++j)
            registered.push_back(std::string(suite.name()) + "." + suite.GetTestInfo(j)->name());
    }
    // "Suite.*" or "Suite.Name" (a parameterised test's "Suite.Name/3" included).
    auto matches = [&](const std::string& filter) {
        return std::any_of(registered.begin(), registered.end(), [&](const std::string& t) {
            if (filter.size() > 2 && filter.compare(filter.size() - 2, 2, ".*") == 0)
                return t.rfind(filter.substr(0, filter.size() - 1), 0) == 0;
            return t == filter || t.rfind(filter + "/", 0) == 0;
        });
    };
    const auto table = nlohmann::json::parse(methods::tableJson());
    ASSERT_EQ(table["methods"].size(), methods::all().size());
    for (const auto& m : table["methods"]) {
        const std::string tests = m["tests"];
        EXPECT_FALSE(tests.empty()) << m["name"];
        std::istringstream in(tests);
        for (std::string filter; std::getline(in, filter, ',');) {
            filter.erase(0, filter.find_first_not_of(' '));
            EXPECT_TRUE(matches(filter)) << m["name"] << ": no test matches '" << filter << "'";
        }
    }
}

TEST(Methods, AnUnknownNameIsOneLineListingTheTable) {
    const std::string e = errorOf([] { methods::named("snapk"); });
    EXPECT_EQ(e.rfind("--method 'snapk' is not one of full, snapkv, pyramidkv,", 0), 0u) << e;
    EXPECT_NE(e.find(", chunkkv-kvpress"), std::string::npos) << e;
    EXPECT_EQ(e.find('\n'), std::string::npos);
    EXPECT_EQ(errorOf([] { Press::create("nope"); }).rfind("--method 'nope' is not one of full,", 0), 0u);
    PressParams p;
    p.method = "snapkv";
    p.scorer = "knorm";
    p.budget = 64;
    EXPECT_EQ(errorOf([&] { p.validateSettings(); }),
              "--scorer is for adakv, chunkkv, cake, perlayer, criticalkv, criticaladakv and chunkkv-kvpress, "
              "not --method snapkv");
}

// What each wrapper reads depends on its scorer, as the table composes them.
TEST(Methods, TheKnobsAMethodReadsComposeWithItsScorer) {
    auto reads = [](const std::string& method, const std::string& scorer = "", double think = 0.0) {
        PressParams p;
        p.method = method;
        p.scorer = scorer;
        p.think = think;
        return methods::effectiveKnobs(p);
    };
    // ChunkKV sums SnapKV's votes unpooled (GQA mode, no kernel); kvpress's ChunkKV pools them
    // but keeps one set per KV head (kernel, no GQA mode).
    EXPECT_TRUE(reads("chunkkv").has(Knob::Gqa));
    EXPECT_FALSE(reads("chunkkv").has(Knob::Kernel));
    EXPECT_TRUE(reads("chunkkv-kvpress").has(Knob::Kernel));
    EXPECT_FALSE(reads("chunkkv-kvpress").has(Knob::Gqa));
    EXPECT_TRUE(reads("chunkkv-kvpress").has(Knob::Window));
    EXPECT_FALSE(reads("chunkkv-kvpress", "knorm").has(Knob::Window));
    // CAKE by its own indicator reads gamma; by SnapKV's votes the pooling instead.
    EXPECT_TRUE(reads("cake").has(Knob::Gamma));
    EXPECT_FALSE(reads("cake", "snapkv").has(Knob::Gamma));
    EXPECT_TRUE(reads("cake", "snapkv").has(Knob::Kernel));
    // AdaKV by LagKV keeps LagKV's sinks and tail.
    EXPECT_TRUE(reads("adakv", "lagkv").has(Knob::Lag));
    EXPECT_TRUE(reads("adakv", "lagkv").has(Knob::Sinks));
    EXPECT_FALSE(reads("adakv", "lagkv").has(Knob::Kernel));
    // ThinK reads the window whatever the method.
    EXPECT_FALSE(reads("knorm").has(Knob::Window));
    EXPECT_TRUE(reads("knorm", "", 0.25).has(Knob::Window));
    EXPECT_TRUE(reads("full", "", 0.25).has(Knob::Think));
    // Compactor, as a method or a scorer, reads its halves' knobs.
    EXPECT_TRUE(reads("adakv", "compactor").has(Knob::Sketch));
    EXPECT_TRUE(reads("adakv", "compactor").has(Knob::AttnChunk));
    EXPECT_TRUE(reads("adakv", "compactor").has(Knob::Seed));
    PressParams p;
    p.method = "adakv";
    p.scorer = "compactor";
    EXPECT_TRUE(p.ranksBy("leverage"));
    EXPECT_TRUE(p.ranksBy("noncausal"));
    EXPECT_FALSE(p.ranksBy("kvzip"));
}

// The decode forms are the table's: every method with one is accepted, every other refused.
TEST(Methods, DecodeFormsComeFromTheTable) {
    for (const MethodInfo& m : methods::all()) {
        EXPECT_EQ(DecodeCompressor::supports(m.name), m.decode != DecodeForm::None) << m.name;
        EXPECT_EQ(DecodeCompressor::wraps(m.name), m.decode == DecodeForm::ViaScorer) << m.name;
        if (m.decode == DecodeForm::None) {
            PressParams p;
            p.method = m.name;
            p.budget = 64;
            const std::string e = errorOf([&] { DecodeCompressor(p, 4); });
            EXPECT_EQ(e.rfind("--decode-every: " + std::string(m.name) + " has no form for compression during decoding", 0),
                      0u)
                << e;
        }
    }
    EXPECT_EQ(DecodeCompressor::supportedList(),
              "snapkv, pyramidkv, streamingllm, h2o, adakv, random, tova, knorm, keydiff, lagkv, chunkkv, expected, "
              "cur, simlayerkv, perlayer, criticalkv and criticaladakv");
}

// describe() lines are how NIAH runs are stored and reopened: every double reads back as the
// same double, and every 64-bit seed as the same seed.
TEST(Methods, DescriptionsReadBackExactly) {
    PressParams p;
    p.method = "pyramidkv";
    p.budget = 0;
    p.budgetRatio = 0.1 + 0.2;  // 0.30000000000000004
    p.beta = 1.0 + 1.0 / 3.0;
    p.window = 17;
    PressParams back = PressParams::fromDescription(p.describe());
    EXPECT_EQ(back.budgetRatio, p.budgetRatio) << p.describe();
    EXPECT_EQ(back.beta, p.beta) << p.describe();
    for (double ratio : {1.0 / 3.0, 0.07, 0.125, 1e-3 / 7.0, 0.999999999999}) {
        p.budgetRatio = ratio;
        EXPECT_EQ(PressParams::fromDescription(p.describe()).budgetRatio, ratio) << p.describe();
    }
    PressParams a;
    a.method = "criticaladakv";
    a.budget = 80;
    a.alpha = 0.1 + 0.2;
    back = PressParams::fromDescription(a.describe());
    EXPECT_EQ(back.alpha, a.alpha) << a.describe();
    PressParams r;
    r.method = "random";
    r.budget = 80;
    r.seed = std::numeric_limits<uint64_t>::max() - 2;
    EXPECT_EQ(PressParams::fromDescription(r.describe()).seed, r.seed) << r.describe();
    EXPECT_EQ(errorOf([] { PressParams::fromDescription("random B=8 seed=-1", "niah params"); }),
              "niah params: seed '-1' is not a non-negative integer");
    EXPECT_EQ(errorOf([] { PressParams::fromDescription("random B=8 seed=99999999999999999999", "niah params"); }),
              "niah params: seed '99999999999999999999' is not a non-negative integer");
    // Lines written before the table (chunkkv's GQA mode after its chunk) still read.
    back = PressParams::fromDescription("chunkkv B=96 W=32 chunk=10 query-head");
    EXPECT_EQ(back.gqa, GqaMode::QueryHead);
    EXPECT_EQ(back.chunk, 10);
}

// A description names exactly the knobs the method in effect reads.
// A value away from each knob's default, as its text, and values it must refuse.
struct KnobProbe {
    Knob knob;
    std::string good;
    std::vector<std::string> bad;
};

std::vector<KnobProbe> knobProbes() {
    std::vector<KnobProbe> out;
    for (const KnobInfo& k : methods::knobs()) {
        KnobProbe p{k.knob, "", {}};
        switch (k.type) {
            case KnobType::Int:
                p.good = std::to_string(k.max == 1 << 12 ? 31 : 17);
                p.bad = {"x", "", "3.5", std::to_string(k.min - 1), std::to_string(k.max + 1), "99999999999999999999"};
                break;
            case KnobType::Real:
                p.good = "0.30000000000000004";
                p.bad = {"x", "", "inf", "nan", "1e999"};
                break;
            case KnobType::Seed:
                p.good = "18446744073709551614";
                p.bad = {"-1", "x", "", "18446744073709551616"};
                break;
            case KnobType::Word:
                p.good = std::string(k.words).substr(std::string(k.words).find('|') + 1);
                p.bad = {"nope", ""};
                break;
            case KnobType::Name:
                p.good = "keydiff";
                p.bad = {"nope", "full"};
                break;
            case KnobType::Reals:
                p.good = "0.1,0.30000000000000004";
                p.bad = {"1,,2", "1,two", "1,", ""};
                break;
        }
        out.push_back(p);
    }
    return out;
}

// One reader per knob (methods::setKnob) for flags, describe() lines and JSON: each knob's
// text reads back as itself, in JSON too, and every bad value is refused naming the flag.
TEST(KnobTable, EveryKnobReadsBackWhatItWroteInTextAndJson) {
    PressParams all;
    all.method = "adakv";
    all.budget = 96;
    for (const KnobProbe& probe : knobProbes()) {
        const KnobInfo& k = methods::knob(probe.knob);
        PressParams p;
        methods::setKnob(p, probe.knob, probe.good, k.flag);
        EXPECT_EQ(methods::knobValue(p, probe.knob), probe.good) << k.flag;
        EXPECT_NE(methods::knobValue(p, probe.knob), methods::knobValue(PressParams(), probe.knob)) << k.flag;
        methods::setKnob(all, probe.knob, probe.good, k.flag);
        for (const std::string& bad : probe.bad) {
            const std::string message = errorOf([&] { methods::setKnob(p, probe.knob, bad, k.flag); });
            EXPECT_EQ(message.rfind(k.flag, 0), 0u) << k.flag << " " << bad << ": " << message;
            EXPECT_NE(message, std::string(k.flag)) << bad;
            EXPECT_EQ(message.find('\n'), std::string::npos) << message;
        }
    }
    const nlohmann::json j = methods::paramsJson(all);
    EXPECT_EQ(j.size(), methods::knobs().size() + 3);
    const PressParams back = methods::paramsFromJson(nlohmann::json::parse(j.dump()), "params");
    for (const KnobInfo& k : methods::knobs())
        EXPECT_EQ(methods::knobValue(back, k.knob), methods::knobValue(all, k.knob)) << k.flag;
    EXPECT_EQ(methods::paramsJson(back), j);
    EXPECT_EQ(back.method, "adakv");
    EXPECT_EQ(back.budget, 96);
    // A describe() line of every knob the method reads reads back the same.
    EXPECT_EQ(PressParams::fromDescription(all.describe()).describe(), all.describe());
}

// kvpress's PyramidKV has its own schedule: under its convention --schedule is not read, so
// describe() leaves it out and the GUI greys it; under the paper's it is read.
TEST(KnobTable, PyramidKvsScheduleIsUnreadUnderKvpress) {
    PressParams p;
    p.method = "pyramidkv";
    p.budget = 128;
    EXPECT_TRUE(methods::effectiveKnobs(p).has(Knob::Schedule));
    EXPECT_NE(p.describe().find(" exact"), std::string::npos) << p.describe();
    p.convention = Convention::Kvpress;
    EXPECT_FALSE(methods::effectiveKnobs(p).has(Knob::Schedule));
    EXPECT_TRUE(methods::effectiveKnobs(p).has(Knob::Beta));
    EXPECT_EQ(p.describe().find(" exact"), std::string::npos) << p.describe();
    EXPECT_NE(p.describe().find("kvpress"), std::string::npos) << p.describe();
    EXPECT_EQ(methods::knobReaders(methods::knob(Knob::Schedule)), "pyramidkv; not pyramidkv under --convention kvpress");
    for (const auto& m : nlohmann::json::parse(methods::tableJson())["methods"])
        EXPECT_EQ(m["kvpress_unread"], m["name"] == "pyramidkv" ? nlohmann::json::array({"schedule"})
                                                                 : nlohmann::json::array())
            << m["name"];
}

TEST(KnobTable, JsonOfTheWrongTypeOrAnUnknownKeyIsOneLineNamingTheField) {
    auto fromJson = [](const std::string& text) {
        return errorOf([&] { methods::paramsFromJson(nlohmann::json::parse(text), "run 3"); });
    };
    EXPECT_EQ(fromJson(R"({"method": "snapkv", "window": "32"})"), "run 3.window: expected an integer, got a string");
    EXPECT_EQ(fromJson(R"({"method": "snapkv", "window": 0})"), "run 3.window '0' is not an integer in [1, 1048576]");
    EXPECT_EQ(fromJson(R"({"method": "snapkv", "window": 18446744073709551615})"),
              "run 3.window '18446744073709551615' is not an integer in [1, 1048576]");
    EXPECT_EQ(fromJson(R"({"method": "snapkv", "beta": null})"), "run 3.beta: expected a number, got null");
    EXPECT_EQ(fromJson(R"({"method": "snapkv", "pool": 1})"), "run 3.pool: expected a string, got an integer");
    EXPECT_EQ(fromJson(R"({"method": "snapkv", "pool": "mean"})"), "run 3.pool 'mean' is not max or avg");
    EXPECT_EQ(fromJson(R"({"method": "snapkv", "seed": -1})"), "run 3.seed '-1' is not a non-negative integer");
    EXPECT_EQ(fromJson(R"({"method": "snapkv", "blend": -1})"),
              "run 3.blend '-1' must be >= 0 (or auto: the compression ratio)");
    EXPECT_EQ(fromJson(R"({"method": "snapkv", "blend": true})"),
              "run 3.blend: expected a number or \"auto\", got a boolean");
    EXPECT_EQ(fromJson(R"({"method": "snapkv", "layer_weights": "1,2"})"),
              "run 3.layer_weights: expected a list of numbers, got a string");
    EXPECT_EQ(fromJson(R"({"method": "snapkv", "windw": 32})"), "run 3: 'windw' is not a parameter of a method");
    EXPECT_EQ(fromJson(R"({"window": 32})"), "run 3: no method");
    EXPECT_EQ(fromJson(R"({"method": 7})"), "run 3.method: expected a string, got an integer");
    EXPECT_EQ(fromJson(R"({"method": "snapkv", "budget": -3})"), "run 3.budget -3 is outside [0, 2147483648]");
    EXPECT_EQ(fromJson(R"({"method": "snapkv", "budget": 1.5})"), "run 3.budget: expected an integer, got a number");
    EXPECT_EQ(fromJson(R"({"method": "snapkv", "budget_ratio": 2})"), "run 3.budget_ratio 2 is outside [0, 1]");
    EXPECT_EQ(fromJson(R"([1])"), "run 3: expected an object of parameters, got a list");
    EXPECT_EQ(fromJson(R"({"method": "snapkv", "blend": "auto", "layer_weights": []})"), "");
}

TEST(Methods, ADescriptionNamesTheKnobsTheMethodReads) {
    PressParams p;
    p.method = "chunkkv-kvpress";
    p.budget = 70;
    EXPECT_EQ(p.describe(), "chunkkv-kvpress B=70 W=32 k=7 max chunk=10");
    p.method = "chunkkv";
    EXPECT_EQ(p.describe(), "chunkkv B=70 W=32 kv-head chunk=10");
    p.method = "cake";
    EXPECT_EQ(p.describe(), "cake B=70 W=32 tau1=1 tau2=1 gamma=200");
    p.method = "compactor";
    EXPECT_EQ(p.describe(), "compactor B=70 W=32 sinks=4 sketch=48 attn-chunk=256 seed=0");
    p.blend = 0.5;
    EXPECT_EQ(p.describe(), "compactor B=70 W=32 sinks=4 sketch=48 attn-chunk=256 blend=0.5 seed=0");
    EXPECT_EQ(methods::knobsText(p, KnobSet{Knob::Sinks, Knob::Blend, Knob::Beta}), "sinks 4, blend 0.5");
}

// docs/methods.md is `kvlens methods --markdown`: regenerate it with
//   build/app/kvlens methods --markdown > docs/methods.md
TEST(Methods, TheMethodsPageIsTheTable) {
    const std::string path = std::string(KVLENS_SOURCE_DIR) + "/docs/methods.md";
    std::ifstream in(path);
    ASSERT_TRUE(in) << "missing " << path;
    std::stringstream page;
    page << in.rdbuf();
    EXPECT_EQ(page.str(), methods::tableMarkdown())
        << path << " differs from the method table: build/app/kvlens methods --markdown > docs/methods.md";
}

TEST(Methods, TheJsonHoldsEveryMethodAndKnob) {
    const std::string json = methods::tableJson();
    for (const MethodInfo& m : methods::all())
        EXPECT_NE(json.find("\"name\": \"" + std::string(m.name) + "\""), std::string::npos) << m.name;
    for (const KnobInfo& k : methods::knobs())
        EXPECT_NE(json.find("\"flag\": \"" + std::string(k.flag) + "\""), std::string::npos) << k.flag;
}

}  // namespace
}  // namespace kvlens
