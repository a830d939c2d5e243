// A writer killed with SIGKILL at every step of every kind of save: the first
// save into a new store (creation, schema), a save into an existing one (a new
// session row, model, prompt and run), a schema migration, rename, delete,
// export and import. After each kill the next command opens the store, every
// run committed before is intact, nothing partial is there (no session without
// its run, no half export, no temporaries once the next write ran), PRAGMA
// integrity_check is ok, and the next save succeeds. The kill comes from a VFS
// that counts file-changing steps (CrashVfs), not from a timer.
#include <dirent.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "CrashVfs.h"
#include "RecordEquality.h"
#include "SampleRecords.h"
#include "TestPaths.h"
#include "sessions/Database.h"
#include "sessions/Migrations.h"
#include "sessions/RunRecorder.h"
#include "sessions/SessionExport.h"
#include "sessions/SessionStore.h"
#include "sessions/Statement.h"
#include "sessions/StoreFile.h"

namespace kvlens::sessions {
namespace {

using Access = SessionStore::Access;

const test::SampleShape kShape{3, 2, 1024, 60};

RunRecord run(uint64_t seed) { return test::sampleRun(seed, 0, 0, kShape); }

// Saves run `seed` to `session` of `store` as kvlens run --save and the GUI do.
int64_t save(SessionStore& store, const std::string& session, uint64_t seed) {
    return RunRecorder(store).save(session, test::sampleModel(), test::samplePrompt(0, 0, 64),
                                   run(seed));
}

// Session name -> the seeds of its runs (the run's text carries its seed),
// after checking every run field by field against its seed's sample.
using Contents = std::map<std::string, std::vector<uint64_t>>;

Contents contents(SessionStore& store) {
    Contents out;
    for (const SessionInfo& s : store.sessions()) {
        std::vector<uint64_t>& seeds = out[s.name];
        for (const RunSummary& summary : store.runs(s.id)) {
            const RunRecord r = store.run(summary.id);
            const uint64_t seed = uint64_t(r.createdMs - 1700000000000);
            test::expectSameRun(r, run(seed), /*compareIds=*/false);
            seeds.push_back(seed);
        }
    }
    return out;
}

Contents readContents(const std::string& path) {
    std::unique_ptr<SessionStore> opened;
    try {
        opened = std::make_unique<SessionStore>(path, Access::ReadOnly);
    } catch (const std::exception& e) {
        std::string files;
        for (const char* suffix : {"", "-wal", "-shm", "-journal"})
            if (StoreFile::exists(path + suffix))
                files += std::string(" ") + (*suffix ? suffix : "store") + ":" +
                         std::to_string(test::fileBytes(path + suffix).size());
        ADD_FAILURE() << "the next read-only open failed: " << e.what() << " (files:" << files
                      << ")";
        return {};
    }
    SessionStore& store = *opened;
    EXPECT_EQ(store.integrityCheck(), "ok") << path;
    return contents(store);
}

// Rows a partial save or delete would leave: a prompt without its session, a
// run without its prompt, a selection or metrics without their run, a model
// no prompt uses.
int64_t orphanRows(const std::string& path) {
    Database db(path, path, SQLITE_OPEN_READONLY);
    Statement s(
        db,
        "SELECT (SELECT count(*) FROM prompts WHERE session_id NOT IN (SELECT id FROM sessions))"
        " + (SELECT count(*) FROM runs WHERE prompt_id NOT IN (SELECT id FROM prompts))"
        " + (SELECT count(*) FROM selections WHERE run_id NOT IN (SELECT id FROM runs))"
        " + (SELECT count(*) FROM metrics WHERE run_id NOT IN (SELECT id FROM runs))"
        " + (SELECT count(*) FROM models WHERE id NOT IN (SELECT model_id FROM prompts))",
        "count orphans");
    return s.step() ? s.getInt(0) : -1;
}

// Files beside `path` that an operation writes under a temporary name.
std::vector<std::string> temporaries(const std::string& path) {
    const std::string dir = path.substr(0, path.find_last_of('/'));
    const std::string base = path.substr(path.find_last_of('/') + 1);
    std::vector<std::string> found;
    DIR* d = ::opendir(dir.c_str());
    while (const dirent* e = d ? ::readdir(d) : nullptr) {
        const std::string name = e->d_name;
        if (name.compare(0, base.size(), base) == 0 &&
            (name.find(".creating-") != std::string::npos ||
             name.find(".partial-") != std::string::npos))
            found.push_back(name);
    }
    if (d) ::closedir(d);
    return found;
}

void removeAll(const std::string& path) {
    test::removeStore(path);
    for (const std::string& t : temporaries(path))
        ::unlink((path.substr(0, path.find_last_of('/') + 1) + t).c_str());
}

void copyStore(const std::string& from, const std::string& to) {
    removeAll(to);
    test::writeFile(to, test::fileBytes(from));
}

// Runs `op` in a child that dies by SIGKILL just before its step `n`; true
// when it was killed, false when it finished first (it has fewer steps).
bool killedAt(long n, const std::function<void()>& op) {
    const pid_t pid = ::fork();
    if (pid == 0) {
        test::CrashVfs::install(n);
        try {
            op();
        } catch (const std::exception& e) {
            std::fprintf(stderr, "crash test child: %s\n", e.what());
            ::_exit(3);
        }
        ::_exit(0);
    }
    int status = 0;
    ::waitpid(pid, &status, 0);
    if (WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) return true;
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
        << "the operation failed in the child (status " << status << ") at step " << n;
    return false;
}

// Kills `op` at each of its steps in turn, from a fresh `setup` each time;
// `check` looks at what is left (`killed` false: the run that went through).
// Returns how many steps the operation has.
long atEveryStep(const std::function<void()>& setup, const std::function<void()>& op,
                 const std::function<void(bool killed, long step)>& check) {
    for (long n = 1; n < 20000; ++n) {
        setup();
        const bool killed = killedAt(n, op);
        check(killed, n);
        if (::testing::Test::HasFailure()) {
            ADD_FAILURE() << "first failure after a kill at step " << n;
            return n;
        }
        if (!killed) return n - 1;
    }
    ADD_FAILURE() << "the operation never finished";
    return 0;
}

TEST(CrashWindow, FirstSaveIntoANewStore) {
    const std::string path = test::storePath("first.db");
    const long steps =
        atEveryStep([&] { removeAll(path); },
                    [&] {
                        SessionStore store(path);
                        save(store, "default", 1);
                    },
                    [&](bool killed, long step) {
                        SCOPED_TRACE("killed at step " + std::to_string(step));
                        if (StoreFile::exists(path)) {
                            // Whatever is there is a whole store: empty, or holding the whole run.
                            const Contents c = readContents(path);
                            EXPECT_TRUE(c.empty() || c == (Contents{{"default", {1}}}));
                            EXPECT_EQ(orphanRows(path), 0);
                        }
                        if (!killed) return;
                        bool hadRun = false;
                        {
                            SessionStore store(path);  // the next command, and its save
                            hadRun = !store.sessions().empty();
                            save(store, "default", 2);
                        }
                        const Contents c = readContents(path);
                        EXPECT_EQ(c, (Contents{{"default", hadRun ? std::vector<uint64_t>{1, 2}
                                                                  : std::vector<uint64_t>{2}}}));
                        EXPECT_TRUE(temporaries(path).empty()) << temporaries(path)[0];
                    });
    EXPECT_GT(steps, 10);
}

// A store with session "a" (runs 1 and 2), closed.
std::string fixture(const std::string& name) {
    const std::string path = test::storePath(name);
    SessionStore store(path);
    save(store, "a", 1);
    save(store, "a", 2);
    return path;
}

TEST(CrashWindow, SaveWithANewSessionIntoAStoreWithRuns) {
    const std::string initial = fixture("save-initial.db"), path = test::storePath("save.db");
    atEveryStep(
        [&] { copyStore(initial, path); },
        [&] {
            SessionStore store(path);
            save(store, "b", 3);
        },
        [&](bool killed, long step) {
            SCOPED_TRACE("killed at step " + std::to_string(step));
            const Contents c = readContents(path);
            const bool saved = c.count("b") > 0;
            EXPECT_EQ(c, saved ? (Contents{{"a", {1, 2}}, {"b", {3}}}) : (Contents{{"a", {1, 2}}}));
            EXPECT_EQ(orphanRows(path), 0);
            if (!killed) return;
            {
                SessionStore store(path);
                save(store, "b", 4);
            }
            const Contents after = readContents(path);
            EXPECT_EQ(after.at("b"),
                      saved ? (std::vector<uint64_t>{3, 4}) : (std::vector<uint64_t>{4}));
        });
}

TEST(CrashWindow, RenameAndDeleteAreAllOrNothing) {
    const std::string initial = fixture("edit-initial.db"), path = test::storePath("edit.db");
    {
        SessionStore store(initial);
        save(store, "b", 3);
    }
    atEveryStep([&] { copyStore(initial, path); },
                [&] {
                    SessionStore store(path);
                    store.renameSession("a", "z");
                },
                [&](bool, long step) {
                    SCOPED_TRACE("rename killed at step " + std::to_string(step));
                    const Contents c = readContents(path);
                    EXPECT_TRUE(c == (Contents{{"a", {1, 2}}, {"b", {3}}}) ||
                                c == (Contents{{"z", {1, 2}}, {"b", {3}}}));
                });
    atEveryStep(
        [&] { copyStore(initial, path); },
        [&] {
            SessionStore store(path);
            store.deleteSession("a");
        },
        [&](bool, long step) {
            SCOPED_TRACE("delete killed at step " + std::to_string(step));
            const Contents c = readContents(path);
            EXPECT_TRUE(c == (Contents{{"a", {1, 2}}, {"b", {3}}}) || c == (Contents{{"b", {3}}}));
            EXPECT_EQ(orphanRows(path), 0);
        });
}

TEST(CrashWindow, ExportLeavesNoHalfFileAndTheNextExportCleansUp) {
    const std::string source = fixture("export-source.db");
    const std::string file = test::storePath("export.kvlens");
    const std::string sourceBytes = test::fileBytes(source);
    atEveryStep([&] { removeAll(file); },
                [&] {
                    SessionStore store(source, Access::ReadOnly);
                    SessionExport::exportSession(store, "a", file);
                },
                [&](bool killed, long step) {
                    SCOPED_TRACE("killed at step " + std::to_string(step));
                    EXPECT_EQ(readContents(source), (Contents{{"a", {1, 2}}}));
                    if (StoreFile::exists(file)) {
                        EXPECT_EQ(readContents(file), (Contents{{"a", {1, 2}}}));
                    }
                    if (!killed) return;
                    if (!StoreFile::exists(file)) {
                        SessionStore store(source, Access::ReadOnly);
                        EXPECT_EQ(SessionExport::exportSession(store, "a", file), 2);
                        EXPECT_EQ(readContents(file), (Contents{{"a", {1, 2}}}));
                    }
                    EXPECT_TRUE(temporaries(file).empty()) << temporaries(file)[0];
                });
    EXPECT_TRUE(test::fileBytes(source) == sourceBytes) << "export wrote to its source";
}

TEST(CrashWindow, ImportIsAllOrNothing) {
    const std::string source = fixture("import-source.db");
    const std::string file = test::storePath("import.kvlens");
    {
        SessionStore store(source, Access::ReadOnly);
        SessionExport::exportSession(store, "a", file);
    }
    const std::string initial = test::storePath("import-initial.db"),
                      path = test::storePath("import.db");
    {
        SessionStore store(initial);
        save(store, "t", 5);
    }
    atEveryStep([&] { copyStore(initial, path); },
                [&] {
                    SessionStore store(path);
                    SessionExport::importSession(store, file, "", "imported");
                },
                [&](bool killed, long step) {
                    SCOPED_TRACE("killed at step " + std::to_string(step));
                    const Contents c = readContents(path);
                    EXPECT_TRUE(c == (Contents{{"t", {5}}}) ||
                                c == (Contents{{"t", {5}}, {"imported", {1, 2}}}));
                    EXPECT_EQ(orphanRows(path), 0);
                    if (!killed || c.count("imported")) return;
                    SessionStore store(path);
                    SessionExport::importSession(store, file, "", "imported");
                    EXPECT_EQ(contents(store), (Contents{{"t", {5}}, {"imported", {1, 2}}}));
                });
}

// A schema migration on a store in use: its steps commit together or not at all.
TEST(CrashWindow, MigrationIsAllOrNothing) {
    const std::vector<Migrations::Step> v1 = {
        [](Database& db) { db.exec("CREATE TABLE one (x INTEGER)", "create one"); }};
    std::vector<Migrations::Step> v2 = v1;
    v2.push_back([](Database& db) {
        db.exec("CREATE TABLE two (x INTEGER, pad TEXT)", "create two");
        db.exec(
            "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 2000) "
            "INSERT INTO two SELECT i, printf('%0100d', i) FROM n",
            "fill two");
    });
    const std::string initial = test::storePath("migrate-initial.db"),
                      path = test::storePath("migrate.db");
    {
        Database db(initial, initial, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE);
        db.exec("PRAGMA journal_mode = WAL", "wal");
        Migrations::apply(db, v1);
    }
    auto version = [&](Database& db) { return db.pragmaInt("user_version"); };
    const long steps = atEveryStep([&] { copyStore(initial, path); },
                                   [&] {
                                       Database db(path, path, SQLITE_OPEN_READWRITE);
                                       Migrations::apply(db, v2);
                                   },
                                   [&](bool killed, long step) {
                                       SCOPED_TRACE("killed at step " + std::to_string(step));
                                       Database db(path, path, SQLITE_OPEN_READWRITE);
                                       const int64_t v = version(db);
                                       EXPECT_TRUE(v == 1 || v == 2);
                                       EXPECT_EQ(db.hasTable("two"), v == 2);
                                       if (v == 2) {
                                           Statement count(db, "SELECT count(*) FROM two", "count");
                                           EXPECT_TRUE(count.step() && count.getInt(0) == 2000);
                                       }
                                       Statement check(db, "PRAGMA integrity_check", "check");
                                       EXPECT_TRUE(check.step() && check.getText(0) == "ok");
                                       if (!killed) return;
                                       Migrations::apply(db, v2);
                                       EXPECT_EQ(version(db), 2);
                                   });
    EXPECT_GT(steps, 3);
}

}  // namespace
}  // namespace kvlens::sessions
