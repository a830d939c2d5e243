// A model whose sliding window applies (the phi3 test file: attention.sliding_window 64):
// generate applies it past the window (QuantParityTest checks its tokens against
// llama.cpp's); so do the compression commands: FullKV's compressed decode gives generate's
// tokens, a method keeps at most the window's 63 positions per layer and the KV bytes count
// the window; what does not run on a window yet (KVzip past it, Finch, --decode-every) is
// refused in one line; --sliding-window ignore attends over the whole sequence (as llama.cpp
// runs Mistral); info says all this.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <unistd.h>
#include <sstream>
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

TEST(SlidingWindowCli, InfoNamesTheWindow) {
    const test::CliResult r = runKvlens("info --model " + kPhi3);
    ASSERT_EQ(r.exitCode, 0) << r.err;
    EXPECT_NE(r.out.find("architecture  phi3"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("sliding window 64 tokens on every layer: applied by generate and by the compression methods, a "
                         "local layer keeping at most its window (--sliding-window ignore attends over all)"),
              std::string::npos)
        << r.out;
    EXPECT_EQ(nlohmann::json::parse(runKvlens("info --json --model " + kPhi3).out)["sliding_window"], 64);
    // A random model given a window, every second layer global (as Gemma 2's).
    const nlohmann::json mixed =
        nlohmann::json::parse(runKvlens("info --json --model random:tiny:layers=4:window=16:window-period=2").out);
    EXPECT_EQ(mixed["sliding_window"], 16);
    EXPECT_EQ(mixed["sliding_window_layers"], nlohmann::json({0, 2}));
}

TEST(SlidingWindowCli, GenerateAndTheCompressionCommandsApplyIt) {
    const test::CliResult applied = runKvlens("generate --json -n 8 --model " + kPhi3 + " --prompt " + kLong);
    ASSERT_EQ(applied.exitCode, 0) << applied.err;
    const test::CliResult ignored =
        runKvlens("generate --json -n 8 --sliding-window ignore --model " + kPhi3 + " --prompt " + kLong);
    ASSERT_EQ(ignored.exitCode, 0) << ignored.err;
    const nlohmann::json generated = nlohmann::json::parse(applied.out)["generated_token_ids"];
    EXPECT_EQ(generated.size(), 8u);
    EXPECT_NE(generated, nlohmann::json::parse(ignored.out)["generated_token_ids"]);
    // FullKV keeps each layer's last 63 prompt positions (all a decode step reaches) and its
    // compressed decode gives generate's tokens; SnapKV's 40 are 40 of those 63.
    const test::CliResult full = runKvlens("run --json --method full -n 8 --model " + kPhi3 + " --prompt " + kLong);
    ASSERT_EQ(full.exitCode, 0) << full.err;
    const nlohmann::json f = nlohmann::json::parse(full.out);
    EXPECT_EQ(f["prompt_tokens"], 106);
    EXPECT_EQ(f["full_token_ids"], generated);
    EXPECT_EQ(f["token_ids"], generated);
    for (const auto& b : f["layer_budgets"]) EXPECT_EQ(b, 63);
    const test::CliResult snap =
        runKvlens("run --json --method snapkv --budget 40 --window 8 -n 8 --model " + kPhi3 + " --prompt " + kLong);
    ASSERT_EQ(snap.exitCode, 0) << snap.err;
    const nlohmann::json m = nlohmann::json::parse(snap.out)["metrics"];
    EXPECT_EQ(nlohmann::json::parse(snap.out)["full_token_ids"], generated);
    EXPECT_EQ(m["kv_bytes_full"], f["metrics"]["kv_bytes"]);
    EXPECT_NEAR(m["kv_ratio"].get<double>(), 40.0 / 63.0, 1e-9);
    // A budget over the window keeps the window and frees nothing.
    const test::CliResult wide =
        runKvlens("run --json --method snapkv --budget 80 --window 8 -n 2 --model " + kPhi3 + " --prompt " + kLong);
    ASSERT_EQ(wide.exitCode, 0) << wide.err;
    EXPECT_EQ(nlohmann::json::parse(wide.out)["metrics"]["kv_ratio"], 1.0);
    const test::CliResult runIgnored = runKvlens("run --json --method snapkv --budget 40 --window 8 -n 4 --sliding-window ignore "
                                                 "--model " + kPhi3 + " --prompt " + kLong);
    ASSERT_EQ(runIgnored.exitCode, 0) << runIgnored.err;
    EXPECT_NEAR(nlohmann::json::parse(runIgnored.out)["metrics"]["kv_ratio"].get<double>(), 40.0 / 106.0, 1e-9);
    // KVzip's reconstruction runs the repeated prompt after it: past the window, refused.
    const test::CliResult kvzip = runKvlens("run --method kvzip --budget 16 -n 2 --model " + kPhi3 +
                                            " --prompt 'Once upon a time, there was a little girl named Lily. She loved "
                                            "to play outside in the sun with her friends. One day, she found a big'");
    EXPECT_EQ(kvzip.exitCode, 1);
    EXPECT_NE(kvzip.err.find("--method kvzip: KVzip's reconstruction runs the prompt again after it, where a sliding "
                             "window hides the prompt it reconstructs"),
              std::string::npos)
        << kvzip.err;
    test::expectOneLineError(runKvlens("run --method finch --budget 40 -n 2 --model " + kPhi3 + " --prompt " + kLong),
                             {"--method finch: its own chunked prefill and the positions it decodes from do not apply "
                              "the model's sliding window yet; --sliding-window ignore"});
    test::expectOneLineError(runKvlens("run --method snapkv --budget 40 --decode-every 8 -n 4 --model " + kPhi3 +
                                       " --prompt " + kLong),
                             {"--decode-every on a model with a sliding window (64 tokens from layer 0)"});
    test::expectOneLineError(runKvlens("compare --methods snapkv --budgets 40 --decode-every 8 -n 4 --model " + kPhi3 +
                                       " --prompt " + kLong),
                             {"--decode-every on a model with a sliding window (64 tokens from layer 0)"});
    test::expectOneLineError(runKvlens("generate --sliding-window refuse --model " + kPhi3 + " --prompt " + kShort),
                             {"--sliding-window 'refuse': apply or ignore"});
}

// compare's default list (every method) and inspect's comparisons leave out, with the reason,
// what cannot run on a window; an explicit list, niah and eval refuse it before the prefill;
// inspect's memory figure counts a local layer's window.
TEST(SlidingWindowCli, CompareAndInspectLeaveOutWhatCannotRunOnAWindow) {
    const std::string model = "random:tiny:layers=2:window=16:window-period=2";  // layer 0 local, 1 global
    const std::string prompt = " --prompt 'Once upon a time there was a little girl named Lily who loved to play'";
    const test::CliResult compare = runKvlens("compare --budgets 24 -n 2 --model " + model + prompt);
    ASSERT_EQ(compare.exitCode, 0) << compare.err;
    EXPECT_NE(compare.err.find("compare: left out finch B=24"), std::string::npos) << compare.err;
    EXPECT_NE(compare.err.find("--method kvzip: KVzip's reconstruction runs the prompt again after it"), std::string::npos)
        << compare.err;
    EXPECT_NE(compare.out.find("\nsnapkv "), std::string::npos) << compare.out;
    // An explicit list fails before the prefill.
    test::expectOneLineError(runKvlens("compare --methods snapkv,finch --budgets 24 -n 2 --model " + model + prompt),
                             {"--method finch: its own chunked prefill"});

    // niah and eval: before the first prefill.
    test::expectOneLineError(runKvlens("niah --model " + model + " --lengths 300 --depths 50 --methods finch --budgets 48 -n 2"),
                             {"--method finch: its own chunked prefill"});
    test::expectOneLineError(runKvlens("eval --model " + model + " --task single --length 300 --samples 1 --methods kvzip "
                                       "--budgets 48 -n 2"),
                             {"--method kvzip: KVzip's reconstruction runs the prompt again after it"});

    const std::string dir = test::testOutputPath("inspect_window_" + std::to_string(::getpid()));
    const test::CliResult inspect = runKvlens("inspect --model " + model + prompt +
                                              " --method snapkv --budget 24 --window 8 -n 2 --dtype f32 --out " + dir);
    ASSERT_EQ(inspect.exitCode, 0) << inspect.err;
    EXPECT_NE(inspect.err.find("finch left out of the comparisons: --method finch: "), std::string::npos) << inspect.err;
    const size_t at = inspect.out.find("-token prompt");
    ASSERT_NE(at, std::string::npos) << inspect.out;
    const long T = std::stol(inspect.out.substr(inspect.out.rfind(' ', at) + 1));
    std::istringstream memory(test::slurp(dir + "/memory.csv"));
    std::string line;
    int rows = 0;
    while (std::getline(memory, line)) {
        if (line.find(",full cache,") == std::string::npos) continue;
        const bool local = line.find(",full cache,0,") != std::string::npos;
        const double kb = std::stod(line.substr(line.rfind(',', line.size() - 4) + 1));
        // K and V, 4 KV heads of 32 dimensions in f32: the window's 15 rows, or all T.
        EXPECT_NEAR(kb, 2.0 * 4 * (local ? 15 : T) * 32 * 4 / 1e3, 1e-6) << line;
        ++rows;
    }
    EXPECT_EQ(rows, 2);
}

const std::string kGemma2 = std::string(KVLENS_SOURCE_DIR) + "/tests/data/gguf/tiny-gemma2-F16.gguf";

// Gemma 2: the window on its 13 even layers of 26, its soft-caps and scales in info; generate
// runs past the window; so does a compression run (FullKV gives generate's tokens); what
// computes an attention of its own without the soft-cap is refused in one line.
TEST(SlidingWindowCli, Gemma2InfoGenerateAndCompression) {
    const test::CliResult r = runKvlens("info --model " + kGemma2);
    ASSERT_EQ(r.exitCode, 0) << r.err;
    EXPECT_NE(r.out.find("sliding window 64 tokens on 13 local layers of 26 (in each run of 2, 1 local then 1 global): "
                         "applied by generate and by the compression methods"),
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
    const test::CliResult full = runKvlens("run --json --method full -n 4 --model " + kGemma2 + " --prompt " + kLong);
    ASSERT_EQ(full.exitCode, 0) << full.err;
    EXPECT_EQ(nlohmann::json::parse(full.out)["token_ids"], nlohmann::json::parse(g.out)["generated_token_ids"]);
    const test::CliResult snap =
        runKvlens("run --json --method snapkv --budget 40 --window 8 -n 4 --model " + kGemma2 + " --prompt " + kLong);
    ASSERT_EQ(snap.exitCode, 0) << snap.err;
    const nlohmann::json budgets = nlohmann::json::parse(snap.out)["layer_budgets"];
    EXPECT_EQ(budgets[0], 40);  // 40 of the local layer's 63
    EXPECT_EQ(budgets[1], 40);
    test::expectOneLineError(runKvlens("run --method expected --budget 40 -n 4 --model " + kGemma2 + " --prompt " + kShort),
                             {"--method expected: its expected attention does not apply the model's attention logit "
                              "soft-cap yet"});
    test::expectOneLineError(runKvlens("run --method snapkv --budget 12 --window 4 --decode-every 4 -n 4 --sliding-window "
                                       "ignore --model " + kGemma2 + " --prompt " + kShort),
                             {"--decode-every on a model with attention logit soft-capping"});
}

}  // namespace
}  // namespace kvlens
