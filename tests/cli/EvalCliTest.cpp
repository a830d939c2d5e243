// kvlens eval: LongBench-format records scored per method and budget with their
// dataset's metric, a generated task, and one-line errors for bad records and flags.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "cli/CliHarness.h"

namespace {

using kvlens::test::expectOneLineError;
using kvlens::test::runKvlens;
using kvlens::test::testOutputPath;

const std::string kStories = std::string(KVLENS_SHARED_DIR) + "/models/stories260K.gguf";

std::string writeFile(const std::string& name, const std::string& text) {
    const std::string path = testOutputPath(name);
    std::ofstream(path, std::ios::binary | std::ios::trunc) << text;
    return path;
}

std::string story(int sentences) {
    std::string s;
    for (int i = 0; i < sentences; ++i) s += "Lily went to the park with her mom and saw a big dog. ";
    return s;
}

TEST(EvalCli, RecordsAreScoredWithTheirDatasetsMetricPerRun) {
    if (!std::ifstream(kStories).good()) GTEST_SKIP() << "needs " << kStories;
    const std::string data = writeFile(
        "eval.jsonl", "{\"context\": \"" + story(8) + "\", \"input\": \"Who went to the park?\", \"answers\": [\"Lily\"], "
                      "\"dataset\": \"hotpotqa\"}\n\n"
                      "{\"context\": \"" + story(4) + "\", \"question\": \"What did she see?\", \"answers\": \"Entity\", "
                      "\"dataset\": \"trec\", \"all_classes\": [\"Entity\", \"Location\"]}\n");
    const auto r = runKvlens("eval --model " + kStories + " --data " + data +
                             " --methods full,snapkv --budgets 32 -n 4 --csv");
    ASSERT_EQ(r.exitCode, 0) << r.err;
    std::istringstream in(r.out);
    std::string line;
    std::getline(in, line);
    EXPECT_EQ(line, "record,dataset,metric,tokens,method,budget,params,score,agreement,mean_kl,answer");
    std::vector<std::string> rows;
    while (std::getline(in, line)) rows.push_back(line);
    ASSERT_EQ(rows.size(), 4u) << r.out;
    EXPECT_EQ(rows[0].rfind("\"" + data + ":1\",\"hotpotqa\",f1,", 0), 0u) << rows[0];
    EXPECT_EQ(rows[2].rfind("\"" + data + ":3\",\"trec\",classification,", 0), 0u) << rows[2];
    EXPECT_NE(rows[0].find(",full,-,"), std::string::npos);
    EXPECT_NE(rows[0].find(",1.000000,"), std::string::npos) << rows[0];  // full agrees with itself
    EXPECT_NE(r.err.find("eval: 2 captures in"), std::string::npos) << r.err;
    // Query-agnostic, and a generated task.
    EXPECT_EQ(runKvlens("eval --model " + kStories + " --data " + data + " --methods snapkv --budgets 32 -n 2 "
                        "--question-after").exitCode, 0);
    const auto t = runKvlens("eval --model " + kStories + " --task single --length 300 --samples 2 --methods full -n 2");
    ASSERT_EQ(t.exitCode, 0) << t.err;
    EXPECT_NE(t.out.find("2 records, 1 runs each"), std::string::npos) << t.out;
    EXPECT_NE(t.out.find("single"), std::string::npos);
}

TEST(EvalCli, BadRecordsAndFlagsAreOneLine) {
    if (!std::ifstream(kStories).good()) GTEST_SKIP() << "needs " << kStories;
    const std::string base = "eval --model " + kStories + " --methods full -n 4 ";
    expectOneLineError(runKvlens(base), {"kvlens eval: give --data FILE.jsonl or --task NAME"});
    const std::string bad = writeFile("bad.jsonl", "{\"context\": \"a\", \"input\": \"b\", \"answers\": [\"c\"]}\n{oops\n");
    expectOneLineError(runKvlens(base + "--data " + bad), {bad + ":2: not JSON"});
    const std::string noAnswers = writeFile("noanswers.jsonl", "{\"context\": \"a\", \"input\": \"b\"}\n");
    expectOneLineError(runKvlens(base + "--data " + noAnswers), {noAnswers + ":1: answers: missing"});
    // Wrong types are named, never ignored; an overflowing number is the file's line, not nlohmann's message.
    const std::string dataset7 = writeFile("dataset7.jsonl", "{\"context\": \"a\", \"input\": \"b\", "
                                                             "\"answers\": [\"c\"], \"dataset\": 7}\n");
    expectOneLineError(runKvlens(base + "--data " + dataset7),
                       {dataset7 + ":1: dataset: expected a string (the task's name), got number"});
    const std::string huge = writeFile("huge.jsonl", "{\"context\": \"a\", \"input\": \"b\", \"answers\": [\"c\"], "
                                                     "\"length\": 1e400}\n");
    expectOneLineError(runKvlens(base + "--data " + huge), {huge + ":1: not JSON: a number too large for a double"});
    const std::string folder = testOutputPath("records_folder");
    std::filesystem::create_directories(folder);
    expectOneLineError(runKvlens(base + "--data " + folder), {folder + ": a folder, not a .jsonl file of records"});
    const std::string longOne = writeFile(
        "long.jsonl", "{\"context\": \"a\", \"input\": \"b\", \"answers\": [\"c\"]}\n{\"context\": \"" + story(200) +
                          "\", \"input\": \"Who?\", \"answers\": [\"Lily\"]}\n");
    expectOneLineError(runKvlens(base + "--data " + longOne),
                       {longOne + ":2: ", " tokens and -n 4 are over the model's context of 2048 (--truncate cuts the middle)"});
    const auto cut = runKvlens(base + "--data " + longOne + " --truncate --csv");
    ASSERT_EQ(cut.exitCode, 0) << cut.err;
    EXPECT_NE(cut.out.find(",2044,full,"), std::string::npos) << cut.out;  // 2048 less -n
    const std::string tmpl = writeFile("tmpl.txt", "no placeholders here");
    const std::string good = writeFile("good.jsonl", "{\"context\": \"a\", \"input\": \"b\", \"answers\": [\"c\"]}\n");
    expectOneLineError(runKvlens(base + "--data " + good + " --template " + tmpl),
                       {"--template: needs {context} and then {input}"});
    expectOneLineError(runKvlens(base + "--data " + good + " --metric bleu"), {"unknown metric 'bleu'"});
    // A window the record's prompt cannot hold is one line (checked before its prefill).
    expectOneLineError(runKvlens("eval --model " + kStories +
                                 " --methods snapkv --budgets 16 --window 32 -n 4 --data " + good),
                       {"--window 32 must be below the prompt length 19"});
    const std::string cls = writeFile("cls.jsonl", "{\"context\": \"a\", \"input\": \"b\", \"answers\": [\"c\"], "
                                                   "\"dataset\": \"trec\"}\n");
    expectOneLineError(runKvlens(base + "--data " + cls),
                       {cls + ":1: the classification metric needs the record's all_classes"});
    expectOneLineError(runKvlens(base + "--task single --length 2x"), {"--length: '2x' is not a token count"});
}

}  // namespace

namespace {

// Each eval run of a session's JSONL export, without what differs between stores.
std::multiset<std::string> evalRows(const std::string& store) {
    const std::string file = store + ".jsonl";
    const auto r = runKvlens("sessions export eval " + file + " --format jsonl --store " + store);
    EXPECT_EQ(r.exitCode, 0) << r.err;
    std::multiset<std::string> rows;
    std::ifstream in(file);
    for (std::string line; std::getline(in, line);) {
        nlohmann::json j = nlohmann::json::parse(line);
        EXPECT_EQ(j["kind"], "eval");
        for (const char* k : {"id", "created_ms", "model_id"}) j.erase(k);
        rows.insert(j.dump());
    }
    return rows;
}

TEST(EvalCli, SavedEvalsResumeAndShardsMergeIntoTheWholeEval) {
    const std::string base = "eval --model " + kStories +
                             " --task single --length 300 --samples 3 --methods full,snapkv --budgets 48 -n 4 --save ";
    const std::string whole = testOutputPath("eval_whole.db"), a = testOutputPath("eval_a.db"),
                      b = testOutputPath("eval_b.db"), merged = testOutputPath("eval_merged.db");
    for (const std::string& f : {whole, a, b, merged}) std::remove(f.c_str());
    auto r = runKvlens(base + "--store " + whole);
    ASSERT_EQ(r.exitCode, 0) << r.err;
    EXPECT_NE(r.err.find("eval: saved 6 runs to session 'eval' of " + whole), std::string::npos) << r.err;
    r = runKvlens(base + "--store " + whole);  // again: every run skipped, with its prefill
    EXPECT_NE(r.err.find("eval: saved 0 runs to session 'eval' of " + whole + ", skipped 6 already saved"),
              std::string::npos) << r.err;
    EXPECT_NE(r.err.find("eval: 0 captures"), std::string::npos) << r.err;
    for (const auto& [shard, store] : {std::make_pair("1/2", a), std::make_pair("2/2", b)}) {
        r = runKvlens(base + "--shard " + shard + " --store " + store);
        ASSERT_EQ(r.exitCode, 0) << r.err;
    }
    EXPECT_EQ(evalRows(a).size(), 4u);  // records #0 and #2
    EXPECT_EQ(evalRows(b).size(), 2u);  // record #1
    r = runKvlens("sessions merge " + a + " " + b + " --into " + merged);
    ASSERT_EQ(r.exitCode, 0) << r.err;
    EXPECT_NE(r.out.find("; 6 eval runs"), std::string::npos) << r.out;
    EXPECT_EQ(evalRows(merged), evalRows(whole));
    r = runKvlens("sessions show eval --store " + merged);
    EXPECT_NE(r.out.find("6 eval runs"), std::string::npos) << r.out;
    // The flags of saving and sharding.
    expectOneLineError(runKvlens("eval --model " + kStories + " --task single --session x"),
                       {"--session goes with --save"});
    expectOneLineError(runKvlens("eval --model " + kStories + " --task single --shard 3/2"),
                       {"--shard: '3/2' is not I/N with 1 <= I <= N"});
}

}  // namespace
