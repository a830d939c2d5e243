// Needle-in-a-haystack runs in the store (schema 2): saved and read back, one per
// key; a version-1 store migrates keeping what it held; merging shards keeps every
// run exactly once and refuses a newer source with every file left as it was.
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <cmath>

#include "SampleRecords.h"
#include "TestPaths.h"
#include "core/Error.h"
#include "sessions/Database.h"
#include "sessions/Migrations.h"
#include "sessions/NiahGrid.h"
#include "sessions/SessionMerge.h"
#include "sessions/SessionStore.h"
#include "sessions/StoreSchema.h"

namespace kvlens::sessions {
namespace {

std::string errorOf(const std::function<void()>& f) {
    try {
        f();
    } catch (const Error& e) {
        return e.what();
    }
    return "no error";
}

NiahRunRecord niahRun(int64_t session, int64_t model, double depth, const std::string& params) {
    NiahRunRecord r;
    r.sessionId = session;
    r.modelId = model;
    r.task = "single";
    r.taskSeed = uint64_t(1) << 63 | 5;  // the top bit survives int64 storage
    r.length = 1024;
    r.tokens = 1019;
    r.depth = depth;
    r.sample = 0;
    r.newTokens = 16;
    r.method = params.substr(0, params.find(' '));
    r.budget = "64";
    r.params = params;
    r.contains = 1.0;
    r.exact = 0.0;
    r.needleKept = 0.25;
    r.agreement = 0.5;
    r.meanKl = std::nan("");
    r.answer = ": 4821937.\n\"quoted\"";
    r.expected = {"4821937"};
    r.needlePositions = {100, 101, 102};
    return r;
}

TEST(NiahRuns, SavedOncePerKeyAndReadBackWhole) {
    const std::string path = test::storePath("niah.db");
    SessionStore store(path);
    const int64_t model = store.saveModel(test::sampleModel());
    const SessionInfo s = store.createSession("sweep");
    EXPECT_TRUE(store.saveNiahRun(niahRun(s.id, model, 50.0, "snapkv budget=64")));
    EXPECT_FALSE(store.saveNiahRun(niahRun(s.id, model, 50.0, "snapkv budget=64")));  // the same run
    NiahRunRecord other = niahRun(s.id, model, 50.0, "snapkv budget=64");
    other.questionAfter = true;
    EXPECT_TRUE(store.saveNiahRun(other));
    EXPECT_TRUE(store.saveNiahRun(niahRun(s.id, model, 12.5, "snapkv budget=64")));
    const std::vector<NiahRunRecord> got = store.niahRuns(s.id);
    ASSERT_EQ(got.size(), 3u);
    const NiahRunRecord want = niahRun(s.id, model, 50.0, "snapkv budget=64");
    EXPECT_EQ(got[0].key(), want.key());
    EXPECT_EQ(got[0].taskSeed, want.taskSeed);
    EXPECT_EQ(got[0].answer, want.answer);
    EXPECT_EQ(got[0].expected, want.expected);
    EXPECT_EQ(got[0].needlePositions, want.needlePositions);
    EXPECT_EQ(got[0].needleKept, 0.25);
    EXPECT_TRUE(std::isnan(got[0].meanKl));
    EXPECT_TRUE(got[1].questionAfter);
    EXPECT_EQ(got[2].depth, 12.5);
    EXPECT_EQ(store.models(s.id).size(), 1u);  // a niah run's model counts as the session's
    store.deleteSession("sweep");               // cascades; the model goes with it
    EXPECT_FALSE(store.findSession("sweep"));
    const SessionInfo again = store.createSession("sweep");
    EXPECT_TRUE(store.niahRuns(again.id).empty());
}

TEST(NiahGrid, GroupsByTaskAndModeAndAveragesEachCellOverItsSamples) {
    std::vector<NiahRunRecord> runs;
    auto add = [&](const std::string& params, double depth, int64_t length, int64_t sample, double contains,
                   bool after = false, const std::string& task = "single") {
        NiahRunRecord r = niahRun(1, 1, depth, params);
        r.length = length;
        r.sample = sample;
        r.contains = contains;
        r.needleKept = contains / 2;
        r.questionAfter = after;
        r.task = task;
        r.budget = r.method == "full" ? "all" : "64";
        runs.push_back(r);
    };
    add("snapkv B=64", 50, 2048, 1, 1.0);  // sample 1 saved before sample 0
    add("snapkv B=64", 50, 2048, 0, 0.0);
    add("full B=0", 50, 2048, 0, 1.0);
    add("snapkv B=64", 0, 1024, 0, 1.0);
    add("snapkv B=64", 0, 1024, 0, 0.0, true);
    add("snapkv B=64", 0, 1024, 0, 1.0, false, "multikey");
    const NiahGrid grid(runs);
    ASSERT_EQ(grid.groups().size(), 3u);
    const NiahGrid::Group& g = grid.groups()[1];  // "single", question inside
    EXPECT_EQ(grid.groups()[0].task, "multikey");
    EXPECT_EQ(g.task, "single");
    EXPECT_FALSE(g.questionAfter);
    EXPECT_TRUE(grid.groups()[2].questionAfter);
    ASSERT_EQ(g.kinds.size(), 2u);
    EXPECT_EQ(NiahGrid::kindLabel(g.kinds[0]), "snapkv 64");  // sweep order: first seen first
    EXPECT_EQ(NiahGrid::kindLabel(g.kinds[1]), "full");
    EXPECT_EQ(g.lengths, (std::vector<int64_t>{1024, 2048}));
    EXPECT_EQ(g.depths, (std::vector<double>{0, 50}));
    const NiahGrid::Cell* c = g.cell(g.kinds[0], 50, 2048);
    ASSERT_NE(c, nullptr);
    EXPECT_EQ(c->means.runs, 2);
    EXPECT_DOUBLE_EQ(c->means.contains.value(), 0.5);
    EXPECT_DOUBLE_EQ(c->means.kept.value(), 0.25);
    EXPECT_TRUE(std::isnan(c->means.kl.value()));  // NaN KL is skipped, none left
    ASSERT_EQ(c->runs.size(), 2u);
    EXPECT_EQ(c->runs[0]->sample, 0);  // samples ascending
    EXPECT_EQ(c->runs[1]->sample, 1);
    EXPECT_EQ(c->runs[0], &grid.runs()[1]);  // pointing into the grid's own copy
    EXPECT_EQ(g.cell(g.kinds[1], 0, 1024), nullptr);
    EXPECT_DOUBLE_EQ(g.overall.at(g.kinds[0]).contains.value(), 2.0 / 3.0);
}

// A store written before the full cache's run was keyed without its budget holds it once
// per budget of the sweep ("full B=128", "full B=256"): the grid counts it once.
TEST(NiahGrid, AFullRunStoredOncePerBudgetCountsOnce) {
    std::vector<NiahRunRecord> runs;
    for (const char* params : {"full B=128", "snapkv B=128", "full B=256", "snapkv B=256", "full B=100%"}) {
        NiahRunRecord r = niahRun(1, 1, 50, params);
        r.budget = r.method == "full" ? "-" : std::string(params).substr(std::string(params).find('=') + 1);
        runs.push_back(r);
    }
    const NiahGrid grid(runs);
    ASSERT_EQ(grid.groups().size(), 1u);
    const NiahGrid::Group& g = grid.groups()[0];
    ASSERT_EQ(g.kinds.size(), 3u);
    EXPECT_EQ(g.overall.at({"full", "-"}).runs, 1);
    EXPECT_EQ(g.overall.at({"snapkv", "128"}).runs, 1);
    EXPECT_EQ(g.overall.at({"snapkv", "256"}).runs, 1);
    EXPECT_EQ(grid.runs().size(), 3u);
    EXPECT_EQ(grid.runs()[0].params, "full B=128");  // the first one saved is kept
}

TEST(NiahRuns, AVersionOneStoreMigratesKeepingItsSessions) {
    const std::string path = test::storePath("v1.db");
    {
        Database db(path, path, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE);
        Migrations::apply(db, {StoreSchema::steps()[0]});
        db.exec("INSERT INTO sessions (name, created_ms, updated_ms) VALUES ('old', 1, 2)", "seed");
        EXPECT_EQ(db.pragmaInt("user_version"), 1);
        EXPECT_FALSE(db.hasTable("niah_runs"));
    }
    SessionStore store(path);
    const SessionInfo old = store.session("old");
    EXPECT_EQ(old.createdMs, 1);
    EXPECT_TRUE(store.saveNiahRun(niahRun(old.id, store.saveModel(test::sampleModel()), 0.0, "full")));
    Database db(path, path, SQLITE_OPEN_READONLY);
    EXPECT_EQ(db.pragmaInt("user_version"), int64_t(SessionStore::schemaVersion()));
}

TEST(SessionMerge, KeepsEveryRunOfEveryShardExactlyOnce) {
    const std::string a = test::storePath("a.db"), b = test::storePath("b.db"), c = test::storePath("c.db");
    {
        SessionStore sa(a);
        const int64_t m = sa.saveModel(test::sampleModel());
        const SessionInfo s = sa.createSession("sweep");
        sa.saveNiahRun(niahRun(s.id, m, 0.0, "full"));
        sa.saveNiahRun(niahRun(s.id, m, 0.0, "snapkv budget=64"));
        const int64_t p = sa.savePrompt(test::samplePrompt(s.id, m, 64));
        test::SampleShape small;
        small.promptLength = 64;
        small.kept = 8;
        sa.saveRun(test::sampleRun(3, s.id, p, small));
        const SessionInfo other = sa.createSession("other");
        sa.saveNiahRun(niahRun(other.id, m, 0.0, "full"));
    }
    {
        SessionStore sb(b);
        const int64_t m = sb.saveModel(test::sampleModel());
        const SessionInfo s = sb.createSession("sweep");
        sb.saveNiahRun(niahRun(s.id, m, 100.0, "full"));
        sb.saveNiahRun(niahRun(s.id, m, 0.0, "snapkv budget=64"));  // also in a: kept once
    }
    const SessionMerge::Result r = SessionMerge::merge({a, b}, c);
    EXPECT_EQ(r.runs, 1);
    EXPECT_EQ(r.niahRuns, 4);
    EXPECT_EQ(r.niahDuplicates, 1);
    EXPECT_EQ(r.sessions, 2);
    SessionStore sc(c, SessionStore::Access::ReadOnly);
    const SessionInfo sweep = sc.session("sweep");
    EXPECT_EQ(sweep.runCount, 1);
    std::multiset<std::string> keys;
    for (const NiahRunRecord& n : sc.niahRuns(sweep.id)) keys.insert(n.key().substr(n.key().find('|')));
    EXPECT_EQ(keys.size(), 3u);
    EXPECT_EQ(std::set<std::string>(keys.begin(), keys.end()).size(), 3u);
    EXPECT_EQ(sc.models(sweep.id).size(), 1u);  // one model record, shared by the shards
    EXPECT_EQ(sc.niahRuns(sc.session("other").id).size(), 1u);
}

TEST(SessionMerge, RefusesBadSourcesLeavingEveryFileAsItWas) {
    const std::string a = test::storePath("a.db"), newer = test::storePath("newer.db"),
                      c = test::storePath("c.db");
    {
        SessionStore sa(a), sc(c), sn(newer);
        sc.createSession("kept");
        sn.createSession("x");
    }
    {
        sqlite3* db = nullptr;
        ASSERT_EQ(sqlite3_open(newer.c_str(), &db), SQLITE_OK);
        ASSERT_EQ(sqlite3_exec(db, "PRAGMA user_version = 42; PRAGMA journal_mode = DELETE;", nullptr, nullptr,
                               nullptr),
                  SQLITE_OK);
        sqlite3_close(db);
    }
    const std::string newerBytes = test::fileBytes(newer), cBytes = test::fileBytes(c);
    EXPECT_NE(errorOf([&] { SessionMerge::merge({a, newer}, c); }).find(newer + ": written by a newer KV Lens"),
              std::string::npos);
    EXPECT_EQ(test::fileBytes(newer), newerBytes);
    EXPECT_EQ(test::fileBytes(c), cBytes);
    EXPECT_EQ(errorOf([&] { SessionMerge::merge({a, a}, c); }), "sessions merge: " + a + " is given twice");
    EXPECT_EQ(errorOf([&] { SessionMerge::merge({a, c}, c); }),
              "sessions merge: " + c + " is also the target (--into)");
    EXPECT_EQ(errorOf([&] { SessionMerge::merge({a + ".missing"}, c); }), a + ".missing: no such store");
    EXPECT_EQ(errorOf([&] { SessionMerge::merge({}, c); }), "sessions merge: no stores to merge");
}

}  // namespace
}  // namespace kvlens::sessions
