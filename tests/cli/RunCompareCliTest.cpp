// kvlens run and compare as a user runs them: every figure present and finite,
// FullKV perfect, and one clear line for each bad method setting.
#include <gtest/gtest.h>

#include <set>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "cli/CliHarness.h"
#include "sessions/SessionStore.h"

namespace {

using kvlens::test::CliResult;
using kvlens::test::expectOneLineError;
using Result = CliResult;

CliResult runCli(const std::string& args) { return kvlens::test::runKvlens(args); }

// A prompt of about 400 stories260K tokens (or 4x as many bytes for the byte tokenizer).
std::string promptFile() {
    const std::string path = kvlens::test::testOutputPath("compare_prompt.txt");
    std::ofstream out(path);
    const char* words[] = {"once", "upon", "a", "time", "there", "was", "a", "little", "girl", "named",
                           "lily", "she", "loved", "to", "play", "in", "the", "park", "with", "her", "ball"};
    for (int i = 0; i < 262; ++i) out << words[(i * 7 + i / 5) % 21] << (i % 13 == 12 ? ".\n" : " ");
    return path;
}

const std::string kStories = std::string(KVLENS_SHARED_DIR) + "/models/stories260K.gguf";

// Parses compare --csv and checks every figure; returns rows by method.
std::vector<std::vector<std::string>> csvRows(const std::string& text) {
    std::vector<std::vector<std::string>> rows;
    std::istringstream in(text);
    std::string line;
    std::getline(in, line);
    EXPECT_EQ(line.rfind("method,budget,params,kv_bytes", 0), 0u) << line;
    while (std::getline(in, line)) {
        std::vector<std::string> cells;
        std::string cell;
        bool quoted = false;
        for (char c : line) {
            if (c == '"') {
                quoted = !quoted;
            } else if (c == ',' && !quoted) {
                cells.push_back(cell);
                cell.clear();
            } else {
                cell += c;
            }
        }
        cells.push_back(cell);
        EXPECT_EQ(cells.size(), 14u) << line;
        for (size_t i = 3; i + 1 < cells.size(); ++i) {
            EXPECT_TRUE(std::isfinite(std::stod(cells[i]))) << line;
        }
        // max_cache_entries: empty unless the run compressed while decoding.
        EXPECT_EQ(cells.back().empty(), cells[12] == "0") << line;
        rows.push_back(cells);
    }
    return rows;
}

void checkCompare(const std::string& model, const std::string& extra) {
    const Result r = runCli("compare --model " + model + " --prompt-file " + promptFile() +
                            " --budgets 32,64,128 -n 24 --csv --dtype f32 --lag 8 " + extra);
    ASSERT_EQ(r.exitCode, 0) << r.err;
    const auto rows = csvRows(r.out);
    ASSERT_EQ(rows.size(), 1u + 25u * 3u);  // full once, twenty-five methods at three budgets
    EXPECT_EQ(rows[0][0], "full");
    std::set<std::string> methods;
    for (const auto& row : rows) methods.insert(row[0]);
    EXPECT_EQ(methods, (std::set<std::string>{"full", "snapkv", "pyramidkv", "streamingllm", "h2o", "adakv", "random",
                                              "tova", "knorm", "keydiff", "lagkv", "chunkkv", "expected", "cur",
                                              "cake", "simlayerkv", "perlayer", "leverage", "noncausal",
                                              "compactor", "criticalkv", "criticaladakv", "kvzip", "finch",
                                              "finch-kvpress", "chunkkv-kvpress"}));
    EXPECT_EQ(std::stod(rows[0][5]), 1.0);  // ratio
    EXPECT_EQ(std::stod(rows[0][6]), 24.0);  // agreed prefix
    EXPECT_EQ(std::stod(rows[0][7]), 1.0);  // token agreement
    EXPECT_EQ(std::stod(rows[0][8]), 0.0);  // mean KL
    EXPECT_EQ(std::stod(rows[0][9]), 1.0);  // top-1
    EXPECT_EQ(std::stod(rows[0][11]), 1.0);  // hit rate: FullKV keeps every position
    for (size_t i = 1; i < rows.size(); ++i) {
        // SimLayerKV keeps every position of a layer it does not find lazy.
        if (rows[i][0] == "simlayerkv") {
            EXPECT_LE(std::stod(rows[i][5]), 1.0) << rows[i][1];
        } else {
            EXPECT_LT(std::stod(rows[i][5]), 0.5) << rows[i][0] << " " << rows[i][1];
        }
        EXPECT_GE(std::stod(rows[i][8]), 0.0);
        EXPECT_GE(std::stod(rows[i][11]), 0.0);
        EXPECT_LE(std::stod(rows[i][11]), 1.0);
    }
}

TEST(CompareCli, EveryMethodAtThreeBudgetsOnStories260K) {
    if (!std::ifstream(kStories)) GTEST_SKIP() << "needs " << kStories;
    checkCompare(kStories, "");
}

TEST(CompareCli, EveryMethodAtThreeBudgetsOnARandomModel) {
    checkCompare("random:tiny:layers=2", "");
}

// A share budget reads back as written (not "12.500000%"), and under kvpress's convention the
// default method list leaves out what kvpress's forms cannot reproduce, saying so, and runs
// chunkkv and finch as kvpress's ports of them.
TEST(CompareCli, ShareBudgetsReadAsWrittenAndKvpressListsOnlyReproducedMethods) {
    const Result r = runCli("compare --model random:tiny:layers=1 --prompt-file " + promptFile() +
                            " --budgets 12.5%,50% -n 2 --csv --dtype f32 --convention kvpress");
    ASSERT_EQ(r.exitCode, 0) << r.err;
    EXPECT_NE(r.err.find("--convention kvpress leaves out h2o, random, cake,"), std::string::npos) << r.err;
    std::set<std::string> budgets, methods;
    for (const auto& row : csvRows(r.out)) {
        budgets.insert(row[1]);
        methods.insert(row[0]);
    }
    EXPECT_EQ(budgets, (std::set<std::string>{"-", "12.5%", "50%"}));
    EXPECT_EQ(methods.count("snapkv"), 1u);
    EXPECT_EQ(methods.count("chunkkv-kvpress"), 1u);
    EXPECT_EQ(methods.count("h2o"), 0u);
    EXPECT_EQ(methods.count("kvzip"), 0u);
    // chunkkv and finch run as their kvpress twins, once each.
    EXPECT_EQ(methods.count("chunkkv"), 0u);
    EXPECT_EQ(methods.count("finch"), 0u);
    EXPECT_EQ(methods.count("finch-kvpress"), 1u);
}

TEST(RunCli, JsonHasTheMetricsAndBothContinuations) {
    const Result r = runCli("run --model random:tiny:layers=2 --prompt-file " + promptFile() +
                            " --method adakv --budget 25% -n 8 --json");
    ASSERT_EQ(r.exitCode, 0) << r.err;
    const auto j = nlohmann::json::parse(r.out);
    EXPECT_EQ(j["params"]["method"], "adakv");
    EXPECT_EQ(j["params"]["budget_ratio"], 0.25);
    EXPECT_EQ(j["full_token_ids"].size(), 8u);
    EXPECT_EQ(j["token_ids"].size(), 8u);
    EXPECT_EQ(j["metrics"]["kl_per_step"].size(), 8u);
    EXPECT_EQ(j["metrics"]["kv_bytes_per_layer"].size(), 2u);
    EXPECT_NEAR(j["metrics"]["kv_ratio"].get<double>(), 0.25, 0.01);
    EXPECT_GT(j["capture_bytes"].get<int64_t>(), j["metrics"]["kv_bytes_full"].get<int64_t>());
}

// ThinK over SnapKV: half of each kept prompt key's channels pruned, so the kept KV is 3/4
// of SnapKV's alone (K half, V whole), while the memory allocated (zeroed in place) is not.
TEST(RunCli, ThinkCountsThePrunedChannelsOutOfTheKvBytes) {
    const std::string base = "run --model random:tiny:layers=2 --prompt-file " + promptFile() +
                             " --method snapkv --budget 64 -n 1 --json";
    const Result plain = runCli(base), think = runCli(base + " --think 0.5");
    ASSERT_EQ(plain.exitCode, 0) << plain.err;
    ASSERT_EQ(think.exitCode, 0) << think.err;
    const auto p = nlohmann::json::parse(plain.out)["metrics"], t = nlohmann::json::parse(think.out)["metrics"];
    EXPECT_EQ(t["kv_bytes"].get<int64_t>() * 4, p["kv_bytes"].get<int64_t>() * 3);
    EXPECT_EQ(t["kv_bytes_allocated"].get<int64_t>(), p["kv_bytes_allocated"].get<int64_t>());
    EXPECT_EQ(nlohmann::json::parse(think.out)["params"]["think"].get<double>(), 0.5);
}

// A budget at or above the prompt keeps everything whatever the window: a
// 6-token prompt with the default window 32 and budget 64 is a full cache.
TEST(RunCli, BudgetAboveAShortPromptKeepsEverythingWhateverTheWindow) {
    for (const char* method : {"snapkv", "pyramidkv", "adakv", "h2o", "random", "streamingllm"}) {
        const Result r = runCli(std::string("run --model random:tiny:layers=1 --prompt hello -n 4 --method ") +
                                method + " --budget 64 --json");
        ASSERT_EQ(r.exitCode, 0) << method << ": " << r.err;
        const auto j = nlohmann::json::parse(r.out);
        EXPECT_EQ(j["metrics"]["kv_ratio"].get<double>(), 1.0) << method;
        EXPECT_EQ(j["metrics"]["token_agreement"].get<double>(), 1.0) << method;
    }
}

// Compression during decoding: the JSON's cache entries (the entries per head after each
// answer token but the last) never pass the budget plus the steps between compressions.
TEST(RunCli, DecodeEveryKeepsTheCacheNearTheBudget) {
    const std::string base = "run --model random:tiny:layers=2 --prompt-file " + promptFile() + " -n 40 --json ";
    for (const char* method :
         {"streamingllm", "knorm", "keydiff", "snapkv", "cur", "expected", "pyramidkv", "adakv", "lagkv --lag 8",
          "adakv --scorer tova", "chunkkv --chunk 4", "perlayer --scorer lagkv --lag 8", "criticalkv",
          "criticaladakv --scorer knorm", "random", "simlayerkv --lazy 0"}) {
        const Result r = runCli(base + "--method " + method + " --budget 48 --decode-every 4 --window 8");
        ASSERT_EQ(r.exitCode, 0) << r.err;
        const auto j = nlohmann::json::parse(r.out);
        EXPECT_EQ(j["decode_every"], 4);
        const auto entries = j["cache_entries"].get<std::vector<int64_t>>();
        ASSERT_EQ(entries.size(), 39u) << method;
        for (size_t i = 0; i < entries.size(); ++i) {
            EXPECT_LE(entries[i], 48 + 3) << method << " step " << i + 1;
            EXPECT_GE(entries[i], 48) << method << " step " << i + 1;
            if ((i + 1) % 4 == 0) {
                EXPECT_EQ(entries[i], 48) << method << " step " << i + 1;  // just compressed
            }
        }
    }
    const Result plain = runCli(base + "--method knorm --budget 48");
    ASSERT_EQ(plain.exitCode, 0) << plain.err;
    EXPECT_FALSE(nlohmann::json::parse(plain.out).contains("cache_entries"));
    const std::string text = "run --model random:tiny:layers=1 --prompt-file " + promptFile() + " -n 4 ";
    expectOneLineError(runCli(text + "--method cake --budget 48 --decode-every 2"),
                       {"--decode-every: cake has no form for compression during decoding here"});
    expectOneLineError(runCli(text + "--method knorm --budget 48 --decode-every 0"), {"--decode-every 0 must be at least 1"});
    expectOneLineError(runCli(text + "--method adakv --scorer compactor --budget 48 --decode-every 2"),
                       {"--decode-every: adakv with --scorer compactor has no form for compression during decoding here"});
    expectOneLineError(runCli(text + "--method chunkkv --scorer lagkv --lag 20 --window 8 --chunk 4 --budget 46 "
                                     "--decode-every 2"),
                       {"--budget 46 leaves 3 entries beside the longer of --window 8 and LagKV's tail (2 x --lag - 1 "
                        "= 39 rows) + --sinks 4, less than one --chunk of 4"});
    expectOneLineError(runCli(text + "--method knorm --budget 10% --decode-every 2"), {"--decode-every needs --budget in entries"});
    // Saved, such a run keeps its schedule and the cache's size after each step.
    const std::string store = kvlens::test::testOutputPath("decode-every-" + std::to_string(::getpid()) + ".db");
    std::remove(store.c_str());
    const Result savedRun = runCli(text + "--method knorm --budget 48 --decode-every 2 --save --store " + store);
    ASSERT_EQ(savedRun.exitCode, 0) << savedRun.err;
    kvlens::sessions::SessionStore opened(store, kvlens::sessions::SessionStore::Access::ReadOnly);
    const auto runs = opened.runs(opened.session("default").id);
    ASSERT_EQ(runs.size(), 1u);
    const kvlens::RunMetrics m = opened.run(runs[0].id).metrics;
    EXPECT_EQ(m.decodeEvery, 2);
    EXPECT_EQ(m.cacheEntries.size(), 3u);  // -n 4: the first three answer tokens fed
    EXPECT_GT(m.allocatedBytes, 0);
    // Listed as such.
    const Result shown = runCli("sessions show default --store " + store);
    ASSERT_EQ(shown.exitCode, 0) << shown.err;
    EXPECT_NE(shown.out.find("compressed every 2 decode steps"), std::string::npos) << shown.out;
    const Result listed = runCli("sessions show default --json --store " + store);
    ASSERT_EQ(listed.exitCode, 0) << listed.err;
    EXPECT_EQ(nlohmann::json::parse(listed.out)["runs"][0]["decode_every"], 2);
}

TEST(RunCli, BadMethodSettingsGiveOneLine) {
    const std::string base = "run --model random:tiny:layers=1 --prompt-file " + promptFile() + " -n 4 ";
    expectOneLineError(runCli(base + "--method snapkv2 --budget 64"), {"--method 'snapkv2'", "pyramidkv"});
    expectOneLineError(runCli(base + "--method snapkv --budget 32"), {"--budget 32 must exceed --window 32"});
    expectOneLineError(runCli(base + "--method snapkv --budget 64 --kernel 6"), {"--kernel 6 must be odd"});
    expectOneLineError(runCli(base + "--method adakv --budget 64 --alpha 1.5"), {"--alpha 1.5 must be in [0, 1]"});
    expectOneLineError(runCli(base + "--method snapkv --budget 100 --window 2000"), {"--window 2000"});
    expectOneLineError(runCli(base + "--method snapkv --budget 64 --window 65"), {"--window 65", "64 window queries"});
    expectOneLineError(runCli("run --model random:tiny:layers=1 --prompt hello -n 4 --method snapkv --budget 4"),
                       {"--window 32 must be below the prompt length 6"});
    expectOneLineError(runCli(base + "--method snapkv --budget 1%"),
                       {"--budget 1% of the ", "-token prompt rounds to ", "which must exceed --window 32"});
    expectOneLineError(runCli(base + "--method snapkv --budget 0"), {"--budget '0'"});
    // A bad flag is named before a missing budget.
    expectOneLineError(runCli(base + "--method snapkv --convention paperr"), {"--convention 'paperr'"});
    expectOneLineError(runCli(base + "--method snapkv"), {"--budget is required"});
    for (const char* method : {"tova", "knorm", "keydiff"}) {
        expectOneLineError(runCli(base + "--method " + method + " --budget 0"), {"--budget '0'"});
        expectOneLineError(runCli(base + "--method " + method + " --budget 120%"), {"--budget '120%'"});
        expectOneLineError(runCli(base + "--method " + method), {"--budget is required"});
    }
    expectOneLineError(runCli(base + "--method snapkv"), {"--budget is required"});
    expectOneLineError(runCli("run --model random:tiny:layers=1:ctx=100 --prompt-file " + promptFile() +
                              " --method snapkv --budget 64 -n 8"),
                       {"the prompt is", "longer than the model's context of 100"});
    expectOneLineError(runCli("run --model random:tiny:layers=1:ctx=1500 --prompt-file " + promptFile() +
                              " --method snapkv --budget 64 -n 400"),
                       {"-n 400 does not fit", "context of 1500"});
    expectOneLineError(runCli(base + "--method snapkv --budget 64 --pool median"), {"--pool 'median'"});
    expectOneLineError(runCli(base + "--method snapkv --budget 64 --gqa group"), {"--gqa 'group'"});
    expectOneLineError(runCli(base + "--method pyramidkv --budget 64 --schedule linear"), {"--schedule 'linear'"});
    expectOneLineError(runCli("compare --model random:tiny:layers=1 --prompt hi --methods snapkv,nope"),
                       {"--methods: 'nope' is not one of"});
    // compare checks every run against the tokenized prompt before its prefill: before the
    // prefill's own check that -n fits the context, which would speak first otherwise.
    expectOneLineError(runCli("compare --model random:tiny:layers=1:ctx=1500 --prompt-file " + promptFile() +
                              " --methods snapkv,knorm --budgets 64,16 --window 32 -n 400"),
                       {"--budget 16 must exceed --window 32"});
    expectOneLineError(runCli(base + "--method lagkv --budget 64"),
                       {"--budget 64 must hold LagKV's 4 sinks and its last partition with the remainder",
                        "at --lag 128", "raise the budget or lower --lag"});
    expectOneLineError(runCli(base + "--method lagkv --budget 64 --lag 0"), {"--lag '0' is not an integer in [1,"});
    expectOneLineError(runCli(base + "--method chunkkv --budget 40"),
                       {"--budget 40 leaves 8 entries beside --window 32, less than one --chunk of 10"});
    expectOneLineError(runCli(base + "--method chunkkv --budget 64 --chunk x"), {"--chunk 'x' is not an integer"});
    expectOneLineError(runCli(base + "--method chunkkv-kvpress --budget 64 --chunk 5000"),
                       {"--chunk 5000 is longer than the ", "-token prompt (kvpress's ChunkKV then falls back"});
    expectOneLineError(runCli(base + "--method expected --budget 64 --sinks 65"),
                       {"--sinks 65 is above the 64 first queries the capture keeps"});
    expectOneLineError(runCli(base + "--method expected --budget 64 --future 0"), {"--future '0' is not an integer in [1,"});
    expectOneLineError(runCli(base + "--method expected --budget 3"),
                       {"--budget 3 must exceed --sinks 4 (the budget includes the sinks)"});
    expectOneLineError(runCli(base + "--method cur --budget 4"),
                       {"--budget 4 must exceed --sinks 4 (the budget includes the sinks)"});
    expectOneLineError(runCli(base + "--method snapkv --budget 64 --scorer knorm"),
                       {"--scorer is for adakv, chunkkv, cake, perlayer, criticalkv, criticaladakv and "
                        "chunkkv-kvpress, not --method snapkv"});
    expectOneLineError(runCli(base + "--method adakv --budget 64 --scorer attention"),
                       {"--scorer 'attention' is not one of snapkv, h2o, tova, knorm, keydiff, lagkv, expected, cur, "
                        "cake, leverage, noncausal, compactor, kvzip"});
    expectOneLineError(runCli(base + "--method cake --budget 64 --tau1 0"),
                       {"--tau1 0 must be positive (CAKE raises the dispersion to 1/tau)"});
    expectOneLineError(runCli(base + "--method cake --budget 64 --gamma -1"), {"--gamma -1 must be >= 0"});
    expectOneLineError(runCli(base + "--method cake --budget 64 --tau2 x"), {"--tau2 'x' is not a number"});
    expectOneLineError(runCli(base + "--method simlayerkv --budget 64 --lazy 2"), {"--lazy 2 must be in [0, 1]"});
    expectOneLineError(runCli(base + "--method perlayer --budget 64 --layer-weights 1,2,3"),
                       {"--layer-weights has 3 weights; the model has 1 layers, one weight each"});
    expectOneLineError(runCli(base + "--method perlayer --budget 64 --layer-weights 1,-2"),
                       {"--layer-weights: -2 is not a positive weight"});
    expectOneLineError(runCli(base + "--method perlayer --budget 64 --layer-weights 1,two"),
                       {"--layer-weights: 'two' is not a number"});
    expectOneLineError(runCli(base + "--method snapkv --budget 64 --layer-weights 1"),
                       {"--layer-weights is for --method perlayer, not snapkv"});
    expectOneLineError(runCli(base + "--method snapkv --budget 64 --think 1.5"),
                       {"--think 1.5 must be in [0, 1) (the share of each key's channels ThinK prunes)"});
    expectOneLineError(runCli(base + "--method leverage --budget 64 --sketch 0"), {"--sketch '0' is not an integer in [1,"});
    expectOneLineError(runCli(base + "--method noncausal --budget 64 --attn-chunk x"),
                       {"--attn-chunk 'x' is not an integer"});
    expectOneLineError(runCli(base + "--method kvzip --budget 64 --repeat-chunk 0"),
                       {"--repeat-chunk '0' is not an integer in [1,"});
    expectOneLineError(runCli(base + "--method kvzip --budget 4"), {"--budget 4 must exceed --sinks 4"});
    expectOneLineError(runCli(base + "--method finch --budget 64 --finch-chunk 0"),
                       {"--finch-chunk '0' is not an integer in [1,"});
    expectOneLineError(runCli(base + "--method finch --budget 64 --think 0.5"),
                       {"--think cannot prune Finch's cache: Finch prefills its own, with re-rotated keys"});
    expectOneLineError(runCli(base + "--method finch-kvpress --budget 64 --window 70"),
                       {"--window 70 is above the 64 window queries the capture holds"});
    expectOneLineError(runCli(base + "--method finch-kvpress --budget 16 --window 16"),
                       {"--budget 16 must exceed --window 16 (the budget includes the window)"});
    expectOneLineError(runCli(base + "--method criticaladakv --budget 64 --alpha 2"),
                       {"--alpha 2 must be in [0, 1]"});
    expectOneLineError(runCli(base + "--method compactor --budget 64 --blend -1"),
                       {"--blend '-1' must be >= 0 (or auto: the compression ratio)"});
    expectOneLineError(runCli(base + "--method compactor --budget 64 --blend much"), {"--blend 'much' is not a number"});
    expectOneLineError(runCli(base + "--method compactor --budget 36"),
                       {"--budget 36 must exceed --window + --sinks 36"});
    expectOneLineError(runCli(base + "--method adakv --budget 36 --scorer expected"),
                       {"--budget 36 must exceed --window + --sinks 36"});
    expectOneLineError(runCli("compare --model random:tiny:layers=1 --prompt-file " + promptFile() +
                              " -n 2 --methods snapkv,knorm --budgets 64 --scorer knorm"),
                       {"--scorer is for adakv, chunkkv, cake, perlayer, criticalkv, criticaladakv and "
                        "chunkkv-kvpress, and --methods names none of them"});
    // Named explicitly, a method whose settings do not fit the prompt fails the comparison.
    expectOneLineError(runCli("compare --model random:tiny:layers=1 --prompt-file " + promptFile() +
                              " -n 2 --methods snapkv,lagkv --budgets 64"),
                       {"--budget 64 must hold LagKV's 4 sinks"});
}

// A knob's flag that the method does not read changes nothing: the run goes on, and stderr says so
// in one line naming the flag, what the method reads and what reads the flag.
TEST(RunCli, AFlagTheMethodDoesNotReadIsNamedOnStderr) {
    const std::string base = "run --model random:tiny:layers=1 --prompt-file " + promptFile() + " -n 2 ";
    auto warningOf = [](const CliResult& r) {
        EXPECT_EQ(r.exitCode, 0) << r.err;
        std::string lines;
        std::istringstream in(r.err);
        for (std::string line; std::getline(in, line);)
            if (line.find(": ignored; ") != std::string::npos) lines += line + "\n";
        return lines;
    };
    EXPECT_EQ(warningOf(runCli(base + "--method snapkv --budget 64 --sinks 3")),
              "run: --sinks is not read by --method snapkv (it reads --window, --kernel, --pool and --gqa): ignored; "
              "--sinks is for streamingllm, lagkv, expected, cur, simlayerkv, compactor and kvzip (and a wrapper "
              "ranking by one of them)\n");
    EXPECT_EQ(warningOf(runCli(base + "--method full --kernel 3")),
              "run: --kernel is not read by --method full (it reads no knob): ignored; --kernel is for snapkv and "
              "pyramidkv (and a wrapper ranking by one of them)\n");
    EXPECT_EQ(warningOf(runCli(base + "--method pyramidkv --budget 64 --convention kvpress --schedule factory")),
              "run: --schedule is not read by --method pyramidkv under --convention kvpress (it reads --window, "
              "--kernel, --pool, --gqa and --beta): ignored; --schedule is for pyramidkv; not pyramidkv under "
              "--convention kvpress\n");
    // Read by the method: no line.
    EXPECT_EQ(warningOf(runCli(base + "--method streamingllm --budget 64 --sinks 3")), "");
    EXPECT_EQ(warningOf(runCli(base + "--method adakv --budget 64 --scorer snapkv --kernel 5")), "");
    // A sweep names a flag none of its methods reads, and not one some read.
    EXPECT_EQ(warningOf(runCli("compare --model random:tiny:layers=1 --prompt-file " + promptFile() +
                               " -n 2 --methods snapkv,h2o --budgets 64 --sinks 3")),
              "compare: --sinks is read by none of --methods: ignored; --sinks is for streamingllm, lagkv, "
              "expected, cur, simlayerkv, compactor and kvzip (and a wrapper ranking by one of them)\n");
    EXPECT_EQ(warningOf(runCli("compare --model random:tiny:layers=1 --prompt-file " + promptFile() +
                               " -n 2 --methods snapkv,streamingllm --budgets 64 --sinks 3")),
              "");
}

TEST(CompareCli, TheDefaultListLeavesOutAMethodWhoseSettingsDoNotFitWithItsReason) {
    const Result r = runCli("compare --model random:tiny:layers=1 --prompt-file " + promptFile() +
                            " --budgets 64 -n 2 --csv --dtype f32");
    ASSERT_EQ(r.exitCode, 0) << r.err;
    EXPECT_NE(r.err.find("compare: left out lagkv B=64 sinks=4 lag=128: --budget 64 must hold LagKV's 4 sinks"),
              std::string::npos)
        << r.err;
    std::set<std::string> methods;
    for (const auto& row : csvRows(r.out)) methods.insert(row[0]);
    EXPECT_EQ(methods, (std::set<std::string>{"full", "snapkv", "pyramidkv", "streamingllm", "h2o", "adakv", "random",
                                              "tova", "knorm", "keydiff", "chunkkv", "expected", "cur", "cake",
                                              "simlayerkv", "perlayer", "leverage", "noncausal", "compactor",
                                              "criticalkv", "criticaladakv", "kvzip", "finch", "finch-kvpress",
                                              "chunkkv-kvpress"}));
}

// compare --decode-every: every run but full compresses while decoding; the default list
// leaves out the methods without a decode form, each with its reason; a named one, or a
// ratio budget, is one line before the prefill.
TEST(CompareCli, DecodeEveryComparesTheMethodsThatDecodeCompressed) {
    const std::string base = "compare --model random:tiny:layers=1 --prompt-file " + promptFile() + " -n 12 --dtype f32 ";
    const Result r = runCli(base + "--budgets 64 --lag 8 --csv --decode-every 4");
    ASSERT_EQ(r.exitCode, 0) << r.err;
    EXPECT_NE(r.err.find("compare: left out cake B=64 W=32 tau1=1 tau2=1 gamma=200: --decode-every: cake has no form "
                         "for compression during decoding here"),
              std::string::npos)
        << r.err;
    std::set<std::string> methods;
    for (const auto& row : csvRows(r.out)) {
        methods.insert(row[0]);
        if (row[0] == "full") {
            EXPECT_EQ(row[12], "0");
            continue;
        }
        EXPECT_EQ(row[12], "4") << row[0];
        if (row[0] == "simlayerkv") continue;  // its layers that are not lazy keep every row
        // At most 3 rows above the budget between compressions (ChunkKV may stay under it).
        EXPECT_LE(std::stoll(row[13]), 64 + 3) << row[0];
        EXPECT_GE(std::stoll(row[13]), 64 - 2 * 9) << row[0];
    }
    EXPECT_EQ(methods, (std::set<std::string>{"full", "snapkv", "pyramidkv", "streamingllm", "h2o", "adakv", "random",
                                              "tova", "knorm", "keydiff", "lagkv", "chunkkv", "expected", "cur",
                                              "simlayerkv", "perlayer", "criticalkv", "criticaladakv"}));
    const Result table = runCli(base + "--methods snapkv,knorm --budgets 64 --decode-every 4");
    ASSERT_EQ(table.exitCode, 0) << table.err;
    EXPECT_NE(table.out.find("compressed every 4 decode steps"), std::string::npos) << table.out;
    EXPECT_NE(table.out.find("   cache\n"), std::string::npos) << table.out;
    expectOneLineError(runCli(base + "--methods snapkv,cake --budgets 64 --decode-every 4"),
                       {"--decode-every: cake has no form for compression during decoding here"});
    expectOneLineError(runCli(base + "--methods snapkv --budgets 25% --decode-every 4"),
                       {"--decode-every needs --budget in entries"});
    // The default list with a ratio budget: one line too, not a method left out after another.
    expectOneLineError(runCli(base + "--budgets 25% --decode-every 4"), {"--decode-every needs --budget in entries"});
    expectOneLineError(runCli(base + "--methods snapkv --budgets 64 --decode-every 0"),
                       {"--decode-every 0 must be at least 1"});
}

}  // namespace

namespace {

// A tiny model whose template is ChatML, with <|im_start|>/<|im_end|> as control tokens.
std::string chatModel() {
    kvlens::test::TinyModelShape shape;
    shape.context = 256;
    shape.chatTemplate = "{% for m in messages %}<|im_start|>{{ m.role }}{{ m.content }}<|im_end|>{% endfor %}";
    shape.controlTokens = {"<|im_start|>", "<|im_end|>"};
    const std::string path = kvlens::test::testOutputPath("cli_chat_model.gguf");
    kvlens::test::makeTinyModelFile(shape).builder.writeFile(path);
    return path;
}

}  // namespace

// --chat on run, compare and inspect: the prompt goes as the template's user turn (the
// same ids as tokenize --chat), and a model without a template is one line.
TEST(RunCli, ChatWrapsThePromptForRunCompareAndInspect) {
    const std::string model = chatModel();
    const std::string chat = " --prompt 'the cat the a the cat' --chat --system 'be brief'";
    const CliResult tok = runCli("tokenize --model " + model + chat + " --json");
    ASSERT_EQ(tok.exitCode, 0) << tok.err;
    const auto ids = nlohmann::json::parse(tok.out)["token_ids"];
    EXPECT_EQ(std::count(ids.begin(), ids.end(), nlohmann::json(273)), 3);  // <|im_start|> (id 273): system, user, assistant

    const CliResult run = runCli("run --model " + model + chat + " --method snapkv --budget 8 --window 4 -n 2 --json");
    ASSERT_EQ(run.exitCode, 0) << run.err;
    EXPECT_EQ(nlohmann::json::parse(run.out)["prompt_tokens"].get<size_t>(), ids.size());
    const CliResult compare = runCli("compare --model " + model + chat + " --methods snapkv --budgets 8 -n 2 --csv");
    ASSERT_EQ(compare.exitCode, 0) << compare.err;
    const std::string out = kvlens::test::testOutputPath("cli_chat_inspect");
    const CliResult inspect =
        runCli("inspect --model " + model + chat + " --method snapkv --budget 8 --window 4 -n 2 --hit-k 4 --out " + out);
    ASSERT_EQ(inspect.exitCode, 0) << inspect.err;
    for (const char* command : {"compare --methods snapkv --budgets 8", "inspect --method snapkv --budget 8 --out " })
        expectOneLineError(runCli(std::string(command) + (std::string(command).rfind("inspect", 0) == 0 ? out : "") +
                                     " --model random:tiny --prompt hi --chat"),
                           {"--chat: random:tiny has no chat template"});
}
