// Files that are not usable stores get one line naming the file and stay
// byte-for-byte unchanged: not SQLite, another program's SQLite database, a
// truncated copy, a newer schema, a read-only location; and what an empty
// file is (no store yet, which a write makes whole).
#include <gtest/gtest.h>
#include <sqlite3.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <functional>

#include "SampleRecords.h"
#include "TestPaths.h"
#include "core/Error.h"
#include "sessions/SessionExport.h"
#include "sessions/SessionMerge.h"
#include "sessions/SessionStore.h"
#include "tests/support/OneLineError.h"

namespace kvlens::sessions {
namespace {

using Access = SessionStore::Access;

// Opens `path` with `access` and returns the error's message ("no error" if none).
std::string openError(const std::string& path, Access access) {
    try {
        SessionStore store(path, access);
    } catch (const Error& e) {
        return e.what();
    }
    return "no error";
}

// Both kinds of access are refused with `message`, and the file is unchanged.
void expectRefusedUnchanged(const std::string& path, const std::string& message) {
    const std::string before = test::fileBytes(path);
    for (Access access : {Access::ReadWrite, Access::ReadOnly}) {
        const std::string error = openError(path, access);
        EXPECT_EQ(error, message);
        EXPECT_EQ(error.find('\n'), std::string::npos);
        EXPECT_TRUE(test::fileBytes(path) == before) << "the file changed";
    }
}

void sqlite(const std::string& path, const std::string& sql) {
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
    char* error = nullptr;
    EXPECT_EQ(sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &error), SQLITE_OK)
        << (error ? error : "");
    sqlite3_free(error);
    sqlite3_close(db);
}

// A store with one session and one run, closed (its WAL checkpointed away).
std::string sampleStore(const std::string& name) {
    const std::string path = test::storePath(name);
    SessionStore store(path);
    const int64_t s = store.createSession("s").id;
    const int64_t model = store.saveModel(test::sampleModel());
    store.saveRun(test::sampleRun(1, s, store.savePrompt(test::samplePrompt(s, model))));
    return path;
}

TEST(BadStore, NotASqliteFile) {
    const std::string path = test::storePath("text.db");
    test::writeFile(path, "name,value\nthis is a CSV file, not a database\n");
    expectRefusedUnchanged(path, path + ": not a KV Lens session store (not a SQLite file)");
    test::writeFile(path, "short");
    expectRefusedUnchanged(path, path + ": not a KV Lens session store (not a SQLite file)");
}

TEST(BadStore, AnotherProgramsSqliteDatabase) {
    const std::string path = test::storePath("other.db");
    sqlite(
        path,
        "CREATE TABLE contacts (name TEXT, phone TEXT); INSERT INTO contacts VALUES ('a', '1');");
    expectRefusedUnchanged(
        path, path + ": not a KV Lens session store (it is a SQLite database of another program)");
    // One that has a session table of its own and another application_id, in WAL mode.
    const std::string other = test::storePath("other2.db");
    sqlite(other,
           "PRAGMA application_id = 1234; PRAGMA journal_mode = WAL; CREATE TABLE sessions (x);");
    expectRefusedUnchanged(
        other,
        other + ": not a KV Lens session store (it is a SQLite database of another program)");
}

TEST(BadStore, TruncatedStore) {
    const std::string path = sampleStore("truncated.db");
    const std::string whole = test::fileBytes(path);
    ASSERT_GT(whole.size(), 8192u);
    test::writeFile(path, whole.substr(0, whole.size() / 2));
    expectRefusedUnchanged(path, path + ": is truncated (" + std::to_string(whole.size() / 2) +
                                     " bytes; its header says " + std::to_string(whole.size()) +
                                     ")");
    test::writeFile(path, whole.substr(0, 60));
    expectRefusedUnchanged(path, path + ": is truncated (60 bytes, less than a SQLite header)");
    test::writeFile(path, whole.substr(0, 10));
    expectRefusedUnchanged(path, path + ": is truncated (10 bytes, less than a SQLite header)");
}

TEST(BadStore, NewerSchemaIsRefusedUnchanged) {
    const std::string path = sampleStore("newer.db");
    sqlite(path, "PRAGMA user_version = 99; PRAGMA journal_mode = DELETE;");
    expectRefusedUnchanged(
        path, path + ": written by a newer KV Lens (store schema 99, this build reads up to " +
                  std::to_string(SessionStore::schemaVersion()) +
                  "); left unchanged: update kvlens to open it");
}

TEST(BadStore, NewerSchemaStillInTheWalIsRefusedUnchanged) {
    // A newer kvlens migrated the store and was killed before its WAL was checkpointed:
    // the main file's header still says version 1; SQLite sees 99.
    const std::string path = sampleStore("newer-wal.db");
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
    sqlite3_db_config(db, SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 1, nullptr);
    ASSERT_EQ(sqlite3_exec(db, "PRAGMA user_version = 99", nullptr, nullptr, nullptr), SQLITE_OK);
    sqlite3_close(db);
    const std::string before = test::fileBytes(path), walBefore = test::fileBytes(path + "-wal");
    ASSERT_FALSE(walBefore.empty());
    EXPECT_EQ(openError(path, Access::ReadWrite),
              path + ": written by a newer KV Lens (store schema 99, this build reads up to " +
                  std::to_string(SessionStore::schemaVersion()) +
                  "); left unchanged: update kvlens to open it");
    EXPECT_TRUE(test::fileBytes(path) == before);
    EXPECT_TRUE(test::fileBytes(path + "-wal") == walBefore);
}

// An empty file holds nothing to lose (a user's `touch`, or an older KV Lens
// killed while creating the store): reading says there is no store yet and
// leaves it; the first write makes it a whole store.
TEST(BadStore, EmptyFileIsNoStoreYetForReadingAndBecomesOneForWriting) {
    const std::string path = test::storePath("empty.db");
    test::writeFile(path, "");
    EXPECT_EQ(openError(path, Access::ReadOnly),
              path + ": is an empty file, no session store yet (a run saved there with --save "
                     "makes it one)");
    EXPECT_EQ(test::fileBytes(path), "");
    {
        SessionStore store(path);
        const int64_t s = store.createSession("s").id;
        const int64_t model = store.saveModel(test::sampleModel());
        store.saveRun(test::sampleRun(1, s, store.savePrompt(test::samplePrompt(s, model))));
        EXPECT_EQ(store.integrityCheck(), "ok");
    }
    SessionStore reread(path, Access::ReadOnly);
    EXPECT_EQ(reread.sessions().size(), 1u);
}

// A -wal beside an empty or missing store may hold a store's last writes: it is
// never replaced by a new store.
TEST(BadStore, WalBesideAnEmptyOrMissingStoreIsLeftAlone) {
    const std::string path = test::storePath("wal-only.db");
    test::writeFile(path + "-wal", "not empty");
    EXPECT_EQ(openError(path, Access::ReadWrite),
              path + ": is missing but " + path +
                  "-wal beside it holds 9 bytes (a store's last writes?); left unchanged: move "
                  "both away, or recover them with sqlite3");
    EXPECT_FALSE(std::ifstream(path).good());
    test::writeFile(path, "");
    EXPECT_EQ(openError(path, Access::ReadWrite),
              path + ": is empty but " + path +
                  "-wal beside it holds 9 bytes (a store's last writes?); left unchanged: move "
                  "both away, or recover them with sqlite3");
    EXPECT_EQ(test::fileBytes(path), "");
    EXPECT_EQ(test::fileBytes(path + "-wal"), "not empty");
}

TEST(BadStore, Directory) {
    const std::string dir = test::storePath("dir.db");
    ::mkdir(dir.c_str(), 0755);
    EXPECT_EQ(openError(dir, Access::ReadWrite),
              dir + ": is a directory, not a session store file");
}

TEST(BadStore, MissingStoreForReading) {
    const std::string path = test::storePath("missing.db");
    EXPECT_EQ(openError(path, Access::ReadOnly),
              path + ": no session store here yet (runs saved with --save create it)");
    EXPECT_FALSE(std::ifstream(path).good());  // and nothing was created
}

// Runs `check` as an unprivileged user when the tests run as root (root
// ignores file permissions); returns what it returned.
bool asUnprivileged(const std::function<bool()>& check) {
    if (::getuid() != 0) return check();
    const pid_t pid = ::fork();
    if (pid == 0) {
        if (::setgid(65534) != 0 || ::setuid(65534) != 0) ::_exit(3);
        ::_exit(check() ? 0 : 1);
    }
    int status = 0;
    ::waitpid(pid, &status, 0);
    return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

TEST(BadStore, ReadOnlyLocation) {
    const std::string source = sampleStore("readonly.db");
    const std::string bytes = test::fileBytes(source);
    // A read-only store file in a folder anyone may write, and a store in a read-only folder.
    const std::string openDir = test::storePath("rwdir"), closedDir = test::storePath("rodir");
    ::mkdir(openDir.c_str(), 0777);
    ::chmod(openDir.c_str(), 0777);
    ::mkdir(closedDir.c_str(), 0755);
    const std::string readOnlyFile = openDir + "/sessions.db",
                      inClosedDir = closedDir + "/sessions.db";
    test::writeFile(readOnlyFile, bytes);
    test::writeFile(inClosedDir, bytes);
    ::chmod(readOnlyFile.c_str(), 0444);
    ::chmod(inClosedDir.c_str(), 0644);
    ::chmod(closedDir.c_str(), 0555);
    // The test folders must be reachable for the unprivileged user.
    for (std::string d = closedDir; d.find('/') != std::string::npos && d.size() > 1;) {
        d = d.substr(0, d.find_last_of('/'));
        struct stat st;
        if (!d.empty() && ::stat(d.c_str(), &st) == 0 && !(st.st_mode & S_IXOTH)) {
            GTEST_SKIP() << d << " is not searchable by other users";
        }
    }
    const bool ok = asUnprivileged([&] {
        const std::string fileError = openError(readOnlyFile, Access::ReadWrite);
        const std::string dirError = openError(inClosedDir, Access::ReadWrite);
        const std::string newError = openError(closedDir + "/new.db", Access::ReadWrite);
        bool good = fileError == readOnlyFile +
                                     ": the store file is read-only (Permission denied); make it "
                                     "writable or choose another --store";
        good &=
            dirError ==
            inClosedDir + ": cannot write to the folder " + closedDir +
                " (permission denied); the store needs it for its journal: choose another --store";
        good &=
            newError ==
            closedDir + "/new.db: cannot write to the folder " + closedDir +
                " (permission denied); the store needs it for its journal: choose another --store";
        if (!good)
            std::fprintf(stderr, "%s\n%s\n%s\n", fileError.c_str(), dirError.c_str(),
                         newError.c_str());
        // Reading still works where writing cannot.
        try {
            good &= SessionStore(inClosedDir, Access::ReadOnly).sessions().size() == 1;
            good &= SessionStore(readOnlyFile, Access::ReadOnly).sessions().size() == 1;
        } catch (const Error& e) {
            std::fprintf(stderr, "read-only open failed: %s\n", e.what());
            good = false;
        }
        return good;
    });
    EXPECT_TRUE(ok);
    EXPECT_TRUE(test::fileBytes(readOnlyFile) == bytes);
    EXPECT_TRUE(test::fileBytes(inClosedDir) == bytes);
    EXPECT_FALSE(std::ifstream(closedDir + "/new.db").good());
    ::chmod(closedDir.c_str(), 0755);
}

// A run whose prompt is gone (the store edited with its foreign keys off) was left out
// of an import, export or merge that then said "imported (1 runs)" as if that were all.
// The session is refused whole, naming the run and its prompt, and nothing is copied.
using kvlens::test::errorOf;

TEST(BadStore, ARunWithoutItsPromptRefusesTheSessionsCopy) {
    const std::string path = test::storePath("orphan_run.db");
    int64_t orphanRun = 0, orphanPrompt = 0;
    {
        SessionStore store(path);
        const int64_t s = store.createSession("s").id;
        const int64_t model = store.saveModel(test::sampleModel());
        store.saveRun(test::sampleRun(1, s, store.savePrompt(test::samplePrompt(s, model))));
        orphanPrompt = store.savePrompt(test::samplePrompt(s, model, 21));
        orphanRun = store.saveRun(test::sampleRun(2, s, orphanPrompt));
    }
    sqlite(path, "PRAGMA foreign_keys = OFF; DELETE FROM prompts WHERE id = " + std::to_string(orphanPrompt));
    const std::string want = path + ": run " + std::to_string(orphanRun) + " of session 's' names prompt " +
                             std::to_string(orphanPrompt) +
                             ", which the store does not hold for it: not copying the session without them";
    SessionStore source(path, Access::ReadOnly);
    EXPECT_EQ(source.runs(source.session("s").id).size(), 1u);  // what a copy used to take as the whole
    const std::string target = test::storePath("orphan_target.db");
    SessionStore to(target);
    EXPECT_EQ(errorOf([&] { SessionExport::importSession(to, path); }), want);
    EXPECT_TRUE(to.sessions().empty()) << "an import refused must copy nothing";
    const std::string file = test::storePath("orphan_export.kvlens");
    EXPECT_EQ(errorOf([&] { SessionExport::exportSession(source, "s", file); }), want);
    EXPECT_FALSE(std::filesystem::exists(file));
    // A merge refused leaves no target of its own making (it left an empty store).
    const std::string merged = test::storePath("orphan_merged.db");
    EXPECT_EQ(errorOf([&] { SessionMerge::merge({path}, merged); }), want);
    for (const char* suffix : {"", "-wal", "-shm", "-journal"})
        EXPECT_FALSE(std::filesystem::exists(merged + suffix)) << suffix;
}

// Shapes read from a store are checked against each other and their bounds before
// anything loops over them: a run saying query_heads 2000000000 kept kvlens report busy
// for minutes, and sessions import took it.
TEST(BadStore, ASelectionsShapesAreCheckedBeforeUse) {
    struct Case {
        std::string sql, message;
    };
    const std::vector<Case> cases = {
        {"UPDATE selections SET query_heads = 2000000000",
         "the store is damaged (query_heads 2000000000 and kv_heads 4 are no attention's heads)"},
        {"UPDATE selections SET kv_heads = 0", "the store is damaged (query_heads 32 and kv_heads 0 are no attention's heads)"},
        {"UPDATE selections SET query_heads = 15", "the store is damaged (query_heads 15 and kv_heads 4 are no attention's heads)"},
        {"UPDATE selections SET prompt_length = 0", "the store is damaged (prompt_length 0)"},
        {"UPDATE selections SET kv_heads = 8", "the store is damaged (layer 0 has 4 heads, not 8)"},
        {"UPDATE selections SET prompt_length = 5", "is outside the prompt of 5 tokens)"},
    };
    int i = 0;
    for (const Case& c : cases) {
        const std::string path = sampleStore("shapes_" + std::to_string(i++) + ".db");
        sqlite(path, c.sql);
        SessionStore store(path, Access::ReadOnly);
        const int64_t run = store.runs(store.session("s").id).at(0).id;
        const std::string error = errorOf([&] { store.run(run); });
        EXPECT_EQ(error.rfind(path + ": run " + std::to_string(run), 0), 0u) << error;
        EXPECT_NE(error.find(c.message), std::string::npos) << c.sql << ": " << error;
        SessionStore to(test::storePath("shapes_target_" + std::to_string(i) + ".db"));
        EXPECT_EQ(errorOf([&] { SessionExport::importSession(to, path); }), error) << c.sql;
        EXPECT_TRUE(to.sessions().empty());
    }
}

// A value of another type than its column's is damage, named in one line with its column,
// never read as a silent 0 (SQLite's affinity keeps non-numeric text in INTEGER columns).
TEST(BadStore, AValueOfTheWrongTypeIsRefusedNamingItsColumn) {
    struct Case {
        std::string sql, message;
    };
    const std::vector<Case> cases = {
        {"UPDATE runs SET threads = 'two'", "column threads holds text, not an integer (the store is damaged)"},
        {"UPDATE runs SET created_ms = 1.5", "column created_ms holds a real number, not an integer"},
        {"UPDATE selection_heads SET positions = 'abc'", "column positions holds text, not a blob"},
        {"UPDATE metrics SET mean_kl = 'low'", "column mean_kl holds text, not a number"},
        {"UPDATE runs SET device = X'00ff'", "column device holds a blob, not text"},
    };
    int i = 0;
    for (const Case& c : cases) {
        const std::string path = sampleStore("types_" + std::to_string(i++) + ".db");
        sqlite(path, c.sql);
        SessionStore store(path, Access::ReadOnly);
        std::string error = errorOf([&] {
            for (const RunSummary& r : store.runs(store.session("s").id)) store.run(r.id);
        });
        EXPECT_EQ(error.rfind(path + ": cannot ", 0), 0u) << error;
        EXPECT_NE(error.find(c.message), std::string::npos) << c.sql << ": " << error;
        SessionStore to(test::storePath("types_target_" + std::to_string(i) + ".db"));
        EXPECT_EQ(errorOf([&] { SessionExport::importSession(to, path); }), error) << c.sql;
        EXPECT_TRUE(to.sessions().empty());
    }
}

// A needle run's row: every field with its range, each out-of-range value one line naming
// the file, the row and the field (they were read as they stood and counted in grids).
TEST(BadStore, EveryFieldOfANeedleRunIsCheckedNamingItsRow) {
    struct Case {
        std::string sql, message;
    };
    const std::vector<Case> cases = {
        {"UPDATE niah_runs SET depth = 150", "field depth is 150.000000, outside 0..100"},
        {"UPDATE niah_runs SET length = 0", "field length is 0, outside 1..2147483648"},
        {"UPDATE niah_runs SET tokens = -5", "field tokens is -5, outside 1..2147483648"},
        {"UPDATE niah_runs SET sample = -1", "field sample is -1, outside 0..2147483648"},
        {"UPDATE niah_runs SET question_after = 7", "field question_after is 7, outside 0..1"},
        {"UPDATE niah_runs SET contains_score = 2.5", "field contains_score is 2.500000, outside 0..1"},
        {"UPDATE niah_runs SET needle_kept = -0.5", "field needle_kept is -0.500000, outside 0..1"},
        {"UPDATE niah_runs SET expected = '{}'", "field expected is not a JSON list"},
        {"UPDATE niah_runs SET expected = '[1]'", "field expected holds number, not only strings"},
        {"UPDATE niah_runs SET method = ''", "field method is empty"},
        {"UPDATE niah_runs SET tokens = 50", "field needle_positions is 100, outside 0..49"},
        {"UPDATE niah_runs SET depth = 'deep'", "column depth holds text, not a number"},
    };
    int i = 0;
    for (const Case& c : cases) {
        const std::string path = test::storePath("niah_fields_" + std::to_string(i++) + ".db");
        int64_t id = 0;
        {
            SessionStore store(path);
            const int64_t s = store.createSession("s").id;
            NiahRunRecord r;
            r.sessionId = s;
            r.modelId = store.saveModel(test::sampleModel());
            r.task = "single";
            r.length = 1024;
            r.tokens = 1019;
            r.depth = 50.0;
            r.newTokens = 16;
            r.method = "snapkv";
            r.budget = "64";
            r.params = "snapkv budget=64";
            r.contains = 1.0;
            r.needleKept = 0.5;
            r.expected = {"4821937"};
            r.needlePositions = {100, 101};
            ASSERT_TRUE(store.saveNiahRun(r));
            id = store.niahRuns(s).at(0).id;
        }
        sqlite(path, c.sql);
        SessionStore store(path, Access::ReadOnly);
        const std::string error = errorOf([&] { store.niahRuns(store.session("s").id); });
        EXPECT_EQ(error.find('\n'), std::string::npos) << error;
        if (c.message.rfind("column", 0) != 0) {
            EXPECT_EQ(error, path + ": niah run " + std::to_string(id) + ": " + c.message + " (the store is damaged)")
                << c.sql;
        } else {
            EXPECT_NE(error.find(c.message), std::string::npos) << c.sql << ": " << error;
        }
        SessionStore to(test::storePath("niah_fields_target_" + std::to_string(i) + ".db"));
        EXPECT_EQ(errorOf([&] { SessionExport::importSession(to, path); }), error) << c.sql;
    }
}

// A session name with a line break in a store (written by some other tool) is refused on
// import and merge in one line naming the file, the name shown escaped.
TEST(BadStore, ASessionNameWithAControlCharacterIsOneLineNamingTheFile) {
    const std::string path = sampleStore("control_name.db");
    sqlite(path, "UPDATE sessions SET name = 'two' || char(10) || 'lines'");
    SessionStore to(test::storePath("control_name_target.db"));
    EXPECT_EQ(errorOf([&] { SessionExport::importSession(to, path); }),
              path + ": session name 'two\\x0alines' has a control character; import it under another name with --as NAME");
    const std::string merged = test::storePath("control_name_merged.db");
    EXPECT_EQ(errorOf([&] { SessionMerge::merge({path}, merged); }),
              path + ": session name 'two\\x0alines' has a control character (the store is damaged)");
    EXPECT_FALSE(std::filesystem::exists(merged));
    // Renamed on import, it comes in whole.
    EXPECT_EQ(SessionExport::importSession(to, path, "", "renamed").name, "renamed");
}

}  // namespace
}  // namespace kvlens::sessions
