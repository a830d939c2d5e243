// The kvlens executable as a user runs it: outputs, and one clear line and a
// non-zero exit for every bad input a user can give.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "cli/CliHarness.h"

namespace {

using kvlens::test::CliResult;
using kvlens::test::expectOneLineError;
using kvlens::test::slurp;
using Result = CliResult;

CliResult runCli(const std::string& args, const std::string& env = "") {
    return kvlens::test::runKvlens(args, env);
}

std::string quote(const std::string& s) {
    std::string q = "'";
    for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
    return q + "'";
}

std::string writeTiny(const std::string& name, const std::function<void(kvlens::test::GgufBuilder&)>& edit = {}) {
    kvlens::test::TinyModelFile m = kvlens::test::makeTinyModelFile({});
    if (edit) edit(m.builder);
    const std::string path = kvlens::test::testOutputPath(name);
    m.builder.writeFile(path);
    return path;
}

const std::string kStories = std::string(KVLENS_SHARED_DIR) + "/models/stories260K.gguf";
bool haveStories() { return std::ifstream(kStories).good(); }

TEST(Cli, MissingModelFile) {
    expectOneLineError(runCli("generate --model /nonexistent/m.gguf --prompt hi"),
                       {"/nonexistent/m.gguf", "No such file"});
}

TEST(Cli, NotAGgufFile) {
    const std::string path = kvlens::test::testOutputPath("not_gguf.gguf");
    std::ofstream(path) << "this is a text file, not a model\n";
    expectOneLineError(runCli("info --model " + path), {path, "not a GGUF file"});
}

TEST(Cli, TruncatedFile) {
    const std::string full = writeTiny("full_for_truncation.gguf");
    std::string bytes = slurp(full);
    const std::string path = kvlens::test::testOutputPath("truncated.gguf");
    std::ofstream(path, std::ios::binary).write(bytes.data(), std::streamsize(bytes.size() - 100));
    expectOneLineError(runCli("generate --prompt hi --model " + path), {path, "truncated"});
}

TEST(Cli, UnknownArchitecture) {
    kvlens::test::GgufBuilder b;
    b.addString("general.architecture", "rwkv6");
    const std::string path = kvlens::test::testOutputPath("rwkv.gguf");
    b.writeFile(path);
    expectOneLineError(runCli("info --model " + path), {path, "unknown architecture 'rwkv6'"});
}

TEST(Cli, UnsupportedTensorType) {
    const std::string path = writeTiny("i32.gguf", [](kvlens::test::GgufBuilder& b) {
        for (size_t i = 0;; ++i) {
            if (b.tensor(i).name == "blk.0.attn_v.weight") {
                b.tensor(i).type = 26;  // I32
                b.tensor(i).data.assign(32 * 16 * 4, 0);
                return;
            }
        }
    });
    expectOneLineError(runCli("generate --prompt hi --model " + path),
                       {path, "blk.0.attn_v.weight", "unsupported type I32", "IQ4_XS"});
}

TEST(Cli, TensorShapeDisagreesWithMetadata) {
    const std::string path = writeTiny("bad_shape.gguf", [](kvlens::test::GgufBuilder& b) {
        for (size_t i = 0;; ++i) {
            if (b.tensor(i).name == "blk.0.ffn_gate.weight") {
                b.tensor(i).shape = {32, 40};  // metadata says feed_forward_length 48
                b.tensor(i).data.resize(32 * 40 * 4);
                return;
            }
        }
    });
    expectOneLineError(runCli("generate --prompt hi --model " + path),
                       {path, "blk.0.ffn_gate.weight", "[32, 40]", "feed_forward_length=48"});
}

TEST(Cli, EmptyPrompt) {
    expectOneLineError(runCli("generate --model random:tiny:layers=1 --prompt ''"), {"--prompt", "empty"});
    const std::string path = kvlens::test::testOutputPath("empty_prompt.txt");
    std::ofstream(path).close();
    expectOneLineError(runCli("generate --model random:tiny:layers=1 --prompt-file " + path),
                       {"--prompt-file", path, "empty"});
}

TEST(Cli, PromptLongerThanContext) {
    expectOneLineError(runCli("generate --model random:tiny:layers=1:ctx=16 --prompt " +
                              quote(std::string(40, 'x'))),
                       {"the prompt is 41 tokens", "context of 16 tokens"});
}

TEST(Cli, MissingPromptFile) {
    expectOneLineError(runCli("generate --model random:tiny:layers=1 --prompt-file /nonexistent/p.txt"),
                       {"--prompt-file /nonexistent/p.txt", "No such file"});
}

TEST(Cli, BadFlags) {
    expectOneLineError(runCli("generate --model random:tiny --promt hi"), {"unknown flag '--promt'"});
    // A value flag given twice is refused (the last one silently won), inline or not.
    expectOneLineError(runCli("run --model random:tiny --prompt hi --method snapkv --budget 64 --budget=128"),
                       {"kvlens run: --budget is given twice ('64' and '128')"});
    expectOneLineError(runCli("generate --model random:tiny --prompt hi --model random:tiny"),
                       {"kvlens generate: --model is given twice ('random:tiny' and 'random:tiny')"});
    expectOneLineError(runCli("generate --model random:tiny --prompt hi --dtype f64"), {"--dtype 'f64'"});
    expectOneLineError(runCli("generate --model random:tiny --prompt hi -n lots"), {"-n 'lots'"});
    expectOneLineError(runCli("generate --model random:tiny --prompt hi --threads 0"), {"--threads '0'"});
    expectOneLineError(runCli("generate --model random:tiny --prompt hi --top-p 1.5"), {"--top-p"});
    expectOneLineError(runCli("info --model random:gpt5"), {"unknown preset 'gpt5'", "tinyllama-1.1b"});
    expectOneLineError(runCli("info --model random:tiny:heads=3"), {"unknown option 'heads=3'"});
    expectOneLineError(runCli("info --model random:tiny:window=1"), {"random:tiny:window=1: window must be at least 2"});
    expectOneLineError(runCli("info --model random:tiny:window=16:window-period=1"),
                       {"window-period must be at least 2"});
    expectOneLineError(runCli("info --model random:tiny:window-period=2"), {"window-period needs a window=W"});
    expectOneLineError(runCli("info --model random:tiny:window=-3"), {"random:tiny:window=-3"});
    expectOneLineError(runCli("generate --model random:tiny --prompt hi --device cuda:0"), {"--device cuda:0"});
    const Result unknown = runCli("frobnicate");
    EXPECT_EQ(unknown.exitCode, 2);
    EXPECT_NE(unknown.err.find("unknown command 'frobnicate'"), std::string::npos);
}

TEST(Cli, EmptyModelFlag) { expectOneLineError(runCli("info --model ''"), {"--model is empty"}); }

TEST(Cli, NoModelAnywhereSaysHowToPassOne) {
    // From / there is no ../shared, and the shared and models folders are pointed elsewhere.
    const Result r = runCli("info", "KVLENS_SHARED_DIR=/nonexistent KVLENS_MODELS_DIR=/nonexistent sh -c 'cd / && exec \"$0\" \"$@\"'");
    expectOneLineError(r, {"no model given", "--model", "KVLENS_MODEL"});
}

TEST(Cli, InfoOnRandomPreset) {
    const Result r = runCli("info --model random:tinyllama-1.1b --json");
    ASSERT_EQ(r.exitCode, 0) << r.err;
    const auto j = nlohmann::json::parse(r.out);
    EXPECT_EQ(j["layers"], 22);
    EXPECT_EQ(j["heads"], 32);
    EXPECT_EQ(j["kv_heads"], 4);
    EXPECT_EQ(j["head_dim"], 64);
    EXPECT_EQ(j["vocab"], 32000);
    EXPECT_EQ(j["kv_bytes_per_token"]["f32"], 2 * 22 * 4 * 64 * 4);
    EXPECT_EQ(j["parameters"], 1100048384);  // TinyLlama-1.1B's published count
}

TEST(Cli, InfoOnTinyGgufListsTensorTypes) {
    const std::string path = writeTiny("info_tiny.gguf");
    const Result r = runCli("info --model " + path);
    ASSERT_EQ(r.exitCode, 0) << r.err;
    EXPECT_NE(r.out.find("architecture  llama"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("F32 x"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("KV bytes/token 256 in f32"), std::string::npos) << r.out;
}

TEST(Cli, GenerateJsonOnStoriesMatchesReference) {
    if (!haveStories()) GTEST_SKIP() << "needs " << kStories;
    const auto ref = nlohmann::json::parse(std::ifstream(std::string(KVLENS_SHARED_DIR) +
                                                         "/reference/stories260K_greedy_once_upon_a_time.json"));
    const Result r = runCli("generate --model " + kStories +
                            " --prompt 'Once upon a time' -n 200 --ignore-eos --dtype f32 --json");
    ASSERT_EQ(r.exitCode, 0) << r.err;
    const auto j = nlohmann::json::parse(r.out);
    EXPECT_EQ(j["prompt_token_ids"], ref["prompt_token_ids"]);
    EXPECT_EQ(j["generated_token_ids"], ref["generated_token_ids"]);
    EXPECT_EQ(j["text"], ref["generated_text"]);
    // The 8 best logits after the prompt, best first, are the reference's own.
    const auto& logits = ref["next_token_logits_after_prompt"];
    ASSERT_EQ(j["first_step_top8"].size(), 8u) << r.out;
    EXPECT_EQ(j["first_step_top8"][0][0], ref["generated_token_ids"][0]);
    for (size_t i = 0; i < 8; ++i) {
        const int id = j["first_step_top8"][i][0];
        const double logit = j["first_step_top8"][i][1];
        EXPECT_NEAR(logit, logits[size_t(id)].get<double>(), 1e-4) << "rank " << i << " id " << id;
        if (i > 0) {
            EXPECT_LE(logit, j["first_step_top8"][i - 1][1].get<double>()) << "rank " << i;
        }
        size_t above = 0;  // how many of the reference's logits beat this one
        for (const auto& l : logits) above += l.get<double>() > logits[size_t(id)].get<double>() + 1e-4;
        EXPECT_LE(above, i) << "rank " << i << " id " << id;
    }
}

TEST(Cli, GenerateStreamsTextOnTinyGguf) {
    const std::string path = writeTiny("stream_tiny.gguf");
    const Result r = runCli("generate --model " + path + " --prompt 'the cat' -n 5 --ignore-eos");
    ASSERT_EQ(r.exitCode, 0) << r.err;
    EXPECT_FALSE(r.out.empty());
    EXPECT_NE(r.err.find("5 generated"), std::string::npos) << r.err;
}

TEST(Cli, TokenizeJson) {
    const std::string path = writeTiny("tokenize_tiny.gguf");
    const Result r = runCli("tokenize --model " + path + " --prompt 'the cat' --json");
    ASSERT_EQ(r.exitCode, 0) << r.err;
    const auto j = nlohmann::json::parse(r.out);
    // Merges by score: "th" (263) first, then "at" (265); "▁th" and "cat" are not
    // pieces, so "▁the" and "▁cat" cannot form.
    EXPECT_EQ(j["token_ids"], nlohmann::json({1, 262, 263, 268, 262, 272, 265}));
    EXPECT_EQ(j["pieces"], nlohmann::json({"<s>", " ", "th", "e", " ", "c", "at"}));
}

TEST(Cli, BenchPrintsPrefillAndDecodeRates) {
    const Result r = runCli("bench --model random:tiny:layers=1 --prompt-len 32 -n 4 --reps 3 --warmup 1 --json");
    ASSERT_EQ(r.exitCode, 0) << r.err;
    const auto j = nlohmann::json::parse(r.out);
    EXPECT_GT(j["prefill_tok_s"]["median"].get<double>(), 0.0);
    EXPECT_GT(j["decode_tok_s"]["median"].get<double>(), 0.0);
    EXPECT_LE(j["prefill_tok_s"]["min"].get<double>(), j["prefill_tok_s"]["median"].get<double>());
    EXPECT_GE(j["prefill_tok_s"]["max"].get<double>(), j["prefill_tok_s"]["median"].get<double>());
    EXPECT_EQ(j["reps"], 3);
    expectOneLineError(runCli("bench --model random:tiny:ctx=64 --prompt-len 60 -n 8"), {"exceeds the model's context of 64"});
}

}  // namespace
