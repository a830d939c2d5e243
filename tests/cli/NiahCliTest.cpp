// kvlens niah: a sweep on stories260K (a real SentencePiece vocabulary) gives one CSV
// row per (depth, run) with the needle's scores, and bad flags fail in one line.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "sessions/SessionStore.h"

#include "cli/CliHarness.h"

namespace {

using kvlens::test::expectOneLineError;
using kvlens::test::runKvlens;
using kvlens::test::testOutputPath;

const std::string kStories = std::string(KVLENS_SHARED_DIR) + "/models/stories260K.gguf";

std::vector<std::string> fields(const std::string& line) {  // CSV, quotes honoured
    std::vector<std::string> out(1);
    bool quoted = false;
    for (size_t i = 0; i < line.size(); ++i) {
        const char c = line[i];
        if (c == '"') {
            if (quoted && i + 1 < line.size() && line[i + 1] == '"') {
                out.back() += '"';
                ++i;
            } else {
                quoted = !quoted;
            }
        } else if (c == ',' && !quoted) {
            out.emplace_back();
        } else {
            out.back() += c;
        }
    }
    return out;
}

TEST(NiahCli, EachDepthAndRunIsARowWithTheNeedlesScores) {
    const auto r = runKvlens("niah --model " + kStories +
                             " --lengths 300 --depths 0:100:100 --methods full,snapkv,streamingllm --budgets 48 -n 4 --csv");
    ASSERT_EQ(r.exitCode, 0) << r.err;
    std::istringstream in(r.out);
    std::string line;
    std::getline(in, line);
    EXPECT_EQ(line, "length,tokens,depth,sample,method,budget,params,contains,exact,needle_kept,agreement,mean_kl,answer");
    int rows = 0;
    for (; std::getline(in, line); ++rows) {
        const auto f = fields(line);
        ASSERT_EQ(f.size(), 13u) << line;
        EXPECT_EQ(f[0], "300");
        EXPECT_LE(std::stoi(f[1]), 300);
        EXPECT_GT(std::stoi(f[1]), 200);  // stories260K: a filler sentence is up to ~60 tokens
        EXPECT_EQ(f[2], rows < 3 ? "0" : "100");
        const double kept = std::stod(f[9]), contains = std::stod(f[7]);
        EXPECT_GE(kept, 0.0);
        EXPECT_LE(kept, 1.0);
        EXPECT_TRUE(contains == 0.0 || contains == 1.0) << line;  // one value asked
        if (f[4] == "full") {
            EXPECT_EQ(kept, 1.0);
            EXPECT_EQ(std::stod(f[10]), 1.0);  // the full cache agrees with itself
        }
        // StreamingLLM keeps the sinks and the recent end: a needle at depth 0 sits in
        // the first sentence, past 4 sinks, so only part of it can be kept.
        if (f[4] == "streamingllm" && f[2] == "0") {
            EXPECT_LT(kept, 1.0);
        }
    }
    EXPECT_EQ(rows, 6);
    EXPECT_NE(r.err.find("niah: 2 captures (prefills) in"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("6 runs re-selected"), std::string::npos) << r.err;
}

TEST(NiahCli, BadFlagsAreOneLineErrors) {
    const std::string base = "niah --model " + kStories + " --methods full -n 2 ";
    expectOneLineError(runKvlens(base + "--lengths 300 --depths 0:120:10"), {"--depths: 120 is outside 0-100"});
    expectOneLineError(runKvlens(base + "--lengths 300 --depths 50,-5"), {"--depths: -5 is outside 0-100"});
    expectOneLineError(runKvlens(base + "--lengths 300 --depths 0:100:0"), {"--depths: step '0' is not positive"});
    // A range that yields nothing is an error (it ran nothing and exited 0), a huge one is
    // counted before it is made, and a sweep of over 10000 prefills asks for --yes.
    expectOneLineError(runKvlens(base + "--lengths 300 --depths 50:10:5"),
                       {"--depths: '50:10:5' yields no depth (first:last:step counts up from first to last)"});
    expectOneLineError(runKvlens(base + "--lengths 300 --depths 0:100:1e-9"),
                       {"--depths: '0:100:1e-9' yields 100000000001 depths, over 100000"});
    expectOneLineError(runKvlens(base + "--lengths 300 --depths 0:100:0.005"),
                       {"niah: 1 lengths x 20001 depths x 1 samples is 20001 captures (prefills) of 1 runs each, "
                        "over 10000: add --yes to run them"});
    expectOneLineError(runKvlens(base + "--lengths 300,400 --depths 0:100:0.01 --samples 2 --shard 1/4"),
                       {"niah: 2 lengths x 10001 depths x 2 samples / 4 shards is 10001 captures"});
    expectOneLineError(runKvlens(base + "--lengths 4k --depths 50"),
                       {"--lengths: 4096 tokens and -n 2 are over the model's context of 2048"});
    expectOneLineError(runKvlens(base + "--lengths 2x --depths 50"), {"--lengths: '2x' is not a token count"});
    expectOneLineError(runKvlens(base + "--lengths 20 --depths 50"),
                       {"needle task: 20 tokens cannot hold the needles and the question"});
    expectOneLineError(runKvlens(base + "--lengths 300 --task haystack"), {"unknown needle task 'haystack'"});
    expectOneLineError(runKvlens(base + "--lengths 300 --filler /nonexistent/filler.txt"),
                       {"--filler /nonexistent/filler.txt: cannot read"});
    expectOneLineError(runKvlens(base + "--lengths 300 --method snapkv"), {"niah takes --methods and --budgets"});
    // A budget at the window is one line (each prompt's runs are checked before its prefill).
    expectOneLineError(
        runKvlens("niah --model " + kStories +
                  " --methods full,snapkv --budgets 16 --window 32 -n 2 --lengths 300"),
        {"--budget 16 must exceed --window 32"});
    for (const char* shard : {"0/2", "3/2", "1", "a/b", "1/0"})
        expectOneLineError(runKvlens(base + "--lengths 300 --shard " + shard),
                           {std::string("--shard: '") + shard + "' is not I/N with 1 <= I <= N"});
    expectOneLineError(runKvlens(base + "--lengths 300 --session x"), {"--session goes with --save"});
    expectOneLineError(runKvlens(base + "--lengths 300 --save-prompts /proc/none/x"), {"--save-prompts: cannot create"});
}

// The keys of a session's niah runs, without the model's id (which differs by store).
std::multiset<std::string> niahKeys(const std::string& store, const std::string& session) {
    kvlens::sessions::SessionStore s(store, kvlens::sessions::SessionStore::Access::ReadOnly);
    std::multiset<std::string> keys;
    for (const auto& r : s.niahRuns(s.session(session).id)) keys.insert(r.key().substr(r.key().find('|')));
    return keys;
}

// The full cache's run is one run per sample whatever the sweep's budgets and their
// order: before, it took the first of --budgets into its key, so --budgets 32,48 after
// 48,32 ran and stored a second full run per sample.
TEST(NiahCli, AFullRunIsOneRunWhateverTheBudgetsAndTheirOrder) {
    const std::string store = testOutputPath("niah_full_once.db");
    std::remove(store.c_str());
    const std::string base = "niah --model " + kStories + " --lengths 300 --depths 50 --methods full,snapkv -n 4 ";
    auto r = runKvlens(base + "--budgets 48,32 --save --session f --store " + store);
    ASSERT_EQ(r.exitCode, 0) << r.err;
    EXPECT_NE(r.err.find("niah: saved 3 runs to session 'f'"), std::string::npos) << r.err;
    r = runKvlens(base + "--budgets 32,48 --save --session f --store " + store);
    ASSERT_EQ(r.exitCode, 0) << r.err;
    EXPECT_NE(r.err.find("saved 0 runs to session 'f' of " + store + ", skipped 3 already saved"), std::string::npos)
        << r.err;
    r = runKvlens(base + "--budgets 40 --save --session f --store " + store);
    ASSERT_EQ(r.exitCode, 0) << r.err;
    EXPECT_NE(r.err.find("saved 1 runs to session 'f' of " + store + ", skipped 1 already saved"), std::string::npos)
        << r.err;
    kvlens::sessions::SessionStore s(store, kvlens::sessions::SessionStore::Access::ReadOnly);
    int fullRuns = 0;
    for (const auto& run : s.niahRuns(s.session("f").id)) {
        if (run.method != "full") continue;
        ++fullRuns;
        EXPECT_EQ(run.budget, "-");  // the full cache has no budget to show
        EXPECT_EQ(run.params, "full B=100%");
    }
    EXPECT_EQ(fullRuns, 1);
}

TEST(NiahCli, SavedSweepsResumeAndShardsMergeIntoTheWholeSweep) {
    const std::string base = "niah --model " + kStories + " --lengths 300 --methods full,snapkv --budgets 48 -n 4 ";
    const std::string whole = testOutputPath("niah_whole.db"), a = testOutputPath("niah_a.db"),
                      b = testOutputPath("niah_b.db"), merged = testOutputPath("niah_merged.db");
    for (const std::string& f : {whole, a, b, merged}) std::remove(f.c_str());
    auto r = runKvlens(base + "--depths 0:100:50 --save --session sw --store " + whole);
    ASSERT_EQ(r.exitCode, 0) << r.err;
    EXPECT_NE(r.err.find("niah: saved 6 runs to session 'sw' of " + whole), std::string::npos) << r.err;
    // Run again over more depths: the saved runs are skipped, with their prefills.
    r = runKvlens(base + "--depths 0:100:25 --save --session sw --store " + whole);
    ASSERT_EQ(r.exitCode, 0) << r.err;
    EXPECT_NE(r.err.find("saved 4 runs to session 'sw' of " + whole + ", skipped 6 already saved"),
              std::string::npos) << r.err;
    EXPECT_NE(r.err.find("niah: 2 captures (prefills)"), std::string::npos) << r.err;
    EXPECT_EQ(niahKeys(whole, "sw").size(), 10u);
    // Another filler is another sample: nothing skipped, its task names the filler.
    const std::string filler = testOutputPath("niah_filler.txt");
    { std::ofstream(filler) << "The cat sat on the mat. The dog lay by the door. Birds sang in the tree.\n"; }
    r = runKvlens(base + "--depths 0 --filler " + filler + " --save --session sw --store " + whole);
    ASSERT_EQ(r.exitCode, 0) << r.err;
    EXPECT_NE(r.err.find("saved 2 runs to session 'sw' of " + whole + "\n"), std::string::npos) << r.err;
    {
        kvlens::sessions::SessionStore s(whole, kvlens::sessions::SessionStore::Access::ReadOnly);
        // The filler's FNV-1a hash is in the task's name.
        std::ifstream in(filler);
        const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
        uint64_t h = 0xcbf29ce484222325ull;  // FNV-1a 64: offset basis, then xor and multiply
        for (unsigned char c : text) h = (h ^ c) * 0x100000001b3ull;
        char hex[17];
        std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(h));
        EXPECT_EQ(s.niahRuns(s.session("sw").id).back().task, std::string("single+filler:") + hex);
    }
    // The session listing counts them.
    r = runKvlens("sessions list --store " + whole);
    EXPECT_NE(r.out.find("niah"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("sw                           0       0     12"), std::string::npos) << r.out;
    r = runKvlens(base + "--depths 0 --filler " + filler + " --save --session sw --store " + whole);
    EXPECT_NE(r.err.find("saved 0 runs to session 'sw' of " + whole + ", skipped 2 already saved"), std::string::npos)
        << r.err;
    // Two shards, each to its own store, merged: the same runs as the whole sweep, once each.
    for (const auto& [shard, store] : {std::make_pair("1/2", a), std::make_pair("2/2", b)}) {
        r = runKvlens(base + "--depths 0:100:25 --shard " + shard + " --save --session sw --store " + store);
        ASSERT_EQ(r.exitCode, 0) << r.err;
    }
    EXPECT_EQ(niahKeys(a, "sw").size(), 6u);  // depths 0, 50, 100
    EXPECT_EQ(niahKeys(b, "sw").size(), 4u);  // depths 25, 75
    r = runKvlens("sessions merge " + a + " " + b + " --into " + merged);
    ASSERT_EQ(r.exitCode, 0) << r.err;
    EXPECT_NE(r.out.find("merged 2 stores into " + merged + ": 0 runs and 10 niah runs in 1 sessions"),
              std::string::npos) << r.out;
    std::multiset<std::string> plain;  // the whole sweep without the filler's runs
    for (const std::string& k : niahKeys(whole, "sw"))
        if (k.find("+filler:") == std::string::npos) plain.insert(k);
    EXPECT_EQ(niahKeys(merged, "sw"), plain);
    r = runKvlens("sessions merge " + a + " --into " + merged);  // again: nothing twice
    EXPECT_NE(r.out.find("0 niah runs in 0 sessions (6 niah runs already there)"), std::string::npos) << r.out;
    EXPECT_EQ(niahKeys(merged, "sw").size(), 10u);
    // Show, export and import count and show the needle runs (they said "no runs" and "(0 runs)").
    r = runKvlens("sessions show sw --store " + merged);
    ASSERT_EQ(r.exitCode, 0) << r.err;
    EXPECT_NE(r.out.find("10 niah runs (kvlens report --session sw draws them)"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("single inside                full                  -     5"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("single inside                snapkv               48     5"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("no other runs"), std::string::npos) << r.out;
    r = runKvlens("sessions show sw --json --store " + merged);
    ASSERT_EQ(r.exitCode, 0) << r.err;
    const nlohmann::json shown = nlohmann::json::parse(r.out);
    ASSERT_EQ(shown["niah_runs"].size(), 10u);
    EXPECT_EQ(shown["niah_runs"][0]["task"], "single");
    const std::string exported = testOutputPath("niah_export.kvlens"), imported = testOutputPath("niah_imported.db");
    for (const std::string& f : {exported, imported}) std::remove(f.c_str());
    r = runKvlens("sessions export sw " + exported + " --store " + merged);
    EXPECT_EQ(r.out, "exported session 'sw' (0 runs, 10 niah runs) to " + exported + "\n") << r.err;
    r = runKvlens("sessions import " + exported + " --store " + imported);
    EXPECT_EQ(r.out, "imported session 'sw' (0 runs, 10 niah runs) into " + imported + "\n") << r.err;
    EXPECT_EQ(niahKeys(imported, "sw"), niahKeys(merged, "sw"));
    expectOneLineError(runKvlens("sessions merge " + a + " " + a + " --into " + merged),
                       {"sessions merge: " + a + " is given twice"});
    expectOneLineError(runKvlens("sessions merge " + a), {"sessions merge: --into C.db names the store to merge into"});
}

}  // namespace
