// `--model DIR` as a user passes a Hugging Face folder: info shows the same
// fields as for the GGUF it was written from, generate and tokenize give the
// same ids, run saves it to a session with each weight file's SHA-256, and a
// bad folder is one line.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "cli/CliHarness.h"
#include "engine/gguf/GgufFile.h"
#include "support/HfFolderWriter.h"

namespace kvlens {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;
using test::runKvlens;

struct Pair {
    std::string gguf, dir;
};

// tiny-llama3 written as a dense GGUF and as a folder (two shards).
const Pair& llama3() {
    static const Pair p = [] {
        const GgufFile src(std::string(KVLENS_SOURCE_DIR) + "/tests/data/gguf/tiny-llama3-Q4_K_M.gguf");
        Pair q{test::testOutputPath("cli_hf_llama3.gguf"), test::testOutputPath("cli_hf_llama3")};
        fs::remove_all(q.dir);
        test::writeDenseGguf(src, q.gguf, "F32");
        test::HfWriteOptions o;
        o.shards = 2;
        test::writeHfFolder(src, q.dir, o);
        return q;
    }();
    return p;
}

TEST(HfFolderCli, InfoShowsTheSameFieldsAsForTheGguf) {
    const test::CliResult a = runKvlens("info --json --model " + llama3().gguf);
    const test::CliResult b = runKvlens("info --json --model " + llama3().dir);
    ASSERT_EQ(a.exitCode, 0) << a.err;
    ASSERT_EQ(b.exitCode, 0) << b.err;
    const json ja = json::parse(a.out), jb = json::parse(b.out);
    for (const char* k : {"architecture", "layers", "heads", "kv_heads", "head_dim", "embedding", "ffn", "context",
                          "vocab", "rope_theta", "rope_dim", "bos_id", "eos_id", "kv_bytes_per_token"}) {
        EXPECT_EQ(ja[k], jb[k]) << k;
    }
    EXPECT_EQ(jb["hf_architecture"], "LlamaForCausalLM");
    EXPECT_EQ(jb["rope_scaling"], "llama3");
    EXPECT_EQ(jb["weight_files"].size(), 2u);
    EXPECT_EQ(jb["tensor_types"], json({{"F32", ja["tensor_types"]["F32"].get<int>() - 1}}));  // no rope_freqs tensor
    EXPECT_NE(jb["source"].get<std::string>().find("Hugging Face folder (LlamaForCausalLM), 2 safetensors files"),
              std::string::npos);

    const test::CliResult text = runKvlens("info --model " + llama3().dir);
    ASSERT_EQ(text.exitCode, 0) << text.err;
    EXPECT_NE(text.out.find("head dim      32 (RoPE on 32 dims, theta 500000, halves)"), std::string::npos) << text.out;
    EXPECT_NE(text.out.find("rope scaling  llama3"), std::string::npos) << text.out;
    EXPECT_NE(text.out.find("tokenizer.json (byte-level BPE, pre-tokenizer Split, ByteLevel)"), std::string::npos)
        << text.out;
}

TEST(HfFolderCli, GenerateAndTokenizeGiveTheGgufsIds) {
    const std::string args = " --prompt 'Once upon a time, there was a little girl' -n 12 --ignore-eos --dtype f32 --json";
    const test::CliResult a = runKvlens("generate --model " + llama3().gguf + args);
    const test::CliResult b = runKvlens("generate --model " + llama3().dir + args);
    ASSERT_EQ(a.exitCode, 0) << a.err;
    ASSERT_EQ(b.exitCode, 0) << b.err;
    const json ja = json::parse(a.out), jb = json::parse(b.out);
    EXPECT_EQ(ja["prompt_token_ids"], jb["prompt_token_ids"]);
    EXPECT_EQ(ja["generated_token_ids"], jb["generated_token_ids"]);
    EXPECT_EQ(ja["text"], jb["text"]);
    const test::CliResult t = runKvlens("tokenize --json --model " + llama3().dir + " --prompt 'naïve café 42'");
    const test::CliResult u = runKvlens("tokenize --json --model " + llama3().gguf + " --prompt 'naïve café 42'");
    ASSERT_EQ(t.exitCode, 0) << t.err;
    EXPECT_EQ(json::parse(t.out)["token_ids"], json::parse(u.out)["token_ids"]);
}

TEST(HfFolderCli, RunSavesTheFolderWithEachWeightFilesHash) {
    const std::string store = test::testOutputPath("cli_hf_store.db");
    fs::remove(store);
    const test::CliResult r = runKvlens("run --model " + llama3().dir +
                                        " --prompt 'Once upon a time, there was a little girl named Lily' --method snapkv "
                                        "--budget 8 --window 4 -n 4 --save --session hf --store " + store);
    ASSERT_EQ(r.exitCode, 0) << r.err;
    const test::CliResult s = runKvlens("sessions show hf --json --store " + store);
    ASSERT_EQ(s.exitCode, 0) << s.err;
    const json j = json::parse(s.out);
    const std::string text = j.dump();
    EXPECT_NE(text.find(fs::absolute(llama3().dir).string()), std::string::npos) << text;
    for (const char* shard : {"model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors"}) {
        EXPECT_NE(text.find(shard), std::string::npos) << text;
    }
}

TEST(HfFolderCli, ATokenizerOnlyFolderTokenizesAndDescribesButDoesNotRun) {
    // config.json and the tokenizer files of the folder, no weights (as a vocab-only GGUF).
    const std::string dir = test::testOutputPath("cli_hf_tokenizer_only");
    fs::remove_all(dir);
    fs::create_directories(dir);
    for (const auto& f : fs::directory_iterator(llama3().dir)) {
        const std::string name = f.path().filename().string();
        if (name.rfind("model", 0) != 0) fs::copy(f.path(), dir + "/" + name);
    }
    const test::CliResult t = runKvlens("tokenize --json --model " + dir + " --prompt 'naïve café 42'");
    const test::CliResult u = runKvlens("tokenize --json --model " + llama3().dir + " --prompt 'naïve café 42'");
    ASSERT_EQ(t.exitCode, 0) << t.err;
    EXPECT_EQ(json::parse(t.out)["token_ids"], json::parse(u.out)["token_ids"]);
    const test::CliResult info = runKvlens("info --model " + dir);
    ASSERT_EQ(info.exitCode, 0) << info.err;
    EXPECT_NE(info.out.find("tokenizer only (no weights: nothing to run)"), std::string::npos) << info.out;
    EXPECT_NE(info.out.find("parameters    - (no weights)"), std::string::npos) << info.out;
    const json j = json::parse(runKvlens("info --json --model " + dir).out);
    EXPECT_TRUE(j["tokenizer_only"].get<bool>());
    EXPECT_TRUE(j["parameters"].is_null());
    EXPECT_EQ(j["layers"], json::parse(runKvlens("info --json --model " + llama3().dir).out)["layers"]);
    for (const std::string& command : {"generate --prompt hi --model " + dir,
                                      "run --prompt hi --method snapkv --budget 4 --model " + dir}) {
        test::expectOneLineError(runKvlens(command),
                                 {dir + ": no weights (model.safetensors or model.safetensors.index.json) to run; "
                                        "kvlens tokenize and kvlens info read a tokenizer-only folder"});
    }
}

TEST(HfFolderCli, ASentencePieceTokenizerJsonAloneTokenizesAsHuggingFace) {
    // Llama 2's vocabulary as its repository ships it when there is no tokenizer.model:
    // config.json, tokenizer.json (normalizer Prepend + Replace, byte fallback), tokenizer_config.json.
    const std::string vocab = std::string(KVLENS_SHARED_DIR) + "/testdata/vocab/ggml-vocab-llama-spm.gguf";
    if (!fs::exists(vocab)) GTEST_SKIP() << "needs " << vocab;
    const std::string dir = test::testOutputPath("cli_hf_spm_json");
    fs::remove_all(dir);
    fs::create_directories(dir);
    json config = json::parse(std::ifstream(llama3().dir + "/config.json"));
    config["vocab_size"] = 32000;
    config["bos_token_id"] = 1;
    config["eos_token_id"] = 2;
    test::writeText(dir + "/config.json", config.dump());
    test::writeText(dir + "/tokenizer.json", test::sentencePieceTokenizerJsonFromGguf(GgufFile(vocab)));
    test::writeText(dir + "/tokenizer_config.json", R"({"bos_token": "<s>", "eos_token": "</s>", "add_bos_token": true})");
    // Hugging Face's ids for " Hello world" (ggml-vocab-llama-spm.gguf.out), after BOS.
    const test::CliResult t = runKvlens("tokenize --json --model " + dir + " --prompt ' Hello world'");
    ASSERT_EQ(t.exitCode, 0) << t.err;
    EXPECT_EQ(json::parse(t.out)["token_ids"], json::parse("[1, 29871, 15043, 3186]"));
    const test::CliResult info = runKvlens("info --model " + dir);
    ASSERT_EQ(info.exitCode, 0) << info.err;
    EXPECT_NE(info.out.find("tokenizer.json (SentencePiece-style BPE, normalizer Prepend, Replace, pre-tokenizer none, byte fallback)"),
              std::string::npos) << info.out;
    // A field KV Lens does not run is one line naming the file and the field.
    json bad = json::parse(std::ifstream(dir + "/tokenizer.json"));
    bad["pre_tokenizer"] = {{"type", "Metaspace"}, {"prepend_scheme", "sometimes"}};
    test::writeText(dir + "/tokenizer.json", bad.dump());
    test::expectOneLineError(runKvlens("tokenize --model " + dir + " --prompt hi"),
                             {dir + "/tokenizer.json: pre_tokenizer.prepend_scheme is 'sometimes'; one of first, always, never"});
}

TEST(HfFolderCli, BadFoldersAreOneLine) {
    const std::string empty = test::testOutputPath("cli_hf_empty");
    fs::create_directories(empty);
    test::expectOneLineError(runKvlens("info --model " + empty),
                             {empty + ": no config.json; a Hugging Face model folder holds config.json"});
    test::expectOneLineError(runKvlens("generate --model " + empty + " --prompt hi"), {empty + ": no config.json"});
    const std::string arch = test::testOutputPath("cli_hf_arch");
    fs::create_directories(arch);
    test::writeText(arch + "/config.json", R"({"architectures": ["PhiForCausalLM"]})");
    test::expectOneLineError(runKvlens("info --model " + arch),
                             {arch + "/config.json: architecture 'PhiForCausalLM' in field 'architectures' is not supported"});
    // A layer count the weights do not hold: info refuses it as generate does (one check for both).
    const std::string layers = test::testOutputPath("cli_hf_layers");
    fs::remove_all(layers);
    fs::copy(llama3().dir, layers, fs::copy_options::recursive);
    nlohmann::json config = nlohmann::json::parse(test::slurp(layers + "/config.json"));
    config["num_hidden_layers"] = 4096;  // (2^31, the report's value, is over any count's bound: HfConfigTest)
    test::writeText(layers + "/config.json", config.dump());
    for (const std::string& command : {"info --model " + layers, "tokenize --prompt hi --model " + layers,
                                      "generate --prompt hi --model " + layers}) {
        test::expectOneLineError(runKvlens(command),
                                 {layers + "/config.json: num_hidden_layers is 4096, but the weights hold layers"});
    }
}

}  // namespace
}  // namespace kvlens
