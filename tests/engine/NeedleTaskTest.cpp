// Needle tasks: the recorded needle positions are exactly the tokens that spell the
// needles in the tokenized prompt, for SentencePiece and byte-level BPE vocabularies and
// the testbed model's word-level one;
// samples fill the asked length, put the needle at its depth, repeat from a seed, and
// refuse bad specs in one line.
#include <gtest/gtest.h>

#include <fstream>
#include <functional>
#include <memory>

#include "core/Error.h"
#include "engine/eval/NeedleKept.h"
#include "engine/eval/NeedleTask.h"
#include "engine/eval/NeedleTaskName.h"
#include "engine/gguf/GgufFile.h"
#include "engine/testbed/TestbedVocabulary.h"
#include "engine/tokenizer/GgufTokenizer.h"

namespace kvlens {
namespace {

std::unique_ptr<Tokenizer> vocab(const std::string& name) {
    if (name == "testbed") return std::make_unique<LlamaTokenizer>(TestbedVocabulary::standard(), "testbed");
    const std::string path = std::string(KVLENS_SHARED_DIR) + "/testdata/vocab/ggml-vocab-" + name + ".gguf";
    if (!std::ifstream(path).good()) return nullptr;
    GgufFile file(path);
    return GgufTokenizer::fromGguf(file);
}

// The needle tokens found another way: each token's end from decode() of the prompt's
// prefix up to it (not from tokenBytes), then overlap with the spans.
std::vector<int64_t> byPrefixDecode(const Tokenizer& t, const NeedleSample& s) {
    const std::string whole = t.decode(s.tokens), prompt = s.prompt();
    const size_t shift = whole.size() - prompt.size();
    std::vector<int64_t> out;
    size_t before = 0;
    for (size_t i = 0; i < s.tokens.size(); ++i) {
        const std::vector<int32_t> prefix(s.tokens.begin(), s.tokens.begin() + static_cast<long>(i) + 1);
        const size_t end = t.decode(prefix).size();
        const size_t a = before > shift ? before - shift : 0, b = end > shift ? end - shift : 0;
        for (const ByteSpan& n : s.needles) {
            if (end > before && b > 0 && a < n.end && b > n.begin) {
                out.push_back(static_cast<int64_t>(i));
                break;
            }
        }
        before = end;
    }
    return out;
}

class NeedleVocab : public ::testing::TestWithParam<const char*> {};

TEST_P(NeedleVocab, NeedlePositionsAreTheTokensThatSpellTheNeedles) {
    const auto t = vocab(GetParam());
    if (!t) GTEST_SKIP() << "needs ../shared/testdata/vocab/ggml-vocab-" << GetParam() << ".gguf";
    for (const char* kind : {"single", "multikey", "multivalue", "multiquery", "kv", "vt"}) {
        for (double depth : {0.0, 50.0, 100.0}) {
            NeedleSpec spec;
            spec.kind = needleKindNamed(kind);
            spec.tokens = 400;
            spec.depth = depth;
            spec.seed = 7;
            const NeedleSample s = makeNeedleSample(spec, *t);
            SCOPED_TRACE(std::string(GetParam()) + " " + kind + " depth " + std::to_string(depth));
            EXPECT_EQ(s.tokens, t->encode(s.prompt(), true));
            EXPECT_LE(static_cast<int64_t>(s.tokens.size()), 400);
            EXPECT_GT(static_cast<int64_t>(s.tokens.size()), 400 - 60);  // within about one filler sentence
            ASSERT_FALSE(s.needlePositions.empty());
            EXPECT_EQ(s.needlePositions, byPrefixDecode(*t, s));
            for (const ByteSpan& n : s.needles) {  // the tokens spell at least the needle
                const std::string text = s.prompt().substr(n.begin, n.end - n.begin);
                std::vector<int32_t> ids;
                for (int64_t p : s.needlePositions) ids.push_back(s.tokens[static_cast<size_t>(p)]);
                EXPECT_NE(t->decode(ids).find(text.substr(1, text.size() - 2)), std::string::npos) << text;
            }
            for (const std::string& a : s.answers) {
                bool inNeedle = false;
                for (const ByteSpan& n : s.needles)
                    inNeedle |= s.prompt().substr(n.begin, n.end - n.begin).find(a) != std::string::npos;
                EXPECT_TRUE(inNeedle) << a;
            }
            EXPECT_LT(s.needlePositions.back(), s.contextTokens);
            EXPECT_LT(s.contextTokens, static_cast<int64_t>(s.tokens.size()));
        }
    }
}

INSTANTIATE_TEST_SUITE_P(Vocabularies, NeedleVocab,
                         ::testing::Values("llama-spm", "gpt-2", "falcon", "starcoder", "deepseek-llm", "phi-3",
                                           "testbed"));

TEST(NeedleTask, TheNeedleSitsAtItsDepthAndTheSeedRepeatsTheSample) {
    const auto t = vocab("llama-spm");
    if (!t) GTEST_SKIP() << "needs the llama-spm vocabulary";
    for (double depth : {0.0, 25.0, 50.0, 75.0, 100.0}) {
        NeedleSpec spec;
        spec.tokens = 2000;
        spec.depth = depth;
        const NeedleSample s = makeNeedleSample(spec, *t);
        const double where = 100.0 * double(s.needlePositions.front()) / double(s.contextTokens);
        EXPECT_NEAR(where, depth, 3.0) << "depth " << depth;
        EXPECT_EQ(s.answers.size(), 1u);
        EXPECT_EQ(makeNeedleSample(spec, *t).prompt(), s.prompt());
        spec.seed = 2;
        EXPECT_NE(makeNeedleSample(spec, *t).prompt(), s.prompt());
    }
    NeedleSpec many;
    many.kind = NeedleKind::MultiValue;
    many.values = 5;
    many.tokens = 1000;
    EXPECT_EQ(makeNeedleSample(many, *t).answers.size(), 5u);
    EXPECT_EQ(makeNeedleSample(many, *t).needles.size(), 5u);
    many.kind = NeedleKind::VariableTracking;
    many.hops = 3;
    const NeedleSample vt = makeNeedleSample(many, *t);
    EXPECT_EQ(vt.answers.size(), 4u);     // the first name and 3 hops
    EXPECT_EQ(vt.distractors.size(), 4u);  // the other chain
    many.kind = NeedleKind::MultiKey;
    many.distractors = 6;
    EXPECT_EQ(makeNeedleSample(many, *t).distractors.size(), 6u);
    many.kind = NeedleKind::Single;
    many.filler = "Snow fell on the quiet hills. The shepherd counted his sheep again.";
    EXPECT_NE(makeNeedleSample(many, *t).context.find("shepherd counted"), std::string::npos);
}

TEST(NeedleTask, BadSpecsAreOneLineEach) {
    const auto t = vocab("llama-spm");
    if (!t) GTEST_SKIP() << "needs the llama-spm vocabulary";
    auto message = [&](NeedleSpec spec) {
        try {
            makeNeedleSample(spec, *t);
        } catch (const Error& e) {
            return std::string(e.what());
        }
        return std::string("no error");
    };
    NeedleSpec s;
    s.depth = 120;
    EXPECT_EQ(message(s), "needle task: depth 120.000000 is outside 0-100");
    s = NeedleSpec();
    s.tokens = 30;
    EXPECT_NE(message(s).find("needle task: 30 tokens cannot hold the needles and the question (single needs at least"),
              std::string::npos)
        << message(s);
    s = NeedleSpec();
    s.kind = NeedleKind::MultiKey;
    s.distractors = 0;
    EXPECT_EQ(message(s), "needle task: distractors must be at least 1, not 0");
    s = NeedleSpec();
    s.filler = "   ";
    EXPECT_EQ(message(s), "needle task: the filler text has no sentences");
    EXPECT_THROW(needleKindNamed("haystack"), Error);
    try {
        needleKindNamed("haystack");
    } catch (const Error& e) {
        EXPECT_STREQ(e.what(), "unknown needle task 'haystack' (single, multikey, multivalue, multiquery, kv, vt)");
    }
    try {
        tokensCovering(*t, t->encode("hello", false), "goodbye", {});
        ADD_FAILURE() << "no error";
    } catch (const Error& e) {
        EXPECT_STREQ(e.what(), "the tokens do not spell the task's text (they differ from byte 0 on): its needle positions cannot be found");
    }
}

// Needle kept: per layer the mean over heads of the share of the needle's positions
// kept; an empty needle is kept whole.
TEST(NeedleTaskName, NamesTheFillerAndBosAndReadsBackWhatItWrote) {
    EXPECT_EQ(NeedleTaskName::of(NeedleKind::Single, "", false).str(), "single");
    // FNV-1a 64 of "a" is af63dc4c8601ec8c (the published test vector).
    EXPECT_EQ(NeedleTaskName::fillerHashOf("a"), "af63dc4c8601ec8c");
    const NeedleTaskName n = NeedleTaskName::of(NeedleKind::MultiKey, "a", true);
    EXPECT_EQ(n.str(), "multikey+filler:af63dc4c8601ec8c+no-bos");
    const NeedleTaskName back = NeedleTaskName::parse(n.str());
    EXPECT_EQ(back.kind, NeedleKind::MultiKey);
    EXPECT_EQ(back.fillerHash, "af63dc4c8601ec8c");
    EXPECT_TRUE(back.noBos);
    EXPECT_EQ(NeedleTaskName::parse("vt+no-bos").str(), "vt+no-bos");

    // The seed rule of a sweep's samples, BOS as the name and the vocabulary say.
    const NeedleSpec spec = NeedleTaskName::parse("single").sampleSpec(11, 2048, 30.0, 2, "", true);
    EXPECT_EQ(spec.seed, 11u + 2u * 1000003u);
    EXPECT_EQ(spec.tokens, 2048);
    EXPECT_EQ(spec.depth, 30.0);
    EXPECT_TRUE(spec.addBos);
    EXPECT_FALSE(NeedleTaskName::parse("single+no-bos").sampleSpec(11, 2048, 30.0, 0, "", true).addBos);
    EXPECT_FALSE(NeedleTaskName::parse("single").sampleSpec(11, 2048, 30.0, 0, "", false).addBos);
    EXPECT_EQ(n.sampleSpec(1, 512, 0.0, 0, "a", true).filler, "a");

    auto message = [](const std::function<void()>& f) {
        try {
            f();
        } catch (const Error& e) {
            return std::string(e.what());
        }
        return std::string();
    };
    EXPECT_EQ(message([] { NeedleTaskName::parse("needle"); }), "task 'needle': 'needle' is not a needle task");
    EXPECT_EQ(message([] { NeedleTaskName::parse("single+filler:12"); }),
              "task 'single+filler:12': '+filler:12' is not +filler:<16 hex digits> or +no-bos");
    EXPECT_EQ(message([] { NeedleTaskName::parse("single+no-bos+no-bos"); }),
              "task 'single+no-bos+no-bos': '+no-bos' is not +filler:<16 hex digits> or +no-bos");
    EXPECT_EQ(message([&] { n.sampleSpec(1, 512, 0.0, 0, "b", true); }),
              "task 'multikey+filler:af63dc4c8601ec8c+no-bos' ran on a filler file whose FNV-1a hash is "
              "af63dc4c8601ec8c, not " + NeedleTaskName::fillerHashOf("b"));
    EXPECT_EQ(message([&] { n.sampleSpec(1, 512, 0.0, 0, "", true); }),
              "task 'multikey+filler:af63dc4c8601ec8c+no-bos' ran on a filler file whose FNV-1a hash is "
              "af63dc4c8601ec8c, not the built-in filler");
    EXPECT_EQ(message([] { NeedleTaskName::parse("single").sampleSpec(1, 512, 0.0, 0, "a", true); }),
              "task 'single' ran on the built-in filler, not a --filler file (its hash af63dc4c8601ec8c)");
}

TEST(NeedleKept, IsTheMeanOverHeadsOfTheShareKept) {
    Selection s;
    s.kept = {{{1, 2, 3}, {2, 9}}, {{}, {1, 2, 3, 9}}};
    const NeedleKept k = needleKept(s, {2, 3, 9});
    ASSERT_EQ(k.perLayer.size(), 2u);
    EXPECT_DOUBLE_EQ(k.perLayer[0], (2.0 / 3.0 + 2.0 / 3.0) / 2.0);
    EXPECT_DOUBLE_EQ(k.perLayer[1], (0.0 + 1.0) / 2.0);
    EXPECT_DOUBLE_EQ(k.mean, (k.perLayer[0] + k.perLayer[1]) / 2.0);
    EXPECT_DOUBLE_EQ(needleKept(s, {}).mean, 1.0);
}

}  // namespace
}  // namespace kvlens
