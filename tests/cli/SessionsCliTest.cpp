// kvlens run/compare --save and kvlens sessions as a user runs them: what was
// measured is what show prints back, export/import move a session between
// stores, a changed or missing model is reported, and every refusal is one line.
#include <gtest/gtest.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sqlite3.h>

#include <algorithm>
#include <fstream>
#include <nlohmann/json.hpp>

#include "cli/CliHarness.h"

namespace {

using kvlens::test::CliResult;
using kvlens::test::expectOneLineError;
using kvlens::test::runKvlens;
using kvlens::test::slurp;

// A fresh store path for this test (and process).
std::string storeFile(const std::string& name) {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    const std::string path =
        kvlens::test::testOutputPath(std::string("sessions_cli_") + info->name() + "_" +
                                     std::to_string(::getpid()) + "_" + name);
    for (const char* suffix : {"", "-wal", "-shm"}) ::unlink((path + suffix).c_str());
    return path;
}

std::string promptFile() {
    const std::string path = kvlens::test::testOutputPath("sessions_cli_prompt.txt");
    std::ofstream out(path);
    for (int i = 0; i < 40; ++i) out << "the little cat sat on a mat " << i << ". ";
    return path;
}

const std::string kRandom = "--model random:tiny:layers=2 --dtype f32 ";

nlohmann::json showJson(const std::string& store, const std::string& session) {
    const CliResult r = runKvlens("sessions show '" + session + "' --json --store " + store);
    EXPECT_EQ(r.exitCode, 0) << r.err;
    return nlohmann::json::parse(r.out);
}

TEST(SessionsCli, RunSaveKeepsWhatWasMeasured) {
    const std::string store = storeFile("run.db");
    const CliResult run = runKvlens(
        "run " + kRandom + "--prompt-file " + promptFile() +
        " --method snapkv --budget 64 -n 6 --json --save --session first --store " + store);
    ASSERT_EQ(run.exitCode, 0) << run.err;
    EXPECT_NE(run.err.find("kvlens: saved 1 run (id 1) to session 'first' in " + store),
              std::string::npos)
        << run.err;
    const auto measured = nlohmann::json::parse(run.out);

    const auto shown = showJson(store, "first");
    ASSERT_EQ(shown["runs"].size(), 1u);
    const auto& saved = shown["runs"][0];
    EXPECT_EQ(saved["method"], "snapkv");
    EXPECT_EQ(saved["budget"], 64);
    EXPECT_EQ(saved["new_tokens"], 6);
    EXPECT_EQ(saved["status"], "complete");
    EXPECT_EQ(saved["kv_bytes"], measured["metrics"]["kv_bytes"]);
    EXPECT_EQ(saved["kv_bytes_full"], measured["metrics"]["kv_bytes_full"]);
    EXPECT_EQ(saved["mean_kl"].get<double>(), measured["metrics"]["mean_kl"].get<double>());
    EXPECT_EQ(saved["agreed_prefix"], measured["metrics"]["agreed_prefix"]);
    ASSERT_TRUE(measured["metrics"]["hit_rate"].is_number());
    EXPECT_EQ(saved["hit_rate"].get<double>(), measured["metrics"]["hit_rate"].get<double>());
    ASSERT_EQ(shown["models"].size(), 1u);
    EXPECT_EQ(shown["models"][0]["spec"], "random:tiny:layers=2");
    EXPECT_EQ(shown["models"][0]["status"], "random");
    EXPECT_EQ(shown["models"][0]["sha256"], "");
    ASSERT_EQ(shown["prompts"].size(), 1u);
    EXPECT_EQ(shown["prompts"][0]["text"], slurp(promptFile()));
    EXPECT_EQ(shown["prompts"][0]["tokens"], measured["prompt_tokens"]);

    // A second run of the same prompt goes to the same session and prompt.
    ASSERT_EQ(
        runKvlens("run " + kRandom + "--prompt-file " + promptFile() +
                  " --method streamingllm --budget 32 -n 6 --save --session first --store " + store)
            .exitCode,
        0);
    const auto again = showJson(store, "first");
    EXPECT_EQ(again["runs"].size(), 2u);
    EXPECT_EQ(again["prompts"].size(), 1u);
    const CliResult table = runKvlens("sessions show first --store " + store);
    ASSERT_EQ(table.exitCode, 0) << table.err;
    EXPECT_NE(table.out.find("streamingllm"), std::string::npos) << table.out;
    EXPECT_NE(table.out.find("agreed@div"), std::string::npos) << table.out;
    EXPECT_TRUE(table.err.empty()) << table.err;
}

TEST(SessionsCli, CompareSaveKeepsEveryRow) {
    const std::string store = storeFile("compare.db");
    const CliResult r = runKvlens(
        "compare " + kRandom + "--prompt-file " + promptFile() +
        " --methods full,snapkv,h2o --budgets 48,96 -n 4 --csv --save --session sweep --store " +
        store);
    ASSERT_EQ(r.exitCode, 0) << r.err;
    EXPECT_NE(r.err.find("kvlens: saved 5 runs (id 1,2,3,4,5) to session 'sweep'"),
              std::string::npos)
        << r.err;
    const auto shown = showJson(store, "sweep");
    ASSERT_EQ(shown["runs"].size(), 5u);
    EXPECT_EQ(shown["runs"][0]["method"], "full");
    EXPECT_EQ(shown["runs"][0]["kv_ratio"], 1.0);
    EXPECT_EQ(shown["runs"][4]["method"], "h2o");
    EXPECT_EQ(shown["runs"][4]["budget"], 96);
    EXPECT_EQ(shown["prompts"].size(), 1u);

    const CliResult list = runKvlens("sessions list --json --store " + store);
    ASSERT_EQ(list.exitCode, 0) << list.err;
    const auto sessions = nlohmann::json::parse(list.out);
    ASSERT_EQ(sessions.size(), 1u);
    EXPECT_EQ(sessions[0]["name"], "sweep");
    EXPECT_EQ(sessions[0]["runs"], 5);
}

// A session name with a line break, written by another tool, is printed escaped: one
// listing line per session, and `show` prints the name on its one line.
TEST(SessionsCli, AStoredNameWithALineBreakIsShownEscaped) {
    const std::string store = storeFile("a.db");
    ASSERT_EQ(runKvlens("run " + kRandom + "--prompt-file " + promptFile() +
                        " --method snapkv --budget 25% -n 2 --save --session s --store " + store)
                  .exitCode,
              0);
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(store.c_str(), &db), SQLITE_OK);
    ASSERT_EQ(sqlite3_exec(db, "UPDATE sessions SET name = 'two' || char(10) || 'lines'", nullptr, nullptr, nullptr),
              SQLITE_OK);
    sqlite3_close(db);
    CliResult r = runKvlens("sessions list --store " + store);
    ASSERT_EQ(r.exitCode, 0) << r.err;
    EXPECT_NE(r.out.find("\ntwo\\x0alines "), std::string::npos) << r.out;
    EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 2) << r.out;  // the header and the session
    r = runKvlens("sessions show 'two\nlines' --store " + store);
    ASSERT_EQ(r.exitCode, 0) << r.err;
    EXPECT_NE(r.out.find("session  two\\x0alines\n"), std::string::npos) << r.out;
}

TEST(SessionsCli, RenameExportImportDelete) {
    const std::string store = storeFile("a.db"), other = storeFile("b.db"),
                      file = storeFile("x.kvlens");
    ASSERT_EQ(runKvlens("run " + kRandom + "--prompt-file " + promptFile() +
                        " --method adakv --budget 25% -n 4 --save --session s --store " + store)
                  .exitCode,
              0);
    const auto before = showJson(store, "s");
    CliResult r = runKvlens("sessions rename s study --store " + store);
    ASSERT_EQ(r.exitCode, 0) << r.err;
    EXPECT_EQ(r.out, "renamed session 's' to 'study'\n");
    r = runKvlens("sessions export study " + file + " --store " + store);
    ASSERT_EQ(r.exitCode, 0) << r.err;
    EXPECT_EQ(r.out, "exported session 'study' (1 runs) to " + file + "\n");
    struct stat st;
    EXPECT_NE(::stat((file + "-wal").c_str(), &st), 0) << "the export must be one file";
    r = runKvlens("sessions import " + file + " --store " + other);
    ASSERT_EQ(r.exitCode, 0) << r.err;
    EXPECT_EQ(r.out, "imported session 'study' (1 runs) into " + other + "\n");
    auto moved = showJson(other, "study");
    EXPECT_EQ(moved["runs"][0]["kv_bytes"], before["runs"][0]["kv_bytes"]);
    EXPECT_EQ(moved["runs"][0]["mean_kl"], before["runs"][0]["mean_kl"]);
    EXPECT_EQ(moved["runs"][0]["params"], before["runs"][0]["params"]);
    EXPECT_EQ(moved["prompts"][0]["text"], before["prompts"][0]["text"]);
    EXPECT_EQ(moved["created_ms"], before["created_ms"]);
    ASSERT_EQ(runKvlens("sessions import " + file + " --as copy --store " + other).exitCode, 0);
    expectOneLineError(runKvlens("sessions import " + file + " --store " + other),
                       {other + ": a session named 'study' already exists", "--as NAME"});
    expectOneLineError(runKvlens("sessions export study " + file + " --store " + store),
                       {file + ": already exists; export writes a new file"});

    r = runKvlens("sessions delete study --store " + other);
    ASSERT_EQ(r.exitCode, 0) << r.err;
    EXPECT_EQ(r.out, "deleted session 'study' (1 runs, 1 prompts)\n");
    expectOneLineError(runKvlens("sessions show study --store " + other),
                       {other + ": no session 'study' (sessions: copy)"});
}

TEST(SessionsCli, ShowWarnsWhenTheModelFileChangedOrIsMissing) {
    kvlens::test::TinyModelShape shape;
    shape.context = 2048;
    const std::string model = storeFile("model.gguf");
    kvlens::test::makeTinyModelFile(shape).builder.writeFile(model);
    const std::string store = storeFile("model.db");
    const CliResult run =
        runKvlens("run --model " + model + " --prompt-file " + promptFile() +
                  " --method snapkv --budget 64 -n 4 --save --session m --store " + store);
    ASSERT_EQ(run.exitCode, 0) << run.err;
    auto shown = showJson(store, "m");
    EXPECT_EQ(shown["models"][0]["status"], "unchanged");
    EXPECT_EQ(shown["models"][0]["sha256"].get<std::string>().size(), 64u);
    EXPECT_EQ(shown["models"][0]["size_bytes"], int64_t(slurp(model).size()));

    // Same size, new content, new mtime: the hash says so.
    std::string bytes = slurp(model);
    bytes[bytes.size() - 1] ^= 1;
    { std::ofstream(model, std::ios::binary | std::ios::trunc) << bytes; }
    struct timespec times[2] = {{0, UTIME_OMIT}, {1, 0}};
    ::utimensat(AT_FDCWD, model.c_str(), times, 0);
    CliResult r = runKvlens("sessions show m --store " + store);
    ASSERT_EQ(r.exitCode, 0) << r.err;
    EXPECT_NE(r.err.find("kvlens: warning: session 'm': model file "), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("changed: SHA-256"), std::string::npos) << r.err;
    EXPECT_NE(r.out.find("[CHANGED]"), std::string::npos) << r.out;

    { std::ofstream(model, std::ios::binary | std::ios::app) << "x"; }
    r = runKvlens("sessions show m --store " + store);
    EXPECT_NE(r.err.find("bytes, saved with " + std::to_string(bytes.size())), std::string::npos)
        << r.err;

    ::unlink(model.c_str());
    r = runKvlens("sessions show m --store " + store);
    ASSERT_EQ(r.exitCode, 0) << r.err;
    EXPECT_EQ(r.err, "kvlens: warning: session 'm': model file " + model + " is missing\n");
    EXPECT_NE(r.out.find("[MISSING]"), std::string::npos) << r.out;
}

// The dead store an older kvlens left when killed at its first save (a 0-byte
// file): reading says there is no store yet, the next --save makes it whole.
TEST(SessionsCli, AnEmptyStoreFileBecomesAStoreAtTheNextSave) {
    const std::string store = storeFile("empty.db");
    { std::ofstream(store) << ""; }
    expectOneLineError(runKvlens("sessions list --store " + store),
                       {store + ": is an empty file, no session store yet (a run saved there with --save "
                                "makes it one)"});
    const CliResult run = runKvlens("run " + kRandom + "--prompt-file " + promptFile() +
                                    " --method snapkv --budget 64 -n 4 --save --store " + store);
    ASSERT_EQ(run.exitCode, 0) << run.err;
    ASSERT_EQ(showJson(store, "default")["runs"].size(), 1u);
}

TEST(SessionsCli, BadStoresAndFlagsGiveOneLineAndStayUnchanged) {
    const std::string base =
        "run " + kRandom + "--prompt-file " + promptFile() + " --method snapkv --budget 64 -n 4 ";
    const std::string text = storeFile("text.db");
    { std::ofstream(text) << "just some notes\n"; }
    // The store is checked before the model loads.
    expectOneLineError(runKvlens(base + "--save --store " + text),
                       {text + ": not a KV Lens session store (not a SQLite file)"});
    EXPECT_EQ(slurp(text), "just some notes\n");
    expectOneLineError(runKvlens("sessions list --store " + text),
                       {text + ": not a KV Lens session store (not a SQLite file)"});

    // A store from a newer kvlens: user_version (header offset 60) above ours.
    const std::string newer = storeFile("newer.db");
    ASSERT_EQ(runKvlens(base + "--save --store " + newer).exitCode, 0);
    std::string bytes = slurp(newer);
    ASSERT_GT(bytes.size(), 100u);
    bytes[60] = 0, bytes[61] = 0, bytes[62] = 0, bytes[63] = 42;
    { std::ofstream(newer, std::ios::binary | std::ios::trunc) << bytes; }
    for (const std::string& command :
         {base + "--save --store " + newer, "sessions show default --store " + newer,
          "sessions delete default --store " + newer}) {
        expectOneLineError(runKvlens(command),
                           {newer + ": written by a newer KV Lens (store schema 42"});
        EXPECT_TRUE(slurp(newer) == bytes) << command;
    }
    const std::string truncated = storeFile("truncated.db");
    { std::ofstream(truncated, std::ios::binary) << bytes.substr(0, 4096 + 100); }
    expectOneLineError(runKvlens("sessions list --store " + truncated),
                       {truncated + ": is truncated ("});

    const std::string store = storeFile("flags.db");
    expectOneLineError(runKvlens(base + "--session x"), {"--session goes with --save"});
    expectOneLineError(runKvlens(base + "--store " + store), {"--store goes with --save"});
    expectOneLineError(runKvlens("compare " + kRandom + "--prompt hi --session x"),
                       {"--session goes with --save"});
    expectOneLineError(runKvlens("sessions show nope --store " + store),
                       {store + ": no session store here yet"});
    ASSERT_EQ(runKvlens(base + "--save --session only --store " + store).exitCode, 0);
    expectOneLineError(runKvlens("sessions show nope --store " + store),
                       {store + ": no session 'nope' (sessions: only)"});
    expectOneLineError(runKvlens("sessions rename only '' --store " + store),
                       {"session name is empty"});
    expectOneLineError(runKvlens("sessions frobnicate --store " + store),
                       {"unknown command 'frobnicate'"});
    expectOneLineError(runKvlens("sessions show --store " + store),
                       {"expected 'show NAME' (missing an argument)"});
    expectOneLineError(runKvlens("sessions delete a b --store " + store),
                       {"expected 'delete NAME' (too many arguments)"});
    expectOneLineError(runKvlens("sessions list --verify --store " + store),
                       {"--verify does not apply"});
    expectOneLineError(runKvlens("sessions import " + text + " --store " + store),
                       {text + ": not a KV Lens session store (not a SQLite file)"});
    // A failed import into a store that was not there leaves none behind (it left an empty one).
    const std::string fresh = kvlens::test::testOutputPath("import_target_never_made.db");
    std::remove(fresh.c_str());
    expectOneLineError(runKvlens("sessions import " + text + " --store " + fresh),
                       {text + ": not a KV Lens session store (not a SQLite file)"});
    for (const char* suffix : {"", "-wal", "-shm", "-journal"})
        EXPECT_FALSE(std::ifstream(fresh + suffix).good()) << fresh << suffix;
    expectOneLineError(runKvlens("sessions list --color --store " + store),
                       {"unknown flag '--color'"});
    const CliResult usage = runKvlens("sessions --help");
    EXPECT_EQ(usage.exitCode, 0);
    EXPECT_NE(usage.out.find("export NAME FILE"), std::string::npos);
}

TEST(SessionsCli, DefaultStoreFollowsXdgDataHome) {
    const std::string home = storeFile("xdg");
    ASSERT_EQ(runKvlens("run " + kRandom + "--prompt-file " + promptFile() +
                            " --method snapkv --budget 64 -n 4 --save",
                        "XDG_DATA_HOME=" + home)
                  .exitCode,
              0);
    EXPECT_TRUE(std::ifstream(home + "/kvlens/sessions.db").good());
    const CliResult list = runKvlens("sessions list", "XDG_DATA_HOME=" + home);
    ASSERT_EQ(list.exitCode, 0) << list.err;
    EXPECT_NE(list.out.find("default"), std::string::npos) << list.out;
}

}  // namespace
