// kvlens sweep: a sweep file's grid run whole and as shards gives the same runs once each
// (merged), a killed or re-run shard resumes; plan counts the grid; slurm writes scripts that
// name the shards; a bad sweep file, --shard or a missing sbatch is one line naming the field;
// sessions export --format jsonl|csv reads back into Python equal to the store.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "cli/CliHarness.h"
#include "sessions/SessionStore.h"

namespace {

using kvlens::test::expectOneLineError;
using kvlens::test::runKvlens;
using kvlens::test::slurp;
using kvlens::test::testOutputPath;

const std::string kStories = std::string(KVLENS_SHARED_DIR) + "/models/stories260K.gguf";

// Debian's Python (its python3-pandas and python3-matplotlib), where a user's python3 on PATH
// may be another.
std::string python() { return std::filesystem::exists("/usr/bin/python3") ? "/usr/bin/python3" : "python3"; }

std::string writeSweep(const std::string& name, const std::string& json) {
    const std::string path = testOutputPath(name);
    std::ofstream(path) << json;
    return path;
}

// A small grid: 1 length x 3 depths, full once and two methods at two budgets (5 runs each).
std::string smallSweep() {
    return R"({"session": "grid", "models": [")" + kStories + R"("],
  "tasks": [{"kind": "niah", "lengths": [200], "depths": [0, 50, 100], "new_tokens": 4}],
  "methods": ["full", {"method": "snapkv", "window": 8}, "streamingllm"],
  "budgets": [32, 48], "threads": 2})";
}

// Each needle run of a session's JSONL export without what differs between stores (ids, times).
std::multiset<std::string> niahRows(const std::string& store, const std::string& session) {
    const std::string file = store + ".jsonl";
    const auto r = runKvlens("sessions export " + session + " " + file + " --format jsonl --store " + store);
    EXPECT_EQ(r.exitCode, 0) << r.err;
    std::multiset<std::string> rows;
    std::istringstream in(slurp(file));
    for (std::string line; std::getline(in, line);) {
        nlohmann::json j = nlohmann::json::parse(line);
        for (const char* k : {"id", "created_ms", "model_id"}) j.erase(k);
        rows.insert(j.dump());
    }
    return rows;
}

TEST(SweepCli, ShardsMergeIntoExactlyTheUnshardedSweepAndResume) {
    const std::string file = writeSweep("sweep_grid.json", smallSweep());
    const std::string whole = testOutputPath("sweep_whole.db"), s1 = testOutputPath("sweep_s1.db"),
                      s2 = testOutputPath("sweep_s2.db"), merged = testOutputPath("sweep_merged.db");
    for (const std::string& f : {whole, s1, s2, merged}) std::remove(f.c_str());

    auto r = runKvlens("sweep plan " + file + " --shards 2 --no-calibrate");
    ASSERT_EQ(r.exitCode, 0) << r.err;
    EXPECT_NE(r.out.find("5 runs re-selected on each capture: full@- snapkv@32 snapkv@48 streamingllm@32 "
                         "streamingllm@48"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("3 captures (prefills), 15 runs in all; 2 shards of at most 2 captures"), std::string::npos)
        << r.out;

    r = runKvlens("sweep run " + file + " --store " + whole);
    ASSERT_EQ(r.exitCode, 0) << r.err;
    EXPECT_NE(r.err.find("sweep: 3 captures, 15 runs saved to session 'grid' of " + whole), std::string::npos) << r.err;
    r = runKvlens("sweep run " + file + " --store " + whole);  // again: nothing to do
    EXPECT_NE(r.err.find("sweep: 0 captures, 0 runs saved to session 'grid' of " + whole + ", 15 already saved"),
              std::string::npos) << r.err;

    r = runKvlens("sweep run " + file + " --store " + s1 + " --shard 1/2");
    ASSERT_EQ(r.exitCode, 0) << r.err;
    EXPECT_NE(r.err.find("sweep: 2 captures, 10 runs saved"), std::string::npos) << r.err;  // depths 0 and 100
    // Shard 2, then again: everything already saved.
    r = runKvlens("sweep run " + file + " --store " + s2 + " --shard 2/2");
    ASSERT_EQ(r.exitCode, 0) << r.err;
    r = runKvlens("sweep run " + file + " --store " + s2 + " --shard 2/2");
    EXPECT_NE(r.err.find("sweep: 0 captures, 0 runs saved to session 'grid' of " + s2 + ", 5 already saved"),
              std::string::npos) << r.err;
    r = runKvlens("sessions merge " + s1 + " " + s2 + " --into " + merged);
    ASSERT_EQ(r.exitCode, 0) << r.err;
    r = runKvlens("sessions merge " + s2 + " --into " + merged);  // a shard merged twice: still once
    ASSERT_EQ(r.exitCode, 0) << r.err;
    const auto sharded = niahRows(merged, "grid"), unsharded = niahRows(whole, "grid");
    EXPECT_EQ(sharded.size(), 15u);
    EXPECT_EQ(sharded, unsharded);  // the same runs, answers and metrics, once each
}

TEST(SweepCli, AKilledShardResumesFromItsFirstUnsavedRun) {
    // A store holding the first sample's runs of the grid only (a run killed after it): the
    // sweep runs the two other samples and nothing twice.
    const std::string file = writeSweep("sweep_kill.json", smallSweep());
    const std::string part = writeSweep("sweep_first.json", R"({"session": "grid", "models": [")" + kStories + R"("],
  "tasks": [{"kind": "niah", "lengths": [200], "depths": [0], "new_tokens": 4}],
  "methods": ["full", {"method": "snapkv", "window": 8}, "streamingllm"], "budgets": [32, 48], "threads": 2})");
    const std::string store = testOutputPath("sweep_killed.db"), whole = testOutputPath("sweep_whole2.db");
    for (const std::string& f : {store, whole}) std::remove(f.c_str());
    auto r = runKvlens("sweep run " + part + " --store " + store);
    ASSERT_EQ(r.exitCode, 0) << r.err;
    r = runKvlens("sweep run " + file + " --store " + store);
    ASSERT_EQ(r.exitCode, 0) << r.err;
    EXPECT_NE(r.err.find("sweep: 2 captures, 10 runs saved to session 'grid' of " + store + ", 5 already saved"),
              std::string::npos) << r.err;
    r = runKvlens("sweep run " + file + " --store " + whole);
    ASSERT_EQ(r.exitCode, 0) << r.err;
    EXPECT_EQ(niahRows(store, "grid"), niahRows(whole, "grid"));
}

TEST(SweepCli, EvalTasksShardAndMergeWithTheNeedlesIntoTheUnshardedSweep) {
    // A needle task, a generated eval task and a .jsonl of LongBench records, in one sweep.
    std::string story;
    for (int i = 0; i < 6; ++i) story += "Lily went to the park with her dog. They played with a red ball all day. ";
    const std::string data = testOutputPath("sweep_eval.jsonl");
    std::ofstream(data) << "{\"context\": \"" << story << "\", \"input\": \"Who went to the park?\", "
                           "\"answers\": [\"Lily\"], \"dataset\": \"hotpotqa\"}\n"
                        << "{\"context\": \"" << story << story << "\", \"input\": \"What was red?\", "
                           "\"answers\": [\"the ball\"], \"dataset\": \"narrativeqa\"}\n";
    const std::string file = writeSweep("sweep_eval.json", R"({"session": "mixed", "models": [")" + kStories + R"("],
  "tasks": [{"kind": "niah", "lengths": [200], "depths": [0, 100], "new_tokens": 4},
            {"kind": "eval", "task": "single", "length": 250, "samples": 2, "new_tokens": 4},
            {"kind": "eval", "data": ")" + data + R"(", "new_tokens": 4}],
  "methods": ["full", {"method": "snapkv", "window": 8}], "budgets": [48], "threads": 2})");
    auto r = runKvlens("sweep plan " + file + " --no-calibrate");
    ASSERT_EQ(r.exitCode, 0) << r.err;
    EXPECT_NE(r.out.find("tasks[1] eval single: 2 samples"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("tasks[2] eval sweep_eval.jsonl: 2 records"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("6 captures (prefills), 12 runs in all"), std::string::npos) << r.out;
    const std::string whole = testOutputPath("sweep_eval_whole.db"), s1 = testOutputPath("sweep_eval_1.db"),
                      s2 = testOutputPath("sweep_eval_2.db"), merged = testOutputPath("sweep_eval_merged.db");
    for (const std::string& f : {whole, s1, s2, merged}) std::remove(f.c_str());
    r = runKvlens("sweep run " + file + " --store " + whole);
    ASSERT_EQ(r.exitCode, 0) << r.err;
    EXPECT_NE(r.err.find("sweep: 6 captures, 12 runs saved to session 'mixed'"), std::string::npos) << r.err;
    for (const auto& [shard, store] : {std::make_pair("1/2", s1), std::make_pair("2/2", s2)}) {
        r = runKvlens("sweep run " + file + " --store " + store + " --shard " + shard);
        ASSERT_EQ(r.exitCode, 0) << r.err;
        EXPECT_NE(r.err.find("sweep: 3 captures, 6 runs saved"), std::string::npos) << r.err;
    }
    r = runKvlens("sweep run " + file + " --store " + s2 + " --shard 2/2");  // resumes: nothing left
    EXPECT_NE(r.err.find("sweep: 0 captures, 0 runs saved to session 'mixed' of " + s2 + ", 6 already saved"),
              std::string::npos) << r.err;
    r = runKvlens("sessions merge " + s1 + " " + s2 + " --into " + merged);
    ASSERT_EQ(r.exitCode, 0) << r.err;
    const auto sharded = niahRows(merged, "mixed"), unsharded = niahRows(whole, "mixed");
    EXPECT_EQ(sharded.size(), 12u);  // 4 needle runs and 8 eval runs
    EXPECT_EQ(sharded, unsharded);
    int evals = 0;
    for (const std::string& row : sharded) evals += row.find("\"kind\":\"eval\"") != std::string::npos;
    EXPECT_EQ(evals, 8);
    // An eval task's own fields.
    const std::string models = R"({"models": [")" + kStories + R"("], "methods": ["full"], )";
    for (const auto& [json, part] : std::vector<std::pair<std::string, std::string>>{
             {R"("tasks": [{"kind": "eval"}]})", "tasks[0]: give \"data\" (a .jsonl file) or \"task\""},
             {R"("tasks": [{"kind": "eval", "data": "/nonexistent.jsonl"}]})", "tasks[0].data: /nonexistent.jsonl: no such file"},
             {R"("tasks": [{"kind": "eval", "data": ")" + data + R"(", "length": 300}]})",
              "tasks[0].length: is for a generated \"task\", not \"data\""},
             {R"("tasks": [{"kind": "eval", "task": "single", "metric": "bleu"}]})", "tasks[0]: "},
             {R"("tasks": [{"kind": "eval", "task": "single"}, {"kind": "eval", "task": "single"}]})",
              "tasks[1]: is tasks[0] again"},
             {R"("tasks": [{"kind": "quiz"}]})", "tasks[0].kind: 'quiz' is not niah or eval"}}) {
        const std::string bad = writeSweep("sweep_bad_eval.json", models + json);
        expectOneLineError(runKvlens("sweep plan " + bad + " --no-calibrate"), {bad + ": " + part});
    }
}

TEST(SweepCli, BadSweepFilesAreOneLineErrorsNamingTheField) {
    const std::string models = R"("models": [")" + kStories + R"("], )";
    const std::string task = R"("tasks": [{"kind": "niah", "lengths": [200], "depths": [50]}], )";
    struct Case {
        std::string json;
        std::vector<std::string> parts;
    };
    const std::vector<Case> cases = {
        {"{\"models\": [", {"not JSON", "parse error"}},
        {"[1, 2]", {"expected an object"}},
        {"{" + models + task + R"("methods": ["snapkv"], "budgets": [32], "budget": 3})",
         {"budget: unknown key", "budgets"}},
        {"{" + task + R"("methods": ["snapkv"], "budgets": [32]})", {"models: missing"}},
        {R"({"models": ["/nonexistent/m.gguf"], )" + task + R"("methods": ["snapkv"], "budgets": [32]})",
         {"models[0]: /nonexistent/m.gguf: no such file or folder"}},
        {"{" + models + task + R"("methods": ["snapkv2"], "budgets": [32]})", {"methods[0]", "'snapkv2' is not one of"}},
        {"{" + models + task + R"("methods": [{"method": "snapkv", "windw": 8}], "budgets": [32]})",
         {"methods[0].windw: unknown key"}},
        {"{" + models + task + R"("methods": [{"method": "snapkv", "sinks": 4}], "budgets": [32]})",
         {"methods[0].sinks: snapkv does not read it"}},
        {"{" + models + task + R"("methods": [{"method": "snapkv", "window": 0}], "budgets": [32]})",
         {"methods[0].window: 0 is not in [1,"}},
        {"{" + models + task + R"("methods": [{"method": "snapkv", "window": "8"}], "budgets": [32]})",
         {"methods[0].window", "\"8\" is not an integer"}},
        {"{" + models + task + R"("methods": ["snapkv"], "budgets": [256]})",
         {"methods[0]: a budget of 256 entries is at or over tasks[0]'s length 200"}},
        {"{" + models + task + R"("methods": ["snapkv"], "budgets": [0]})", {"budgets[0]: 0 is not in [1,"}},
        {"{" + models + task + R"("methods": ["snapkv", {"method": "snapkv"}], "budgets": [32]})",
         {"methods[1]", "is also a run of methods[0] (a grid point given twice)"}},
        {"{" + models + task + R"("methods": ["snapkv"], "budgets": [32, 32]})",
         {"methods[0]", "a grid point given twice"}},
        {"{" + models + task + R"("methods": ["snapkv"]})", {"methods[0]: no budgets"}},
        {"{" + models + R"("tasks": [{"kind": "eval", "lengths": [200]}], "methods": ["full"]})",
         {"tasks[0].lengths: unknown key"}},
        {"{" + models + R"("tasks": [{"kind": "niah", "lengths": [200, 200]}], "methods": ["full"]})",
         {"tasks[0].lengths[1]: 200 is given twice"}},
        {"{" + models + R"("tasks": [{"kind": "niah", "lengths": [200], "depths": [50, 120]}], "methods": ["full"]})",
         {"tasks[0].depths[1]", "not a depth in percent"}},
        {"{" + models + R"("tasks": [{"kind": "niah", "lengths": [200], "depths": "0:100:0"}], "methods": ["full"]})",
         {"tasks[0].depths: step '0' is not positive"}},
        {"{" + models + R"("tasks": [{"kind": "niah", "lengths": [200], "samples": -1}], "methods": ["full"]})",
         {"tasks[0].samples: -1 is not in [1,"}},
        {"{" + models + R"("tasks": [{"kind": "niah", "lengths": ["2x"]}], "methods": ["full"]})",
         {"tasks[0].lengths[0]: '2x' is not a token count"}},
        {"{" + models + R"("tasks": [{"kind": "niah", "lengths": [200], "task": "needle"}], "methods": ["full"]})",
         {"tasks[0].task"}},
        {"{" + models + task + R"("methods": ["full"], "threads": 0})", {"threads: 0 is not in [1, 1024]"}},
        {"{" + models + task + R"("methods": ["full"], "new_tokens": 4, "new_tokens": 8})",
         {"the key 'new_tokens' is given twice in one object"}},
        {"{" + models + task + R"("methods": ["full", {"method": "full", "convention": "kvpress"}]})",
         {"methods[1].convention: full does not read it"}},
        {R"({"models": ["random:bogus"], )" + task + R"("methods": ["full"]})", {"models[0]", "unknown preset 'bogus'"}},
        {"{" + models + task + R"("methods": [{"method": "snapkv", "beta": 1e400}], "budgets": [32]})", {"not JSON"}},
        {"{" + models + task + R"("methods": ["full"], "dtype": "f8"})", {"dtype:", "'f8' is not one of"}},
        {"{" + models + task + R"("methods": ["full"], "device": "tpu"})", {"device:", "tpu"}},
    };
    for (size_t i = 0; i < cases.size(); ++i) {
        const std::string file = writeSweep("sweep_bad_" + std::to_string(i) + ".json", cases[i].json);
        SCOPED_TRACE(cases[i].json);
        const auto r = runKvlens("sweep plan " + file + " --no-calibrate");
        std::vector<std::string> parts = cases[i].parts;
        parts.insert(parts.begin(), file + ": ");
        for (const std::string& p : parts) {
            EXPECT_NE(r.err.find(p), std::string::npos) << "missing '" << p << "' in: " << r.err;
        }
        expectOneLineError(r, {file});
    }
    // The same model file under two names.
    {
        const std::string twice = writeSweep("sweep_bad_twice.json", R"({"models": [")" + kStories + R"(", ")" +
                                                                      std::string(KVLENS_SHARED_DIR) +
                                                                      R"(/models/../models/stories260K.gguf"], )" +
                                                                      task + R"("methods": ["full"]})");
        expectOneLineError(runKvlens("sweep plan " + twice + " --no-calibrate"), {twice + ": models[1]", "is models[0] again"});
    }
    // A budget the model's real prompt cannot hold: found after the model loads, before any
    // prefill, naming the model and the task (the prompt is shorter than the length asked).
    {
        const std::string fits = writeSweep("sweep_bad_prompt.json", "{" + models + R"("tasks": [{"kind": "niah", "lengths": [200], "depths": [50]}], "methods": ["snapkv"], "budgets": [199]})");
        expectOneLineError(runKvlens("sweep run " + fits + " --store " + testOutputPath("sweep_bad_prompt.db")),
                           {fits + ": models[0]", "tasks[0]: snapkv B=199", "holds the whole", "-token prompt of length 200"});
    }
    expectOneLineError(runKvlens("sweep plan " + testOutputPath("")), {"cannot read the sweep file (not a file)"});
    // A missing file, and the command's own flags.
    expectOneLineError(runKvlens("sweep plan /nonexistent/s.json"), {"/nonexistent/s.json: cannot read the sweep file"});
    const std::string good = writeSweep("sweep_good.json", smallSweep());
    expectOneLineError(runKvlens("sweep run " + good + " --shard 3/2"), {"--shard: '3/2' is not I/N with 1 <= I <= N"});
    expectOneLineError(runKvlens("sweep run " + good + " --shard 0/2"), {"--shard: '0/2'"});
    expectOneLineError(runKvlens("sweep plan " + good + " --shards 0"), {"--shards"});
    expectOneLineError(runKvlens("sweep walk " + good), {"unknown command 'walk'", "plan, run, slurm"});
    expectOneLineError(runKvlens("sweep run --store x.db"), {"expected the sweep FILE first"});
    expectOneLineError(runKvlens("sweep slurm " + good + " --out " + testOutputPath("sweep_slurm_x")),
                       {"--shards N is required"});
    expectOneLineError(runKvlens("sweep slurm " + good + " --shards 2 --out " + testOutputPath("sweep_slurm_x") +
                                 " --partition 'a b'"),
                       {"--partition: 'a b' is not a plain word"});
}

TEST(SweepCli, SlurmWritesTheArrayAndTheMergeAndSaysWhenSbatchIsMissing) {
    const std::string file = writeSweep("sweep_slurm.json", smallSweep());
    const std::string out = testOutputPath("sweep_slurm_out");
    std::filesystem::remove_all(out);
    auto r = runKvlens("sweep slurm " + file + " --shards 3 --out " + out + " --partition debug --time 0:10:00 --cpus 2");
    ASSERT_EQ(r.exitCode, 0) << r.err;
    const std::string shard = slurp(out + "/shard.sbatch"), merge = slurp(out + "/merge.sbatch"),
                      submit = slurp(out + "/submit");
    EXPECT_NE(shard.find("#SBATCH --cpus-per-task=2\n"), std::string::npos) << shard;
    EXPECT_NE(shard.find("#SBATCH --partition=debug\n"), std::string::npos) << shard;
    EXPECT_NE(shard.find("#SBATCH --time=0:10:00\n"), std::string::npos) << shard;
    EXPECT_NE(shard.find("/shard-$i.db --shard $i/3 --threads \"${SLURM_CPUS_PER_TASK:-2}\""), std::string::npos)
        << shard;
    EXPECT_NE(merge.find("sessions merge"), std::string::npos) << merge;
    EXPECT_NE(merge.find("report --session 'grid' --store merged.db --out report"), std::string::npos) << merge;
    EXPECT_NE(submit.find("sbatch --parsable --array=\"$list\" shard.sbatch"), std::string::npos) << submit;
    EXPECT_NE(submit.find("--dependency=afterany:$job"), std::string::npos) << submit;
    EXPECT_EQ(r.out.find("submit them with: " + out + "/submit"), r.out.find("submit them")) << r.out;
    // --submit without sbatch on PATH: one line, and the scripts stay for another machine.
    const std::string bin = testOutputPath("sweep_no_slurm_bin");  // a PATH with `timeout` alone
    std::filesystem::remove_all(bin);
    std::filesystem::create_directories(bin);
    std::filesystem::create_symlink("/usr/bin/timeout", bin + "/timeout");
    r = runKvlens("sweep slurm " + file + " --shards 3 --out " + out + " --submit", "PATH=" + bin);
    expectOneLineError(r, {"sbatch is not on PATH", out + "/submit"});
    EXPECT_TRUE(std::filesystem::exists(out + "/shard.sbatch"));
    // The same folder for another shard count (or another file) is another sweep: refused, so
    // no shard of one is taken for complete in the other.
    expectOneLineError(runKvlens("sweep slurm " + file + " --shards 4 --out " + out),
                       {"--out " + out + " holds the shards of another sweep"});
    r = runKvlens("sweep slurm " + file + " --shards 3 --out " + out);  // the same sweep again: fine
    EXPECT_EQ(r.exitCode, 0) << r.err;
    // Paths the scripts cannot carry unquoted, and Slurm's array limit.
    expectOneLineError(runKvlens("sweep slurm " + file + " --shards 3 --out '" + out + " 2'"),
                       {"--out '" + out + " 2' has a character the scripts cannot carry"});
    expectOneLineError(runKvlens("sweep slurm " + file + " --shards 1001 --out " + out), {"--shards"});
}

TEST(SweepCli, ExportsReadBackIntoPythonEqualToTheStore) {
    // Needle runs from a sweep and compare runs with their kept positions, in one session.
    const std::string file = writeSweep("sweep_export.json", smallSweep());
    const std::string store = testOutputPath("sweep_export.db");
    std::remove(store.c_str());
    auto r = runKvlens("sweep run " + file + " --store " + store);
    ASSERT_EQ(r.exitCode, 0) << r.err;
    r = runKvlens("compare --model " + kStories +
                  " --prompt 'Once upon a time there was a little girl named Lily. She liked to play outside.'"
                  " --methods snapkv,pyramidkv --budgets 8,12 -n 4 --save --session grid --store " + store);
    ASSERT_EQ(r.exitCode, 0) << r.err;
    const std::string jsonl = testOutputPath("sweep_export.jsonl"), csv = testOutputPath("sweep_export.csv"),
                      kept = testOutputPath("sweep_export_kept.jsonl");
    for (const auto& [format, path, extra] : {std::make_tuple("jsonl", jsonl, ""), std::make_tuple("csv", csv, ""),
                                              std::make_tuple("jsonl", kept, " --kept")}) {
        r = runKvlens(std::string("sessions export grid ") + path + " --format " + format + extra + " --store " + store);
        ASSERT_EQ(r.exitCode, 0) << r.err;
        EXPECT_NE(r.out.find("exported 19 rows of session 'grid' to " + path), std::string::npos) << r.out;
    }
    const std::string check = std::string(KVLENS_SOURCE_DIR) + "/tests/tools/export_check.py";
    const std::string out = testOutputPath("sweep_export_check.txt");
    const int status = std::system((python() + " " + check + " " + store + " grid " + jsonl + " " + csv + " " + kept +
                                    " >" + out + " 2>&1").c_str());
    EXPECT_EQ(status, 0) << slurp(out);
    EXPECT_NE(slurp(out).find("export_check: 15 niah runs and 4 runs agree with the store, kept positions of 4 runs"),
              std::string::npos) << slurp(out);
    // The bad flags of export.
    expectOneLineError(runKvlens("sessions export grid x.csv --format xml --store " + store),
                       {"--format: 'xml' is not jsonl or csv"});
    expectOneLineError(runKvlens("sessions export grid x.db --kept --store " + store),
                       {"--kept goes with --format jsonl|csv"});
    expectOneLineError(runKvlens("sessions export nosuch x.csv --format csv --store " + store), {"nosuch"});
    // The README's Python example, where pandas and matplotlib are installed.
    if (std::system((python() + " -c 'import pandas, matplotlib' >/dev/null 2>&1").c_str()) != 0) {
        GTEST_SKIP() << "pandas or matplotlib is not installed (scripts/setup installs python3-pandas, "
                        "python3-matplotlib): the plotting example was not run";
    }
    const std::string png = testOutputPath("sweep_accuracy.png");
    std::remove(png.c_str());
    const int plotted = std::system((python() + " " + std::string(KVLENS_SOURCE_DIR) + "/docs/examples/plot_sweep.py " +
                                     jsonl + " " + png + " >" + out + " 2>&1").c_str());
    EXPECT_EQ(plotted, 0) << slurp(out);
    EXPECT_NE(slurp(out).find("streamingllm"), std::string::npos) << slurp(out);
    EXPECT_GT(std::filesystem::file_size(png), 1000u);
}

}  // namespace

namespace {

TEST(SweepCli, KeptOutHoldsEachRunsSelectionAsTheStoreHasIt) {
    const std::string store = testOutputPath("kept_out.db"), kept = testOutputPath("kept_out.json"),
                      one = testOutputPath("kept_out_run.json");
    for (const std::string& f : {store, kept, one}) std::remove(f.c_str());
    const std::string prompt =
        " --prompt 'Once upon a time there was a little girl named Lily. She liked to play outside.'";
    auto r = runKvlens("compare --model " + kStories + prompt + " --methods snapkv,pyramidkv --budgets 8,12 -n 4"
                       " --save --session k --store " + store + " --kept-out " + kept);
    ASSERT_EQ(r.exitCode, 0) << r.err;
    const nlohmann::json j = nlohmann::json::parse(slurp(kept));
    kvlens::sessions::SessionStore s(store, kvlens::sessions::SessionStore::Access::ReadOnly);
    const auto runs = s.runs(s.session("k").id);
    ASSERT_EQ(runs.size(), 4u);
    ASSERT_EQ(j["runs"].size(), 4u);
    EXPECT_EQ(j["model"], kStories);
    EXPECT_EQ(j["prompt_ids"].get<std::vector<int32_t>>(), s.prompt(runs[0].promptId).tokenIds);
    for (size_t i = 0; i < runs.size(); ++i) {
        const kvlens::sessions::RunRecord run = s.run(runs[i].id);
        EXPECT_EQ(j["runs"][i]["params"], run.params.describe());
        EXPECT_EQ(j["runs"][i]["kept"].get<std::vector<std::vector<std::vector<int32_t>>>>(), run.selection.kept);
        EXPECT_EQ(j["runs"][i]["layer_budgets"].get<std::vector<int64_t>>(), run.selection.layerBudgets);
        EXPECT_EQ(j["runs"][i]["heads_are"], "kv");
    }
    // run writes the same form with its one run; a file that cannot be written fails first.
    r = runKvlens("run --model " + kStories + prompt + " --method snapkv --budget 8 --window 4 -n 2 --kept-out " + one);
    ASSERT_EQ(r.exitCode, 0) << r.err;
    const nlohmann::json k = nlohmann::json::parse(slurp(one));
    ASSERT_EQ(k["runs"].size(), 1u);
    EXPECT_EQ(k["runs"][0]["kept"], j["runs"][0]["kept"]);  // snapkv at 8, as in compare
    expectOneLineError(runKvlens("run --model " + kStories + prompt + " --method snapkv --budget 8 --kept-out "
                                 "/nonexistent/dir/k.json"),
                       {"--kept-out /nonexistent/dir/k.json: cannot write"});
}

}  // namespace
