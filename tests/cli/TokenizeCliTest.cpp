// kvlens tokenize on the vocab-only files of ../shared/testdata/vocab, as
// llama.cpp's tokenizer tests run them, and the one-line refusals around
// tokenizers: an unknown pre-tokenizer or tokenizer model, a vocab-only file
// given to generate, a prompt that is not UTF-8.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "cli/CliHarness.h"

namespace {

using kvlens::test::CliResult;
using kvlens::test::expectOneLineError;
using kvlens::test::runKvlens;
using kvlens::test::slurp;
using kvlens::test::testOutputPath;

const std::string kVocab = std::string(KVLENS_SHARED_DIR) + "/testdata/vocab/";

std::string writeText(const std::string& name, const std::string& text) {
    const std::string path = testOutputPath(name);
    std::ofstream(path, std::ios::binary) << text;
    return path;
}

TEST(TokenizeCli, VocabOnlyFilesGiveHuggingFacesIds) {
    for (const char* vocab :
         {"gpt-2", "dbrx", "deepseek-llm", "falcon", "starcoder", "llama-spm"}) {
        const std::string file = kVocab + "ggml-vocab-" + vocab + ".gguf";
        if (!std::ifstream(file).good()) GTEST_SKIP() << "needs " << file;
        const std::string inp = slurp(file + ".inp"), out = slurp(file + ".out");
        std::istringstream lines(out);
        const std::string sep = "\n__ggml_vocab_test__\n";
        // Every tenth case: the engine tests check them all in process.
        size_t at = 0;
        for (int k = 0; at < inp.size(); ++k) {
            const size_t end = inp.find(sep, at);
            if (end == std::string::npos) break;
            const std::string text = inp.substr(at, end - at);
            at = end + sep.size();
            std::string line;
            std::getline(lines, line);
            if (k % 10 != 0 || text.empty()) continue;
            nlohmann::json want = nlohmann::json::array();
            std::istringstream ids(line);
            for (int id; ids >> id;) want.push_back(id);
            const CliResult r =
                runKvlens("tokenize --model " + file + " --prompt-file " +
                          writeText("tokenize_case.txt", text) + " --no-bos --json");
            ASSERT_EQ(r.exitCode, 0) << vocab << ": " << r.err;
            EXPECT_EQ(nlohmann::json::parse(r.out)["token_ids"], want)
                << vocab << " case " << k << ": " << text;
        }
    }
}

TEST(TokenizeCli, SpecialParsesControlTokensOnlyWhenAsked) {
    const std::string file = kVocab + "ggml-vocab-dbrx.gguf";
    if (!std::ifstream(file).good()) GTEST_SKIP() << "needs " << file;
    const CliResult plain = runKvlens("tokenize --model " + file + " --prompt 'a<|endoftext|>b' --no-bos --json");
    const CliResult special =
        runKvlens("tokenize --model " + file + " --prompt 'a<|endoftext|>b' --no-bos --special --json");
    ASSERT_EQ(plain.exitCode, 0) << plain.err;
    ASSERT_EQ(special.exitCode, 0) << special.err;
    EXPECT_EQ(nlohmann::json::parse(special.out)["token_ids"], nlohmann::json({64, 100257, 65}));
    EXPECT_GT(nlohmann::json::parse(plain.out)["token_ids"].size(), 3u);
}

// --chat wraps the prompt in the file's template and parses its markers: on
// Phi-3's vocabulary the ids equal llama.cpp's for the same text with --special.
TEST(TokenizeCli, ChatWrapsThePromptInTheModelsTemplate) {
    const std::string file = kVocab + "ggml-vocab-phi-3.gguf";
    if (!std::ifstream(file).good()) GTEST_SKIP() << "needs " << file;
    const CliResult r = runKvlens("tokenize --model " + file + " --prompt 'Hi there' --chat --system 'Be brief.' --json");
    ASSERT_EQ(r.exitCode, 0) << r.err;
    EXPECT_EQ(nlohmann::json::parse(r.out)["token_ids"],
              nlohmann::json({1, 32006, 1522, 11473, 29889, 32007, 32010, 6324, 727, 32007, 32001}));
    expectOneLineError(runKvlens("tokenize --model " + file + " --prompt hi --system x"),
                       {"--system goes with --chat"});
    expectOneLineError(runKvlens("generate --model random:tiny --prompt hi --chat"),
                       {"--chat: random:tiny has no chat template"});
    const std::string gpt2 = kVocab + "ggml-vocab-gpt-2.gguf";
    expectOneLineError(runKvlens("tokenize --model " + gpt2 + " --prompt hi --chat"),
                       {gpt2 + " has no tokenizer.chat_template; run without --chat"});
}

// A byte-level vocabulary of three tokens and one merge, with `pre` and `model`.
std::string tinyBpe(const std::string& name, const std::string& pre,
                    const std::string& model = "gpt2") {
    kvlens::test::GgufBuilder b;
    b.addString("general.architecture", "llama");
    b.addString("tokenizer.ggml.model", model);
    b.addString("tokenizer.ggml.pre", pre);
    b.addStringArray("tokenizer.ggml.tokens", {"a", "b", "ab"});
    b.addInt32Array("tokenizer.ggml.token_type", {1, 1, 1});
    b.addStringArray("tokenizer.ggml.merges", {"a b"});
    const std::string path = testOutputPath(name);
    b.writeFile(path);
    return path;
}

TEST(TokenizeCli, TokenizerRefusalsAreOneLine) {
    const std::string good = tinyBpe("bpe_good.gguf", "gpt-2");
    const CliResult ok = runKvlens("tokenize --model " + good + " --prompt abab --no-bos --json");
    ASSERT_EQ(ok.exitCode, 0) << ok.err;
    EXPECT_EQ(nlohmann::json::parse(ok.out)["token_ids"], nlohmann::json({2, 2}));

    const std::string unknownPre = tinyBpe("bpe_unknown_pre.gguf", "nonesuch");
    expectOneLineError(
        runKvlens("tokenize --model " + unknownPre + " --prompt ab"),
        {unknownPre, "tokenizer.ggml.pre 'nonesuch' is not a pre-tokenizer KV Lens knows",
         "llama-bpe"});
    const std::string unknownModel = tinyBpe("bpe_unknown_model.gguf", "gpt-2", "wordpiece");
    expectOneLineError(
        runKvlens("tokenize --model " + unknownModel + " --prompt ab"),
        {unknownModel, "tokenizer.ggml.model is 'wordpiece'", "'gpt2' (byte-level BPE)"});
    expectOneLineError(
        runKvlens("generate --model " + good + " --prompt ab"),
        {good, "a vocab-only GGUF (tokenizer metadata, no tensors) has no weights to run"});
    expectOneLineError(
        runKvlens("run --model " + good + " --prompt ab --method snapkv --budget 64"),
        {good, "has no weights to run"});
    // A special-token id the file names outside its vocabulary (here Llama 3's
    // end-of-turn id in a three-token file): one line naming the key, before --special
    // could send it to the model.
    kvlens::test::GgufBuilder badEot;
    badEot.addString("general.architecture", "llama");
    badEot.addString("tokenizer.ggml.model", "gpt2");
    badEot.addString("tokenizer.ggml.pre", "llama-bpe");
    badEot.addStringArray("tokenizer.ggml.tokens", {"a", "b", "<|eot_id|>"});
    badEot.addInt32Array("tokenizer.ggml.token_type", {1, 1, 3});
    badEot.addStringArray("tokenizer.ggml.merges", {"a b"});
    badEot.addUInt32("tokenizer.ggml.eot_token_id", 128009);
    const std::string badEotPath = testOutputPath("bpe_eot_out_of_range.gguf");
    badEot.writeFile(badEotPath);
    expectOneLineError(runKvlens("tokenize --model " + badEotPath + " --special --prompt 'a<|eot_id|>'"),
                       {badEotPath + ": tokenizer.ggml.eot_token_id is 128009, outside the vocabulary of 3 tokens"});
    const std::string latin1 = writeText("latin1_prompt.txt", "caf\xE9 au lait");
    expectOneLineError(runKvlens("tokenize --model " + good + " --prompt-file " + latin1),
                       {"--prompt-file " + latin1 +
                        ": is not UTF-8 text (byte 3 is 0xE9); KV Lens reads prompts as UTF-8"});
}

}  // namespace
