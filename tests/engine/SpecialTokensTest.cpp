// Hard cases against llama.cpp's own ids (tests/data/tokenizer-hard-cases.json,
// from llamacpp-reference --tokenize --raw [--special]): long digit runs, mixed
// scripts, whitespace runs, emoji sequences, code, contractions, Unicode spaces,
// and control tokens parsed with --special (Phi-3's rstrip included); and the
// end-of-generation ids each vocabulary stops at.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <nlohmann/json.hpp>

#include "engine/gguf/GgufFile.h"
#include "engine/tokenizer/GgufTokenizer.h"

namespace kvlens {
namespace {

std::string vocabPath(const std::string& v) {
    return std::string(KVLENS_SHARED_DIR) + "/testdata/vocab/ggml-vocab-" + v + ".gguf";
}

TEST(SpecialTokens, HardCasesEqualLlamaCppsIds) {
    std::ifstream in(std::string(KVLENS_SOURCE_DIR) + "/tests/data/tokenizer-hard-cases.json");
    ASSERT_TRUE(in.good());
    const nlohmann::json data = nlohmann::json::parse(in);
    int compared = 0;
    for (const auto& [vocab, cases] : data["vocabularies"].items()) {
        if (!std::ifstream(vocabPath(vocab)).good()) GTEST_SKIP() << "needs " << vocabPath(vocab);
        GgufFile file(vocabPath(vocab));
        const auto tokenizer = GgufTokenizer::fromGguf(file);
        for (const auto& c : cases) {
            const std::string text = c["text"];
            EXPECT_EQ(tokenizer->encode(text, false, c["special"].get<bool>()),
                      c["ids"].get<std::vector<int32_t>>())
                << vocab << (c["special"].get<bool>() ? " --special" : "") << ": " << text;
            ++compared;
        }
    }
    EXPECT_EQ(compared, 7 * 10);
}

TEST(SpecialTokens, ControlTokensAreTextUnlessParsed) {
    GgufFile file(vocabPath("dbrx"));
    const auto t = GgufTokenizer::fromGguf(file);
    const std::vector<int32_t> plain = t->encode("a<|endoftext|>b", false, false);
    const std::vector<int32_t> parsed = t->encode("a<|endoftext|>b", false, true);
    EXPECT_EQ(std::count(plain.begin(), plain.end(), 100257), 0);
    EXPECT_EQ(std::count(parsed.begin(), parsed.end(), 100257), 1);
    EXPECT_EQ(t->decode(parsed), "ab");  // a control token has no text in the output
}

TEST(SpecialTokens, EndOfGenerationListsEveryStopId) {
    auto eog = [](const std::string& v) {
        GgufFile file(vocabPath(v));
        return GgufTokenizer::fromGguf(file)->endOfGeneration();
    };
    EXPECT_EQ(eog("llama-spm"), (std::vector<int32_t>{2}));
    // Phi-3: <|endoftext|> (its EOS) and <|end|>, the end of a turn; </s> is
    // neither (llama.cpp stops at the same two).
    EXPECT_EQ(eog("phi-3"), (std::vector<int32_t>{32000, 32007}));
    EXPECT_EQ(eog("gpt-2"), (std::vector<int32_t>{50256}));
    const std::vector<int32_t> dbrx = eog("dbrx");
    EXPECT_NE(std::find(dbrx.begin(), dbrx.end(), 100257), dbrx.end());  // <|endoftext|>
}

}  // namespace
}  // namespace kvlens
