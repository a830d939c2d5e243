// Task evaluations in the store (schema 11, kvlens eval --save): saved and read back, one
// per key, damaged fields named; merged once each; a schema 10 store read as it is lists
// no eval runs, and gains the table when opened to write.
#include <gtest/gtest.h>

#include <sqlite3.h>

#include <cmath>
#include <cstdio>

#include "SampleRecords.h"
#include "TestPaths.h"
#include "core/Error.h"
#include "sessions/Database.h"
#include "sessions/SessionMerge.h"
#include "sessions/SessionStore.h"
#include "sessions/StoreSchema.h"

namespace kvlens::sessions {
namespace {

EvalRunRecord evalRun(int64_t session, int64_t model, const std::string& record, const std::string& params) {
    EvalRunRecord r;
    r.sessionId = session;
    r.modelId = model;
    r.source = "4e89b4f1";
    r.sourceName = "qa.jsonl";
    r.record = record;
    r.dataset = "hotpotqa";
    r.metric = "f1";
    r.tokens = 812;
    r.newTokens = 32;
    r.method = params.substr(0, params.find(' '));
    r.budget = "64";
    r.params = params;
    r.score = 0.4;
    r.agreement = 0.75;
    r.meanKl = std::nan("");
    r.answer = "Paris";
    r.expected = {"Paris", "paris, france"};
    return r;
}

TEST(EvalRuns, SavedOncePerKeyAndReadBackWhole) {
    const std::string path = test::storePath("eval_runs.db");
    SessionStore store(path);
    const int64_t model = store.saveModel(test::sampleModel());
    const SessionInfo s = store.createSession("eval");
    EXPECT_TRUE(store.saveEvalRun(evalRun(s.id, model, "line 1", "snapkv B=64")));
    EXPECT_FALSE(store.saveEvalRun(evalRun(s.id, model, "line 1", "snapkv B=64")));  // the same run
    EvalRunRecord other = evalRun(s.id, model, "line 1", "snapkv B=64");
    other.metric = "em";  // scored otherwise: another run
    EXPECT_TRUE(store.saveEvalRun(other));
    EXPECT_TRUE(store.saveEvalRun(evalRun(s.id, model, "line 2", "snapkv B=64")));
    const auto got = store.evalRuns(s.id);
    ASSERT_EQ(got.size(), 3u);
    const EvalRunRecord want = evalRun(s.id, model, "line 1", "snapkv B=64");
    EXPECT_EQ(got[0].key(), want.key());
    EXPECT_EQ(got[0].expected, want.expected);
    EXPECT_EQ(got[0].score, 0.4);
    EXPECT_TRUE(std::isnan(got[0].meanKl));
    EXPECT_EQ(store.session("eval").evalRunCount, 3);
    EXPECT_EQ(store.models(s.id).size(), 1u);  // an eval run's model counts as the session's

    // A damaged field is named, not read as a score.
    {
        Database db(path, path, SQLITE_OPEN_READWRITE);
        db.exec("UPDATE eval_runs SET score = 7 WHERE id = 1", "damage");
    }
    try {
        store.evalRuns(s.id);
        ADD_FAILURE() << "a score of 7 was read";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("eval run 1: field score is 7.000000, outside 0..1"), std::string::npos)
            << e.what();
    }
    store.deleteSession("eval");  // cascades; the model goes with it
    EXPECT_TRUE(store.models(store.createSession("eval").id).empty());
}

TEST(EvalRuns, ShardsMergeOnceEach) {
    const std::string a = test::storePath("eval_a.db"), b = test::storePath("eval_b.db"),
                      into = test::storePath("eval_merged.db");
    for (const std::string& p : {a, b, into}) std::remove(p.c_str());
    for (const auto& [path, record] : {std::make_pair(a, "line 1"), std::make_pair(b, "line 2")}) {
        SessionStore store(path);
        const int64_t model = store.saveModel(test::sampleModel());
        const SessionInfo s = store.createSession("eval");
        store.saveEvalRun(evalRun(s.id, model, record, "snapkv B=64"));
        store.saveEvalRun(evalRun(s.id, model, record, "full B=100%"));
    }
    SessionMerge::Result r = SessionMerge::merge({a, b}, into);
    EXPECT_EQ(r.evalRuns, 4);
    r = SessionMerge::merge({b}, into);  // again: nothing twice
    EXPECT_EQ(r.evalRuns, 0);
    EXPECT_EQ(r.evalDuplicates, 2);
    SessionStore store(into, SessionStore::Access::ReadOnly);
    EXPECT_EQ(store.evalRuns(store.session("eval").id).size(), 4u);
}

TEST(EvalRuns, ASchemaTenStoreReadsAsItIsAndGainsTheTableWhenWritten) {
    const std::string path = test::storePath("eval_schema10.db");
    {
        SessionStore store(path);
        store.createSession("old");
    }
    {
        Database db(path, path, SQLITE_OPEN_READWRITE);
        db.exec("DROP TABLE eval_runs; PRAGMA user_version = 10;", "make a schema 10 store");
    }
    {
        SessionStore store(path, SessionStore::Access::ReadOnly);
        EXPECT_EQ(store.session("old").evalRunCount, 0);
        EXPECT_TRUE(store.evalRuns(store.session("old").id).empty());
        EXPECT_EQ(store.models(store.session("old").id).size(), 0u);
    }
    SessionStore store(path);  // read-write: migrated
    EXPECT_TRUE(store.saveEvalRun(evalRun(store.session("old").id, store.saveModel(test::sampleModel()), "#0",
                                          "snapkv B=64")));
    Database db(path, path, SQLITE_OPEN_READONLY);
    EXPECT_EQ(db.pragmaInt("user_version"), int64_t(StoreSchema::version()));
}

}  // namespace
}  // namespace kvlens::sessions
