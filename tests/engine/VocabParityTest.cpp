// The seven vocabularies of ../shared/testdata/vocab (llama.cpp's tokenizer
// test files: SentencePiece and byte-level BPE with the GPT-2, Llama 3/DBRX,
// DeepSeek LLM, Falcon and StarCoder pre-tokenizers) reproduce every one of
// Hugging Face's token ids for their 43-46 texts, exactly: read from the GGUF
// file, and written out as a Hugging Face folder would hold the vocabulary
// (HfFolderWriter: tokenizer.json with the family's own pre_tokenizer, or a
// SentencePiece tokenizer.model run by libsentencepiece). The two SentencePiece
// vocabularies also as tokenizer.json alone (transformers' LlamaConverter
// layout, read by HfSentencePieceJson): Hugging Face's ids again, and hard
// texts tokenized exactly as libsentencepiece tokenizes them from the model file.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "engine/gguf/GgufFile.h"
#include "engine/hf/HfSentencePieceJson.h"
#include "engine/hf/HfTokenizerJson.h"
#include "engine/tokenizer/LlamaTokenizer.h"
#include "engine/tokenizer/GgufTokenizer.h"
#include "engine/tokenizer/SentencePieceTokenizer.h"
#include "support/HfFolderWriter.h"

namespace kvlens {
namespace {

std::string vocabDir() { return std::string(KVLENS_SHARED_DIR) + "/testdata/vocab/"; }

std::string slurp(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
}

struct Case {
    std::string text;
    std::vector<int32_t> ids;
};

// NAME.gguf.inp: texts, each followed by "\n__ggml_vocab_test__\n"; NAME.gguf.out:
// one line of ids per text.
std::vector<Case> cases(const std::string& name) {
    const std::string inp = slurp(vocabDir() + name + ".inp"),
                      out = slurp(vocabDir() + name + ".out");
    std::vector<Case> all;
    const std::string sep = "\n__ggml_vocab_test__\n";
    for (size_t at = 0; at < inp.size();) {
        const size_t end = inp.find(sep, at);
        if (end == std::string::npos) break;
        all.push_back({inp.substr(at, end - at), {}});
        at = end + sep.size();
    }
    std::istringstream lines(out);
    std::string line;
    for (Case& c : all) {
        if (!std::getline(lines, line)) break;
        std::istringstream ids(line);
        for (int32_t id; ids >> id;) c.ids.push_back(id);
    }
    return all;
}

class VocabParity : public ::testing::TestWithParam<const char*> {};

void expectEveryCase(const std::string& name, const Tokenizer& tokenizer, const std::string& how) {
    const std::vector<Case> all = cases(name);
    ASSERT_GE(all.size(), 43u) << name;
    int matched = 0;
    for (const Case& c : all) {
        const std::vector<int32_t> got = tokenizer.encode(c.text, false);
        if (got == c.ids) {
            ++matched;
        } else {
            ADD_FAILURE() << name << " (" << how << "): text '" << c.text << "'";
            EXPECT_EQ(got, c.ids);
        }
    }
    EXPECT_EQ(matched, int(all.size())) << name << " (" << how << ")";
}

TEST_P(VocabParity, EveryCaseEqualsHuggingFacesIds) {
    const std::string name = std::string("ggml-vocab-") + GetParam() + ".gguf";
    if (!std::ifstream(vocabDir() + name).good())
        GTEST_SKIP() << "needs ../shared/testdata/vocab/" << name;
    GgufFile file(vocabDir() + name);
    expectEveryCase(name, *GgufTokenizer::fromGguf(file), "GGUF");
}

TEST_P(VocabParity, TheSameVocabularyAsAHuggingFaceFolderGivesTheSameIds) {
    const std::string name = std::string("ggml-vocab-") + GetParam() + ".gguf";
    if (!std::ifstream(vocabDir() + name).good())
        GTEST_SKIP() << "needs ../shared/testdata/vocab/" << name;
    GgufFile file(vocabDir() + name);
    if (file.getString("tokenizer.ggml.model") == "gpt2") {
        HfTokenizerJson::Extras extras;
        extras.addBos = 0;
        const auto t = HfTokenizerJson::parse(test::tokenizerJsonFromGguf(file), name + " as tokenizer.json", extras);
        expectEveryCase(name, *t, "tokenizer.json");
    } else {
        const auto t = std::make_unique<SentencePieceTokenizer>(test::sentencePieceModelFromGguf(file),
                                                                name + " as tokenizer.model", SentencePieceTokenizer::Options{});
        expectEveryCase(name, *t, "tokenizer.model");
    }
}

INSTANTIATE_TEST_SUITE_P(Vocabularies, VocabParity,
                         ::testing::Values("llama-spm", "phi-3", "gpt-2", "dbrx", "deepseek-llm",
                                           "falcon", "starcoder"),
                         [](const ::testing::TestParamInfo<const char*>& info) {
                             std::string n = info.param;
                             for (char& ch : n)
                                 if (ch == '-') ch = '_';
                             return n;
                         });

class SentencePieceJsonParity : public ::testing::TestWithParam<const char*> {};

TEST_P(SentencePieceJsonParity, EveryHuggingFaceCaseFromTokenizerJsonAlone) {
    const std::string name = std::string("ggml-vocab-") + GetParam() + ".gguf";
    if (!std::ifstream(vocabDir() + name).good()) GTEST_SKIP() << "needs ../shared/testdata/vocab/" << name;
    GgufFile file(vocabDir() + name);
    HfTokenizerJson::Extras extras;
    extras.addBos = 0;
    const auto t = HfSentencePieceJson::parse(test::sentencePieceTokenizerJsonFromGguf(file),
                                              name + " as tokenizer.json", extras);
    expectEveryCase(name, *t, "tokenizer.json alone");
}

TEST_P(SentencePieceJsonParity, HardTextsEqualLibsentencepieceOnTheSameModel) {
    const std::string name = std::string("ggml-vocab-") + GetParam() + ".gguf";
    if (!std::ifstream(vocabDir() + name).good()) GTEST_SKIP() << "needs ../shared/testdata/vocab/" << name;
    GgufFile file(vocabDir() + name);
    const auto json = HfSentencePieceJson::parse(test::sentencePieceTokenizerJsonFromGguf(file), name + " as tokenizer.json", {});
    const SentencePieceTokenizer model(test::sentencePieceModelFromGguf(file), name + " as tokenizer.model", {});
    const std::vector<std::string> texts = {
        "   three leading spaces", "several     spaces   between  words ", " ", "  ", "\n", "a\n\nb\r\n\tc",
        "trailing newline\n", "emoji 🦙🚀👍🏽 and 👨‍👩‍👧", "rare CJK 𠀀𪚥龘 and 龘龘", "mixed Ελληνικά русский עברית",
        "zero\u200bwidth and nbsp\u00a0here", "12345 67.89 -0.5e10", "x", "▁ the marker itself ▁▁",
        "<s> and </s> and <unk> as plain text", "bytes \x7f and \x01 controls"};
    for (const std::string& text : texts) {
        for (bool bos : {false, true}) {
            EXPECT_EQ(json->encode(text, bos), model.encode(text, bos)) << name << ": '" << text << "' bos " << bos;
        }
        // Decoding gives the text back, but for '▁' itself, which decodes as a space (as in Hugging Face).
        if (text.find("\xE2\x96\x81") == std::string::npos) {
            EXPECT_EQ(json->decode(json->encode(text, true)), text) << name << ": '" << text << "'";
        }
    }
    // Control tokens read with --special: each text run after one gets its own '▁' (the
    // legacy behaviour), as llama.cpp's tokenizer of the GGUF file does; Phi-3's end-of-turn
    // tokens also drop the whitespace after them.
    const auto gguf = LlamaTokenizer::fromGguf(file);
    for (const std::string& text : {std::string("Hello</s> world<s>x<unk>y"),
                                    std::string("<|user|>\n  hi<|end|>\n<|assistant|> there<|endoftext|> end")}) {
        EXPECT_EQ(json->encode(text, true, true), gguf->encode(text, true, true)) << name << ": '" << text << "'";
    }
}

INSTANTIATE_TEST_SUITE_P(SentencePieceVocabularies, SentencePieceJsonParity, ::testing::Values("llama-spm", "phi-3"),
                         [](const ::testing::TestParamInfo<const char*>& info) {
                             return std::string(info.param) == "phi-3" ? std::string("phi_3") : std::string("llama_spm");
                         });

}  // namespace
}  // namespace kvlens
