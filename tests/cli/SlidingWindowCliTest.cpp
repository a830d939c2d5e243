// A model whose sliding window applies (the phi3 test file: attention.sliding_window 64):
// generate applies it past the window (QuantParityTest checks its tokens against
// llama.cpp's); the compression commands, whose scores and compressed decode do not apply
// it yet, refuse a prompt plus the tokens asked for that reaches past it, in one line,
// before the prefill; --sliding-window ignore attends over the whole sequence (as llama.cpp
// runs Mistral); info says all this.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "cli/CliHarness.h"

namespace kvlens {
namespace {

using test::runKvlens;

const std::string kPhi3 = std::string(KVLENS_SOURCE_DIR) + "/tests/data/gguf/tiny-phi3-F16.gguf";
// 21 tokens with BOS; the long one 106.
const std::string kShort = "'Once upon a time, there was a little girl named Lily. She loved to play'";
const std::string kLong =
    "'Once upon a time, there was a little girl named Lily. She loved to play outside in the sun with her friends. "
    "One day, she found a big red ball in the park. She ran to her mom and said, look what I found! Her mom smiled "
    "and said they could play with it together after lunch. Lily was very happy.'";

std::string refusal(int positions) {
    return std::to_string(positions) +
           " positions reach past the model's sliding window of 64 tokens: KV Lens applies the window when it "
           "generates with the full cache, not yet to the compression methods; --sliding-window ignore (the window's "
           "'window: ignore') attends over the whole sequence (as llama.cpp runs Mistral; not as the model was trained)";
}

TEST(SlidingWindowCli, InfoNamesTheWindow) {
    const test::CliResult r = runKvlens("info --model " + kPhi3);
    ASSERT_EQ(r.exitCode, 0) << r.err;
    EXPECT_NE(r.out.find("architecture  phi3"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("sliding window 64 tokens on every layer: applied by generate; the compression methods refuse "
                         "a sequence past it (--sliding-window ignore attends over all)"),
              std::string::npos)
        << r.out;
    EXPECT_EQ(nlohmann::json::parse(runKvlens("info --json --model " + kPhi3).out)["sliding_window"], 64);
}

TEST(SlidingWindowCli, GenerateAppliesItCompressionRefusesPastIt) {
    const test::CliResult applied = runKvlens("generate --json -n 8 --model " + kPhi3 + " --prompt " + kLong);
    ASSERT_EQ(applied.exitCode, 0) << applied.err;
    const test::CliResult ignored =
        runKvlens("generate --json -n 8 --sliding-window ignore --model " + kPhi3 + " --prompt " + kLong);
    ASSERT_EQ(ignored.exitCode, 0) << ignored.err;
    EXPECT_EQ(nlohmann::json::parse(applied.out)["generated_token_ids"].size(), 8u);
    EXPECT_NE(nlohmann::json::parse(applied.out)["generated_token_ids"],
              nlohmann::json::parse(ignored.out)["generated_token_ids"]);
    // Inside the window (21 + 16 = 37 positions) a compression run goes; 21 + 50 = 71 and
    // 106 + 4 = 110 are refused before the prefill.
    const test::CliResult inside = runKvlens("run --method snapkv --budget 12 --window 4 -n 16 --model " + kPhi3 + " --prompt " + kShort);
    ASSERT_EQ(inside.exitCode, 0) << inside.err;
    test::expectOneLineError(runKvlens("run --method snapkv --budget 12 --window 4 -n 50 --model " + kPhi3 + " --prompt " + kShort),
                             {refusal(71)});
    test::expectOneLineError(runKvlens("run --method snapkv --budget 40 --window 8 -n 4 --model " + kPhi3 + " --prompt " + kLong),
                             {refusal(110)});
    test::expectOneLineError(runKvlens("compare --methods snapkv --budgets 32 -n 4 --model " + kPhi3 + " --prompt " + kLong),
                             {refusal(110)});
    const test::CliResult runIgnored = runKvlens("run --method snapkv --budget 40 --window 8 -n 4 --sliding-window ignore --model " +
                                                 kPhi3 + " --prompt " + kLong);
    EXPECT_EQ(runIgnored.exitCode, 0) << runIgnored.err;
    // KVzip's reconstruction runs the repeated prompt after it: 33 prompt tokens fit, their
    // repeat does not (its position count named).
    const test::CliResult kvzip = runKvlens("run --method kvzip --budget 16 -n 2 --model " + kPhi3 +
                                            " --prompt 'Once upon a time, there was a little girl named Lily. She loved "
                                            "to play outside in the sun with her friends. One day, she found a big'");
    EXPECT_EQ(kvzip.exitCode, 1);
    EXPECT_NE(kvzip.err.find(" positions reach past the model's sliding window of 64 tokens: KV Lens applies the window"),
              std::string::npos)
        << kvzip.err;
    test::expectOneLineError(runKvlens("generate --sliding-window refuse --model " + kPhi3 + " --prompt " + kShort),
                             {"--sliding-window 'refuse': apply or ignore"});
}

const std::string kGemma2 = std::string(KVLENS_SOURCE_DIR) + "/tests/data/gguf/tiny-gemma2-F16.gguf";

// Gemma 2: the window on its 13 even layers of 26, its soft-caps and scales in info; generate
// runs past the window; compression is refused in one line whatever the length (its
// soft-capping is not in the methods' scores yet), --sliding-window ignore or not.
TEST(SlidingWindowCli, Gemma2InfoGenerateAndTheRefusal) {
    const test::CliResult r = runKvlens("info --model " + kGemma2);
    ASSERT_EQ(r.exitCode, 0) << r.err;
    EXPECT_NE(r.out.find("sliding window 64 tokens on 13 local layers of 26 (in each run of 2, 1 local then 1 global): "
                         "applied by generate"),
              std::string::npos)
        << r.out;
    EXPECT_NE(r.out.find("gemma         GeGLU (tanh GELU), norms after attention and MLP, embeddings x 8, query scale "
                         "0.1768, soft-caps 4 (attention), 5 (output)"),
              std::string::npos)
        << r.out;
    const nlohmann::json j = nlohmann::json::parse(runKvlens("info --json --model " + kGemma2).out);
    EXPECT_EQ(j["sliding_window_layers"].size(), 13u);
    EXPECT_EQ(j["sliding_window_layers"][1], 2);
    const test::CliResult g = runKvlens("generate --json -n 4 --model " + kGemma2 + " --prompt " + kLong);
    ASSERT_EQ(g.exitCode, 0) << g.err;
    const std::string refused =
        "gemma2's attention logit soft-capping is applied when KV Lens generates with the full cache, not yet by the "
        "compression methods' scores and compressed decode";
    test::expectOneLineError(runKvlens("run --method snapkv --budget 12 --window 4 -n 4 --model " + kGemma2 + " --prompt " + kShort),
                             {refused});
    test::expectOneLineError(runKvlens("run --method snapkv --budget 12 --window 4 -n 4 --sliding-window ignore --model " +
                                       kGemma2 + " --prompt " + kShort),
                             {refused});
}

}  // namespace
}  // namespace kvlens
