// kvlens select as a user runs it: the oracle's selections from its dumped
// tensors, and one clear line and a non-zero exit for every bad input.
#include <gtest/gtest.h>

#include <algorithm>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>

#include "cli/CliHarness.h"

namespace {

using nlohmann::json;

using kvlens::test::CliResult;
using kvlens::test::expectOneLineError;
using Result = CliResult;

CliResult runCli(const std::string& args) { return kvlens::test::runKvlens(args); }

const std::string kOracleDir = std::string(KVLENS_SHARED_DIR) + "/testdata/kv-oracle/";
const std::string kExpected = kOracleDir + "expected_L4_H8_KV8_D16_T300_W32.json";

// A small kvref-inputs-v1 document of seeded values in [-1, 1].
json inputsDoc(int64_t layer, int64_t heads, int64_t kvHeads, int64_t T, int64_t W, int64_t D) {
    std::mt19937 rng(unsigned(7 + layer));
    std::uniform_real_distribution<double> u(-1.0, 1.0);
    auto block = [&](int64_t a, int64_t b) {
        json x = json::array();
        for (int64_t i = 0; i < a; ++i) {
            json row = json::array();
            for (int64_t j = 0; j < b; ++j) {
                json v = json::array();
                for (int64_t d = 0; d < D; ++d) v.push_back(u(rng));
                row.push_back(v);
            }
            x.push_back(row);
        }
        return x;
    };
    return {{"schema", "kvref-inputs-v1"},
            {"layer", layer},
            {"n_q_heads", heads},
            {"n_kv_heads", kvHeads},
            {"head_dim", D},
            {"seq_len", T},
            {"window", W},
            {"q_window", block(heads, W)},
            {"keys", block(kvHeads, T)},
            {"values", block(kvHeads, T)}};
}

std::string write(const std::string& name, const std::string& text) {
    const std::string path = kvlens::test::testOutputPath(name);
    std::ofstream(path) << text;
    return path;
}

// Two layers, 4 query heads on 2 KV heads, T = 40, W = 8, D = 4.
std::string smallInputs(const std::string& prefix) {
    return write(prefix + "_layer0.json", inputsDoc(0, 4, 2, 40, 8, 4).dump()) + " " +
           write(prefix + "_layer1.json", inputsDoc(1, 4, 2, 40, 8, 4).dump());
}

TEST(SelectCli, ReproducesNonAmbiguousOracleCases) {
    std::ifstream in(kExpected);
    if (!in) GTEST_SKIP() << "test vectors not found: " << kExpected;
    const json expected = json::parse(in);
    std::string inputs;
    for (const json& f : expected.at("input_files"))
        inputs += " " + kOracleDir + f.get<std::string>();
    const std::map<std::string, std::string> flags = {
        {"snapkv_query_head_avgpool_k7_mcp128",
         "--method snapkv --budget 128 --pool avg --kernel 7 --gqa query-head"},
        {"pyramidkv_query_head_avgpool_k5_mcp64",
         "--method pyramidkv --budget 64 --pool avg --kernel 5 --gqa query-head --schedule factory "
         "--beta 20"}};
    for (const auto& [caseId, caseFlags] : flags) {
        SCOPED_TRACE(caseId);
        const json* c = nullptr;
        for (const json& x : expected.at("cases"))
            if (x.at("case_id") == caseId) c = &x;
        ASSERT_NE(c, nullptr);
        ASSERT_FALSE(c->at("any_ambiguous_tie").get<bool>());
        const Result r = runCli("select --inputs" + inputs + " " + caseFlags + " --json");
        ASSERT_EQ(r.exitCode, 0) << r.err;
        const json out = json::parse(r.out);
        ASSERT_EQ(out.at("layers").size(), 4u);
        for (size_t l = 0; l < 4; ++l) {
            EXPECT_EQ(out["layers"][l]["layer"], l);
            EXPECT_EQ(out["layers"][l]["heads"], c->at("kept_indices")[l]) << "layer " << l;
            EXPECT_EQ(out["layer_budgets"][l], c->at("per_layer_total_kept")[l]) << "layer " << l;
        }
    }
}

TEST(SelectCli, PercentBudgetAndTheInputsWindowByDefault) {
    const Result r =
        runCli("select --inputs " + smallInputs("pct") + " --method snapkv --budget 50% --json");
    ASSERT_EQ(r.exitCode, 0) << r.err;
    const json out = json::parse(r.out);
    EXPECT_EQ(out["params"]["window"], 8);
    EXPECT_EQ(out["layer_budgets"], json({20, 20}));
    ASSERT_EQ(out["layers"].size(), 2u);
    ASSERT_EQ(out["layers"][1]["heads"].size(), 2u);  // kv-head mode: one selection per KV head
    const std::vector<int> kept = out["layers"][1]["heads"][0];
    ASSERT_EQ(kept.size(), 20u);
    for (int i = 0; i < 8; ++i) EXPECT_EQ(kept[12 + i], 32 + i);  // the window closes the list
}

// ThinK over SnapKV on dumped tensors: each head's pruned key channels, floor(D x R) of them,
// ascending, beside the same kept positions.
TEST(SelectCli, ThinkListsEachHeadsPrunedChannels) {
    const std::string inputs = smallInputs("think");
    const Result plain = runCli("select --inputs " + inputs + " --method snapkv --budget 50% --json");
    const Result think = runCli("select --inputs " + inputs + " --method snapkv --budget 50% --think 0.5 --json");
    ASSERT_EQ(think.exitCode, 0) << think.err;
    const json a = json::parse(plain.out), b = json::parse(think.out);
    EXPECT_FALSE(a["layers"][0].contains("pruned_channels"));
    EXPECT_EQ(b["params"]["think"], 0.5);
    for (size_t l = 0; l < b["layers"].size(); ++l) {
        EXPECT_EQ(b["layers"][l]["heads"], a["layers"][l]["heads"]);
        ASSERT_EQ(b["layers"][l]["pruned_channels"].size(), b["layers"][l]["heads"].size());
        for (const auto& head : b["layers"][l]["pruned_channels"]) {
            const std::vector<int> channels = head;
            EXPECT_EQ(channels.size(), 2u);  // D = 4 in these inputs
            EXPECT_TRUE(std::is_sorted(channels.begin(), channels.end()));
        }
    }
}

TEST(SelectCli, SummaryWithoutJson) {
    const Result r = runCli("select --inputs " + smallInputs("summary") +
                            " --method streamingllm --budget 10 --gqa query-head");
    ASSERT_EQ(r.exitCode, 0) << r.err;
    EXPECT_NE(r.out.find("layer 1: holds 10 per head, 20 entries"), std::string::npos) << r.out;
    // Query-head mode is for the voting methods; StreamingLLM keeps one list per KV head.
    EXPECT_NE(r.out.find("kv head 1: 10 kept, positions 0 .. 39"), std::string::npos) << r.out;
    EXPECT_EQ(r.out.find("head 3:"), std::string::npos) << r.out;
}

// A wrapper comparing a scorer's scores across heads where the table says they share no
// scale there gets one note on stderr, and runs.
TEST(SelectCli, ANoteWhereScoresAreComparedAcrossHeadsWithoutACommonScale) {
    const std::string in = smallInputs("crosshead");
    const Result knorm = runCli("select --inputs " + in + " --method adakv --scorer knorm --budget 16");
    ASSERT_EQ(knorm.exitCode, 0) << knorm.err;
    EXPECT_NE(knorm.err.find("select: note: adakv compares knorm's scores across KV heads, and knorm's scores share "
                             "no scale across heads"),
              std::string::npos)
        << knorm.err;
    EXPECT_NE(knorm.err.find("snapkv"), std::string::npos) << "names the scorers that share one: " << knorm.err;
    const Result snap = runCli("select --inputs " + in + " --method adakv --scorer snapkv --budget 16");
    ASSERT_EQ(snap.exitCode, 0) << snap.err;
    EXPECT_EQ(snap.err.find("note:"), std::string::npos) << snap.err;
    const Result chunk = runCli("select --inputs " + in + " --method chunkkv --scorer knorm --budget 24");
    ASSERT_EQ(chunk.exitCode, 0) << chunk.err;
    EXPECT_EQ(chunk.err.find("note:"), std::string::npos) << "chunkkv ranks each head on its own: " << chunk.err;
}

// --convention kvpress: kvpress's budget int(T x (1 - r)), its pooling, TOVAPress's last position;
// and one line for what it cannot run.
TEST(SelectCli, TheKvpressConvention) {
    const std::string in = smallInputs("kvpress");  // T = 40, W = 8
    // 40 x (1 - 0.3125) = 27.5: kvpress truncates to 27, the paper's convention rounds to 28.
    const Result kvpress = runCli("select --inputs " + in + " --method snapkv --compression-ratio 0.3125 "
                                  "--convention kvpress --json");
    ASSERT_EQ(kvpress.exitCode, 0) << kvpress.err;
    const json k = json::parse(kvpress.out);
    EXPECT_EQ(k["params"]["convention"], "kvpress");
    EXPECT_EQ(k["params"]["pool"], "avg");  // kvpress's only pooling, the default under its convention
    EXPECT_EQ(k["params"]["budget"], 27);
    EXPECT_EQ(k["layer_budgets"], json({27, 27}));
    EXPECT_NE(k["params"]["describe"].get<std::string>().find(" kvpress"), std::string::npos);
    const Result paper = runCli("select --inputs " + in + " --method snapkv --compression-ratio 0.3125 --json");
    ASSERT_EQ(paper.exitCode, 0) << paper.err;
    EXPECT_EQ(json::parse(paper.out)["params"]["budget"], 28);
    EXPECT_EQ(json::parse(paper.out)["params"]["convention"], "paper");

    const Result tova = runCli("select --inputs " + in + " --method tova --budget 10 --convention kvpress --json");
    ASSERT_EQ(tova.exitCode, 0) << tova.err;
    for (const auto& layer : json::parse(tova.out)["layers"]) {
        for (const auto& head : layer["heads"]) {
            const std::vector<int> kept = head;
            EXPECT_EQ(kept.size(), 10u);
            EXPECT_EQ(kept.back(), 39);  // TOVAPress keeps the last position
        }
    }

    auto run = [&](const std::string& flags) { return runCli("select --inputs " + in + " " + flags); };
    expectOneLineError(run("--method h2o --budget 16 --convention kvpress"),
                       {"--convention kvpress: --method h2o does not keep kvpress's positions", "snapkv"});
    expectOneLineError(run("--method adakv --scorer cake --budget 16 --convention kvpress"),
                       {"--convention kvpress: --scorer cake", "kvpress has no such press"});
    // ChunkKV under kvpress's convention is kvpress's port of it, said on stderr and in the params.
    const Result chunk = run("--method chunkkv --budget 16 --convention kvpress --json");
    ASSERT_EQ(chunk.exitCode, 0) << chunk.err;
    EXPECT_NE(chunk.err.find("--convention kvpress runs --method chunkkv as chunkkv-kvpress"), std::string::npos)
        << chunk.err;
    const Result twin = run("--method chunkkv-kvpress --budget 16 --convention kvpress --json");
    ASSERT_EQ(twin.exitCode, 0) << twin.err;
    EXPECT_EQ(json::parse(chunk.out)["params"]["method"], "chunkkv-kvpress");
    EXPECT_EQ(json::parse(chunk.out)["layers"], json::parse(twin.out)["layers"]);
    expectOneLineError(run("--method snapkv --budget 16 --convention kvpress --pool max"), {"--pool max", "avg"});
    expectOneLineError(run("--method snapkv --budget 16 --convention kvpress --gqa query-head"),
                       {"--gqa query-head"});
    expectOneLineError(run("--method snapkv --budget 16 --convention kvpres"), {"--convention 'kvpres'"});
    expectOneLineError(run("--method snapkv --compression-ratio 1"), {"--compression-ratio '1'", "[0, 1)"});
    expectOneLineError(run("--method snapkv --compression-ratio -0.1"), {"--compression-ratio '-0.1'"});
    expectOneLineError(run("--method snapkv --compression-ratio half"), {"--compression-ratio 'half'"});
    expectOneLineError(run("--method snapkv --compression-ratio 0.5 --budget 16"), {"give one"});
}

// A layer's W_o [E][H*D] as the o_proj field: what criticalkv and criticaladakv rank by.
json withOutputProjection(json doc, int64_t rows, int64_t columns) {
    std::mt19937 rng(unsigned(11 + doc["layer"].get<int>()));
    std::uniform_real_distribution<double> u(-1.0, 1.0);
    json o = json::array();
    for (int64_t e = 0; e < rows; ++e) {
        json row = json::array();
        for (int64_t c = 0; c < columns; ++c) row.push_back(u(rng));
        o.push_back(row);
    }
    doc["o_proj"] = o;
    return doc;
}

TEST(SelectCli, CriticalKvRanksByTheInputsOutputProjection) {
    // Two layers, 4 query heads x D 4 = 16 columns of W_o, hidden size 6.
    const std::string in = write("critical_layer0.json", withOutputProjection(inputsDoc(0, 4, 2, 40, 8, 4), 6, 16).dump()) +
                           " " +
                           write("critical_layer1.json", withOutputProjection(inputsDoc(1, 4, 2, 40, 8, 4), 6, 16).dump());
    for (const char* method : {"criticalkv", "criticaladakv"}) {
        const Result paper = runCli("select --inputs " + in + " --method " + std::string(method) + " --budget 20 --json");
        ASSERT_EQ(paper.exitCode, 0) << paper.err;
        const Result kvpress = runCli("select --inputs " + in + " --method " + std::string(method) +
                                      " --compression-ratio 0.5 --convention kvpress --json");
        ASSERT_EQ(kvpress.exitCode, 0) << kvpress.err;
        const json k = json::parse(kvpress.out);
        EXPECT_EQ(k["params"]["convention"], "kvpress");
        int64_t total = 0;
        for (const auto& layer : k["layers"])
            for (const auto& head : layer["heads"]) total += int64_t(head.size());
        EXPECT_EQ(total, 2 * 2 * 20) << method;
    }
    // Without o_proj: one line that says what to give.
    expectOneLineError(runCli("select --inputs " + smallInputs("critical_none") + " --method criticalkv --budget 20"),
                       {"--method criticalkv needs each layer's output projection", "o_proj"});
    const std::string wrong =
        write("critical_wrong.json", withOutputProjection(inputsDoc(0, 4, 2, 40, 8, 4), 6, 15).dump());
    expectOneLineError(runCli("select --inputs " + wrong + " --method criticalkv --budget 20"),
                       {wrong, "field 'o_proj' has 15 columns, not the 16"});
    const std::string only0 = write("critical_only0.json", withOutputProjection(inputsDoc(0, 4, 2, 40, 8, 4), 6, 16).dump());
    const std::string plain1 = write("critical_plain1.json", inputsDoc(1, 4, 2, 40, 8, 4).dump());
    expectOneLineError(runCli("select --inputs " + only0 + " " + plain1 + " --method criticalkv --budget 20"),
                       {plain1, "field 'o_proj' is missing", "every layer or none"});
    json ragged = withOutputProjection(inputsDoc(0, 4, 2, 40, 8, 4), 6, 16);
    ragged["o_proj"][2].erase(0);
    const std::string raggedPath = write("critical_ragged.json", ragged.dump());
    expectOneLineError(runCli("select --inputs " + raggedPath + " --method criticalkv --budget 20"),
                       {raggedPath, "field 'o_proj' is not rectangular"});
}

TEST(SelectCli, BadInputFilesGiveOneLine) {
    expectOneLineError(runCli("select --inputs /nonexistent/in.json --method snapkv --budget 16"),
                       {"/nonexistent/in.json", "No such file"});
    const std::string text = write("select_not_json.json", "this is not JSON\n");
    expectOneLineError(runCli("select --inputs " + text + " --method snapkv --budget 16"),
                       {text, "not JSON"});
    json other = inputsDoc(0, 4, 2, 40, 8, 4);
    other["schema"] = "kvref-expected-v1";
    const std::string schema = write("select_schema.json", other.dump());
    expectOneLineError(runCli("select --inputs " + schema + " --method snapkv --budget 16"),
                       {schema, "schema", "kvref-expected-v1", "kvref-inputs-v1"});
    json missing = inputsDoc(0, 4, 2, 40, 8, 4);
    missing.erase("keys");
    const std::string noKeys = write("select_no_keys.json", missing.dump());
    expectOneLineError(runCli("select --inputs " + noKeys + " --method snapkv --budget 16"),
                       {noKeys, "missing field 'keys'"});
    const std::string first =
        write("select_shape_layer0.json", inputsDoc(0, 4, 2, 40, 8, 4).dump());
    const std::string second =
        write("select_shape_layer1.json", inputsDoc(1, 4, 2, 39, 8, 4).dump());
    expectOneLineError(
        runCli("select --inputs " + first + " " + second + " --method snapkv --budget 16"),
        {second, "'keys'", "[2, 39, 4]", "[2, 40, 4]"});
}

TEST(SelectCli, BadFlagsGiveOneLine) {
    const std::string in = smallInputs("flags");
    auto run = [&](const std::string& flags) {
        return runCli("select --inputs " + in + " " + flags);
    };
    expectOneLineError(run("--method snapkv --budget 16 --kernel 4"), {"--kernel 4"});
    expectOneLineError(run("--method snapkv --budget 8"), {"--budget 8", "--window 8"});
    expectOneLineError(run("--method snapkvv --budget 16"), {"--method 'snapkvv'"});
    expectOneLineError(run("--method adakv --budget 16 --alpha 1.5"), {"--alpha 1.5"});
    expectOneLineError(run("--method h2o --budget 16"), {"--method h2o"});
    expectOneLineError(run("--method finch --budget 16"),
                       {"Finch prefills the prompt itself: it needs a capture made by a model prefill"});
    expectOneLineError(run("--method snapkv --budget 16 --window 9"), {"--window 9"});
    expectOneLineError(run("--method snapkv --budget lots"), {"--budget 'lots'"});
}

}  // namespace
