// Round trips of every table (sessions, models, prompts, runs with their
// selections, metrics and statistics), listings, rename/delete, migrations.
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <cstdlib>
#include <fstream>
#include <limits>

#include "RecordEquality.h"
#include "OlderSchema.h"
#include "SampleRecords.h"
#include "TestPaths.h"
#include "core/Error.h"
#include "core/ParamsJson.h"
#include "sessions/Database.h"
#include "sessions/Migrations.h"
#include "sessions/ModelFile.h"
#include "sessions/RunRecorder.h"
#include "sessions/Sha256.h"
#include "sessions/SessionStore.h"
#include "sessions/Statement.h"
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

TEST(SessionStore, NewStoreHasTheSchemaVersionApplicationIdAndWal) {
    const std::string path = test::storePath("new.db");
    { SessionStore store(path); }
    Database db(path, path, SQLITE_OPEN_READONLY);
    EXPECT_EQ(db.pragmaInt("user_version"), int64_t(SessionStore::schemaVersion()));
    EXPECT_EQ(uint32_t(db.pragmaInt("application_id")), StoreSchema::kApplicationId);
    Statement mode(db, "PRAGMA journal_mode", "read");
    ASSERT_TRUE(mode.step());
    EXPECT_EQ(mode.getText(0), "wal");
}

TEST(SessionStore, CreatesMissingFolders) {
    const std::string dir = test::storePath("nested");
    const std::string path = dir + "/a/b/sessions.db";
    { SessionStore store(path); }
    EXPECT_TRUE(SessionStore(path, SessionStore::Access::ReadOnly).sessions().empty());
}

TEST(SessionStore, SessionsRoundTrip) {
    const std::string path = test::storePath("sessions.db");
    SessionStore store(path);
    SessionInfo info;
    info.name = "long prompt \xc3\xa9tude";
    info.notes = "notes\nwith two lines and 'quotes'";
    info.createdMs = 1234567890123;
    info.updatedMs = 1234567899999;
    info.uiState = R"({"layer":3,"head":[1,2],"zoom":0.25})";
    const SessionInfo created = store.createSession(info);
    const SessionInfo back = store.session(info.name);
    EXPECT_EQ(back.id, created.id);
    EXPECT_EQ(back.name, info.name);
    EXPECT_EQ(back.notes, info.notes);
    EXPECT_EQ(back.createdMs, info.createdMs);
    EXPECT_EQ(back.updatedMs, info.updatedMs);
    EXPECT_EQ(back.uiState, info.uiState);
    EXPECT_EQ(back.runCount, 0);

    const SessionInfo plain = store.createSession("plain", "n");
    EXPECT_EQ(plain.uiState, "{}");
    EXPECT_GT(plain.createdMs, 1600000000000);
    store.setNotes("plain", "new notes");
    store.setUiState("plain", R"({"a":1})");
    EXPECT_EQ(store.session("plain").notes, "new notes");
    EXPECT_EQ(store.session("plain").uiState, R"({"a":1})");
    EXPECT_EQ(errorOf([&] { store.setUiState("plain", "{oops"); }),
              "UI state of session 'plain' is not valid JSON");

    const auto all = store.sessions();
    ASSERT_EQ(all.size(), 2u);
    EXPECT_EQ(all[0].name, info.name);  // sorted by name: 'l' < 'p'
    EXPECT_EQ(store.openSession("plain").id, plain.id);
    EXPECT_EQ(errorOf([&] { store.createSession("plain"); }),
              path + ": a session named 'plain' already exists");
    EXPECT_EQ(errorOf([&] { store.session("nope"); }),
              path + ": no session 'nope' (sessions: " + info.name + ", plain)");
    EXPECT_EQ(errorOf([&] { store.createSession(""); }), "session name is empty");
    EXPECT_EQ(errorOf([&] { store.createSession("a\nb"); }),
              "session name 'a\\x0ab' has a control character");  // one line, the break shown
}

TEST(SessionStore, ModelsRoundTripAndDeduplicate) {
    SessionStore store(test::storePath("models.db"));
    ModelRecord m = test::sampleModel();
    m.spec = "/models/x.gguf";
    m.isFile = true;
    m.path = "/models/x.gguf";
    m.sizeBytes = 4'000'000'123;
    m.mtimeNs = 1700000000123456789;
    m.sha256 = "ab12";
    m.ropeTheta = 500000.0 + 1.0 / 3.0;
    const int64_t id = store.saveModel(m);
    const ModelRecord back = store.model(id);
    EXPECT_EQ(back.id, id);
    EXPECT_EQ(back.spec, m.spec);
    EXPECT_EQ(back.isFile, m.isFile);
    EXPECT_EQ(back.path, m.path);
    EXPECT_EQ(back.sizeBytes, m.sizeBytes);
    EXPECT_EQ(back.mtimeNs, m.mtimeNs);
    EXPECT_EQ(back.sha256, m.sha256);
    EXPECT_EQ(back.architecture, m.architecture);
    EXPECT_EQ(back.name, m.name);
    EXPECT_EQ(back.layers, m.layers);
    EXPECT_EQ(back.heads, m.heads);
    EXPECT_EQ(back.kvHeads, m.kvHeads);
    EXPECT_EQ(back.headDim, m.headDim);
    EXPECT_EQ(back.embedDim, m.embedDim);
    EXPECT_EQ(back.ffnDim, m.ffnDim);
    EXPECT_EQ(back.vocabSize, m.vocabSize);
    EXPECT_EQ(back.contextLength, m.contextLength);
    EXPECT_TRUE(test::sameBits(back.ropeTheta, m.ropeTheta));

    EXPECT_EQ(store.saveModel(m), id);  // the same model again: the same row
    EXPECT_EQ(store.knownSha256(m.path, m.sizeBytes, m.mtimeNs),
              std::optional<std::string>("ab12"));
    EXPECT_FALSE(store.knownSha256(m.path, m.sizeBytes, m.mtimeNs + 1));
    m.mtimeNs += 1;
    EXPECT_NE(store.saveModel(m), id);  // touched file: a new record
    const int64_t randomId = store.saveModel(test::sampleModel());
    EXPECT_FALSE(store.model(randomId).isFile);
    EXPECT_EQ(errorOf([&] { store.model(999); }), store.path() + ": no model with id 999");
}

TEST(SessionStore, PromptsRoundTripAndDeduplicate) {
    SessionStore store(test::storePath("prompts.db"));
    const int64_t session = store.createSession("s").id;
    const int64_t model = store.saveModel(test::sampleModel());
    PromptRecord p = test::samplePrompt(session, model, 8192);
    p.tokenIds.push_back(std::numeric_limits<int32_t>::max());
    p.addBos = false;
    const int64_t id = store.savePrompt(p);
    const PromptRecord back = store.prompt(id);
    EXPECT_EQ(back.id, id);
    EXPECT_EQ(back.sessionId, session);
    EXPECT_EQ(back.modelId, model);
    EXPECT_EQ(back.text, p.text);
    EXPECT_EQ(back.addBos, false);
    EXPECT_EQ(back.tokenIds, p.tokenIds);
    EXPECT_EQ(store.savePrompt(p), id);
    p.tokenIds.pop_back();
    EXPECT_NE(store.savePrompt(p), id);
    EXPECT_EQ(store.prompts(session).size(), 2u);
    EXPECT_EQ(store.models(session).size(), 1u);
    p.sessionId = 77;
    EXPECT_EQ(errorOf([&] { store.savePrompt(p); }), store.path() + ": no session with id 77");
}

TEST(SessionStore, RunsRoundTripEveryField) {
    const std::string path = test::storePath("runs.db");
    int64_t session, prompt;
    std::vector<RunRecord> saved;
    {
        SessionStore store(path);
        session = store.createSession("s").id;
        const int64_t model = store.saveModel(test::sampleModel());
        prompt = store.savePrompt(test::samplePrompt(session, model));
        for (uint64_t seed = 1; seed <= 3; ++seed) {
            RunRecord r = test::sampleRun(seed, session, prompt, {22, 4, 8192, 700});
            if (seed == 2) {  // NaN metrics (SQL NULL) and a failed run with its error
                r.metrics.meanKl = std::numeric_limits<double>::quiet_NaN();
                r.status = "failed";
                r.error = "out of memory";
                r.layerStats.clear();
            }
            if (seed == 3) {
                r.selection.kept.clear();  // a run without a selection
                r.selection.layerBudgets.clear();
            }
            r.id = store.saveRun(r);
            saved.push_back(r);
        }
    }
    SessionStore store(path, SessionStore::Access::ReadOnly);  // after a reopen
    for (const RunRecord& r : saved) {
        SCOPED_TRACE(r.id);
        test::expectSameRun(store.run(r.id), r);
    }
    const auto list = store.runs(session);
    ASSERT_EQ(list.size(), 3u);
    EXPECT_EQ(list[0].id, saved[0].id);
    EXPECT_EQ(list[0].params.method, saved[0].params.method);
    EXPECT_EQ(list[0].params.seed, saved[0].params.seed);
    EXPECT_EQ(list[2].params.lag, saved[2].params.lag);
    EXPECT_EQ(list[2].params.future, saved[2].params.future);
    EXPECT_EQ(list[0].bytes, saved[0].metrics.bytes);
    EXPECT_EQ(list[0].promptTokens, 512);
    EXPECT_EQ(list[1].status, "failed");
    EXPECT_TRUE(std::isnan(list[1].meanKl));
    EXPECT_EQ(store.session("s").runCount, 3);
    EXPECT_EQ(errorOf([&] { store.run(12345); }), path + ": no run with id 12345");
}

TEST(SessionStore, RunsOfAVersionTwoStoreReadTheNewSettingsAsTheirDefaults) {
    const std::string path = test::storePath("v2runs.db");
    int64_t id;
    {
        SessionStore store(path);
        const int64_t session = store.createSession("s").id;
        const int64_t prompt = store.savePrompt(test::samplePrompt(session, store.saveModel(test::sampleModel())));
        id = store.saveRun(test::sampleRun(5, session, prompt));
    }
    {
        // What a version 2 store's runs table was: without the three settings.
        test::downgradeToSchema9(path);
        Database db(path, path, SQLITE_OPEN_READWRITE);
        db.exec("ALTER TABLE runs DROP COLUMN lag; ALTER TABLE runs DROP COLUMN chunk_size; "
                "ALTER TABLE runs DROP COLUMN future; ALTER TABLE runs DROP COLUMN scorer; "
                "ALTER TABLE runs DROP COLUMN tau1; ALTER TABLE runs DROP COLUMN tau2; "
                "ALTER TABLE runs DROP COLUMN gamma; ALTER TABLE runs DROP COLUMN lazy; ALTER TABLE runs DROP COLUMN layer_weights; "
                "DROP TABLE model_files; ALTER TABLE runs DROP COLUMN sketch; ALTER TABLE runs DROP COLUMN attn_chunk; ALTER TABLE runs DROP COLUMN blend; ALTER TABLE runs DROP COLUMN think; ALTER TABLE runs DROP COLUMN repeat_chunk; ALTER TABLE runs DROP COLUMN finch_chunk; ALTER TABLE runs DROP COLUMN convention; ALTER TABLE metrics DROP COLUMN allocated_bytes; ALTER TABLE metrics DROP COLUMN decode_every; ALTER TABLE metrics DROP COLUMN cache_entries; ALTER TABLE selection_heads DROP COLUMN pruned_channels; PRAGMA user_version = 2;",
                "make a version 2 store");
    }
    const PressParams defaults;
    auto expectDefaults = [&](const PressParams& p) {
        EXPECT_EQ(p.lag, defaults.lag);
        EXPECT_EQ(p.chunk, defaults.chunk);
        EXPECT_EQ(p.future, defaults.future);
        EXPECT_EQ(p.scorer, defaults.scorer);
        EXPECT_EQ(p.tau1, defaults.tau1);
        EXPECT_EQ(p.gamma, defaults.gamma);
        EXPECT_EQ(p.lazy, defaults.lazy);
    };
    {
        // Read-only (sessions list and show, reports, the source of an import or a merge):
        // read as it is, the file left at schema 2.
        SessionStore store(path, SessionStore::Access::ReadOnly);
        expectDefaults(store.run(id).params);
        const auto list = store.runs(store.session("s").id);
        ASSERT_EQ(list.size(), 1u);
        expectDefaults(list[0].params);
        EXPECT_EQ(list[0].params.method, "snapkv");
    }
    {
        Database db(path, path, SQLITE_OPEN_READONLY);
        EXPECT_EQ(db.pragmaInt("user_version"), 2);
    }
    SessionStore store(path);  // read-write: migrated
    expectDefaults(store.run(id).params);
    Database db(path, path, SQLITE_OPEN_READONLY);
    EXPECT_EQ(db.pragmaInt("user_version"), int64_t(StoreSchema::version()));
}

// Schema 5's settings (the scorer, CAKE's tau1/tau2/gamma, SimLayerKV's lazy threshold)
// come back as saved, in the run and in its selection; a schema 4 store reads them as
// their defaults, read-only, and gains the columns when opened to write.
TEST(SessionStore, TheScorerAndCakeSettingsComeBackAsSaved) {
    const std::string path = test::storePath("v5settings.db");
    int64_t id = 0, session = 0;
    {
        SessionStore store(path);
        session = store.createSession("s").id;
        const int64_t prompt = store.savePrompt(test::samplePrompt(session, store.saveModel(test::sampleModel())));
        RunRecord run = test::sampleRun(5, session, prompt);
        run.params.method = "cake";
        run.params.scorer = "knorm";
        run.params.tau1 = 1.6;
        run.params.tau2 = 0.4;
        run.params.gamma = 150.0;
        run.params.lazy = 0.65;
        run.params.layerWeights = {2.0, 0.5};
        run.selection.params = run.params;
        id = store.saveRun(run);
    }
    {
        SessionStore store(path, SessionStore::Access::ReadOnly);
        const RunRecord r = store.run(id);
        for (const PressParams& p : {r.params, r.selection.params, store.runs(session).at(0).params}) {
            EXPECT_EQ(p.method, "cake");
            EXPECT_EQ(p.scorer, "knorm");
            EXPECT_EQ(p.tau1, 1.6);
            EXPECT_EQ(p.tau2, 0.4);
            EXPECT_EQ(p.gamma, 150.0);
            EXPECT_EQ(p.lazy, 0.65);
            EXPECT_EQ(p.layerWeights, (std::vector<double>{2.0, 0.5}));
        }
    }
    {
        test::downgradeToSchema9(path);
        Database db(path, path, SQLITE_OPEN_READWRITE);
        db.exec("ALTER TABLE runs DROP COLUMN scorer; ALTER TABLE runs DROP COLUMN tau1; ALTER TABLE runs DROP "
                "COLUMN tau2; ALTER TABLE runs DROP COLUMN gamma; ALTER TABLE runs DROP COLUMN lazy; ALTER TABLE runs DROP COLUMN layer_weights;"
                " ALTER TABLE runs DROP COLUMN sketch; ALTER TABLE runs DROP COLUMN attn_chunk; ALTER TABLE runs DROP COLUMN blend; ALTER TABLE runs DROP COLUMN think; ALTER TABLE runs DROP COLUMN repeat_chunk; ALTER TABLE runs DROP COLUMN finch_chunk; ALTER TABLE runs DROP COLUMN convention; ALTER TABLE metrics DROP COLUMN allocated_bytes; ALTER TABLE metrics DROP COLUMN decode_every; ALTER TABLE metrics DROP COLUMN cache_entries; ALTER TABLE selection_heads DROP COLUMN pruned_channels; PRAGMA user_version = 4;",
                "make a version 4 store");
    }
    const PressParams defaults;
    {
        SessionStore store(path, SessionStore::Access::ReadOnly);
        const PressParams p = store.runs(session).at(0).params;
        EXPECT_EQ(p.scorer, "");
        EXPECT_EQ(p.tau1, defaults.tau1);
        EXPECT_EQ(p.gamma, defaults.gamma);
        EXPECT_EQ(p.lazy, defaults.lazy);
        EXPECT_TRUE(p.layerWeights.empty());
        Database db(path, path, SQLITE_OPEN_READONLY);
        EXPECT_EQ(db.pragmaInt("user_version"), 4);
    }
    SessionStore store(path);  // read-write: migrated
    EXPECT_EQ(store.run(id).params.tau2, defaults.tau2);
    Database db(path, path, SQLITE_OPEN_READONLY);
    EXPECT_EQ(db.pragmaInt("user_version"), int64_t(StoreSchema::version()));
}

// Schema 6's settings (LeverageScore's and Compactor's sketch, the non-causal attention's
// chunk, Compactor's blend, "auto" as -1) come back as saved; a schema 5 store reads
// them as their defaults, read-only, and gains the columns when opened to write.
TEST(SessionStore, TheCompactorSettingsComeBackAsSaved) {
    const std::string path = test::storePath("v6settings.db");
    int64_t id = 0, session = 0;
    {
        SessionStore store(path);
        session = store.createSession("s").id;
        const int64_t prompt = store.savePrompt(test::samplePrompt(session, store.saveModel(test::sampleModel())));
        RunRecord run = test::sampleRun(5, session, prompt);
        run.params.method = "adakv";
        run.params.scorer = "compactor";
        run.params.sketch = 20;
        run.params.attnChunk = 100;
        run.params.blend = 0.35;
        run.params.think = 0.5;
        run.selection.params = run.params;
        run.selection.prunedChannels.assign(run.selection.kept.size(), {});
        for (size_t l = 0; l < run.selection.kept.size(); ++l)
            for (size_t h = 0; h < run.selection.kept[l].size(); ++h)
                run.selection.prunedChannels[l].push_back({int32_t(l), int32_t(3 + h), 7});
        id = store.saveRun(run);
    }
    {
        SessionStore store(path, SessionStore::Access::ReadOnly);
        const RunRecord r = store.run(id);
        for (const PressParams& p : {r.params, r.selection.params, store.runs(session).at(0).params}) {
            EXPECT_EQ(p.scorer, "compactor");
            EXPECT_EQ(p.sketch, 20);
            EXPECT_EQ(p.attnChunk, 100);
            EXPECT_EQ(p.blend, 0.35);
            EXPECT_EQ(p.think, 0.5);
        }
        ASSERT_FALSE(r.selection.prunedChannels.empty());
        EXPECT_EQ(r.selection.prunedChannels[0][0], (std::vector<int32_t>{0, 3, 7}));
        EXPECT_EQ(r.selection.prunedChannels.back().back(),
                  (std::vector<int32_t>{int32_t(r.selection.kept.size() - 1), int32_t(2 + r.selection.kept.back().size()), 7}));
    }
    {
        test::downgradeToSchema9(path);
        Database db(path, path, SQLITE_OPEN_READWRITE);
        db.exec("ALTER TABLE runs DROP COLUMN sketch; ALTER TABLE runs DROP COLUMN attn_chunk; ALTER TABLE runs DROP "
                "COLUMN blend; ALTER TABLE runs DROP COLUMN think; ALTER TABLE runs DROP COLUMN repeat_chunk; ALTER TABLE runs DROP COLUMN finch_chunk; ALTER TABLE runs DROP COLUMN convention; ALTER TABLE metrics DROP COLUMN allocated_bytes; ALTER TABLE metrics DROP COLUMN decode_every; ALTER TABLE metrics DROP COLUMN cache_entries; ALTER TABLE selection_heads DROP COLUMN pruned_channels; "
                "PRAGMA user_version = 5;",
                "make a version 5 store");
    }
    const PressParams defaults;
    {
        SessionStore store(path, SessionStore::Access::ReadOnly);
        const PressParams p = store.runs(session).at(0).params;
        EXPECT_EQ(p.scorer, "compactor");
        EXPECT_EQ(p.sketch, defaults.sketch);
        EXPECT_EQ(p.attnChunk, defaults.attnChunk);
        EXPECT_EQ(p.blend, defaults.blend);
        EXPECT_EQ(p.think, 0.0);
        EXPECT_TRUE(store.run(id).selection.prunedChannels.empty());
        Database db(path, path, SQLITE_OPEN_READONLY);
        EXPECT_EQ(db.pragmaInt("user_version"), 5);
    }
    SessionStore store(path);  // read-write: migrated
    EXPECT_EQ(store.run(id).params.blend, -1.0);
    Database db(path, path, SQLITE_OPEN_READONLY);
    EXPECT_EQ(db.pragmaInt("user_version"), int64_t(StoreSchema::version()));
}

TEST(SessionStore, KvzipsRepeatChunkTheAllocatedBytesAndTheDecodesCompressionComeBackAsSaved) {
    const std::string path = test::storePath("v7settings.db");
    int64_t id = 0, session = 0;
    {
        SessionStore store(path);
        session = store.createSession("s").id;
        const int64_t prompt = store.savePrompt(test::samplePrompt(session, store.saveModel(test::sampleModel())));
        RunRecord run = test::sampleRun(5, session, prompt);
        run.params.method = "kvzip";
        run.params.repeatChunk = 300;
        run.selection.params = run.params;
        run.metrics.allocatedBytes = 123456;
        run.metrics.decodeEvery = 4;
        run.metrics.cacheEntries = {96, 97, 98, 99, 96, 97};
        id = store.saveRun(run);
    }
    {
        SessionStore store(path, SessionStore::Access::ReadOnly);
        const RunRecord r = store.run(id);
        for (const PressParams& p : {r.params, r.selection.params, store.runs(session).at(0).params}) {
            EXPECT_EQ(p.method, "kvzip");
            EXPECT_EQ(p.repeatChunk, 300);
        }
        EXPECT_EQ(r.metrics.allocatedBytes, 123456);
        EXPECT_EQ(r.metrics.decodeEvery, 4);
        EXPECT_EQ(r.metrics.cacheEntries, (std::vector<int64_t>{96, 97, 98, 99, 96, 97}));
    }
    {
        test::downgradeToSchema9(path);
        Database db(path, path, SQLITE_OPEN_READWRITE);
        db.exec("ALTER TABLE runs DROP COLUMN repeat_chunk; ALTER TABLE runs DROP COLUMN finch_chunk; ALTER TABLE runs DROP COLUMN convention; ALTER TABLE metrics DROP COLUMN allocated_bytes; ALTER TABLE metrics DROP COLUMN decode_every; ALTER TABLE metrics DROP COLUMN cache_entries; PRAGMA user_version = 6;", "make a version 6 store");
    }
    {
        SessionStore store(path, SessionStore::Access::ReadOnly);
        EXPECT_EQ(store.runs(session).at(0).params.repeatChunk, PressParams().repeatChunk);
        EXPECT_EQ(store.run(id).metrics.allocatedBytes, 0);  // not recorded
        EXPECT_EQ(store.run(id).metrics.decodeEvery, 0);
        EXPECT_TRUE(store.run(id).metrics.cacheEntries.empty());
        Database db(path, path, SQLITE_OPEN_READONLY);
        EXPECT_EQ(db.pragmaInt("user_version"), 6);
    }
    SessionStore store(path);  // read-write: migrated
    EXPECT_EQ(store.run(id).params.repeatChunk, 2048);
    Database db(path, path, SQLITE_OPEN_READONLY);
    EXPECT_EQ(db.pragmaInt("user_version"), int64_t(StoreSchema::version()));
}

TEST(SessionStore, FinchsChunkComesBackAsSaved) {
    const std::string path = test::storePath("v8settings.db");
    int64_t id = 0, session = 0;
    {
        SessionStore store(path);
        session = store.createSession("s").id;
        const int64_t prompt = store.savePrompt(test::samplePrompt(session, store.saveModel(test::sampleModel())));
        RunRecord run = test::sampleRun(5, session, prompt);
        run.params.method = "finch";
        run.params.finchChunk = 300;
        run.selection.params = run.params;
        id = store.saveRun(run);
    }
    {
        SessionStore store(path, SessionStore::Access::ReadOnly);
        const RunRecord r = store.run(id);
        for (const PressParams& p : {r.params, r.selection.params, store.runs(session).at(0).params}) {
            EXPECT_EQ(p.method, "finch");
            EXPECT_EQ(p.finchChunk, 300);
        }
    }
    {
        test::downgradeToSchema9(path);
        Database db(path, path, SQLITE_OPEN_READWRITE);
        db.exec("ALTER TABLE runs DROP COLUMN finch_chunk; ALTER TABLE runs DROP COLUMN convention; PRAGMA user_version = 7;", "make a version 7 store");
    }
    {
        SessionStore store(path, SessionStore::Access::ReadOnly);
        EXPECT_EQ(store.runs(session).at(0).params.finchChunk, PressParams().finchChunk);
        EXPECT_EQ(store.run(id).params.finchChunk, PressParams().finchChunk);
        Database db(path, path, SQLITE_OPEN_READONLY);
        EXPECT_EQ(db.pragmaInt("user_version"), 7);
    }
    SessionStore store(path);  // read-write: migrated
    EXPECT_EQ(store.run(id).params.finchChunk, 512);
    Database db(path, path, SQLITE_OPEN_READONLY);
    EXPECT_EQ(db.pragmaInt("user_version"), int64_t(StoreSchema::version()));
}

TEST(SessionStore, TheConventionComesBackAsSavedAndOlderRunsFollowThePapers) {
    const std::string path = test::storePath("v9settings.db");
    int64_t id = 0, session = 0;
    {
        SessionStore store(path);
        session = store.createSession("s").id;
        const int64_t prompt = store.savePrompt(test::samplePrompt(session, store.saveModel(test::sampleModel())));
        RunRecord run = test::sampleRun(5, session, prompt);
        run.params.method = "pyramidkv";
        run.params.convention = Convention::Kvpress;
        run.params.budget = 0;
        run.params.budgetRatio = 1.0 - 0.3;  // --compression-ratio 0.3
        run.selection.params = run.params;
        id = store.saveRun(run);
    }
    {
        SessionStore store(path, SessionStore::Access::ReadOnly);
        const RunRecord r = store.run(id);
        for (const PressParams& p : {r.params, r.selection.params, store.runs(session).at(0).params}) {
            EXPECT_EQ(p.convention, Convention::Kvpress);
            EXPECT_EQ(p.budgetRatio, 1.0 - 0.3);  // to the last bit
            EXPECT_EQ(PressParams::fromDescription(p.describe()).convention, Convention::Kvpress);
        }
    }
    {
        test::downgradeToSchema9(path);
        Database db(path, path, SQLITE_OPEN_READWRITE);
        db.exec("ALTER TABLE runs DROP COLUMN convention; PRAGMA user_version = 8;", "make a version 8 store");
    }
    {
        SessionStore store(path, SessionStore::Access::ReadOnly);
        EXPECT_EQ(store.run(id).params.convention, Convention::Paper);
        Database db(path, path, SQLITE_OPEN_READONLY);
        EXPECT_EQ(db.pragmaInt("user_version"), 8);
    }
    SessionStore store(path);  // read-write: migrated
    EXPECT_EQ(store.run(id).params.convention, Convention::Paper);
    Database db(path, path, SQLITE_OPEN_READONLY);
    EXPECT_EQ(db.pragmaInt("user_version"), int64_t(StoreSchema::version()));
}

// Schema 10 moved the knob columns into runs.params: every knob of a schema 9 run, set away
// from its default (doubles no 15-digit text holds, the largest seeds), reads the same read-only
// from the old columns and after the migration from the JSON, to the last bit.
TEST(SessionStore, MigratingToSchemaTenMovesEveryKnobIntoParamsExactly) {
    const std::string path = test::storePath("v10knobs.db");
    int64_t id = 0, session = 0;
    {
        SessionStore store(path);
        session = store.createSession("s").id;
        const int64_t prompt = store.savePrompt(test::samplePrompt(session, store.saveModel(test::sampleModel())));
        id = store.saveRun(test::sampleRun(5, session, prompt));
    }
    test::downgradeToSchema9(path);
    PressParams want;
    want.method = "adakv";
    want.budget = 0;
    want.budgetRatio = 1.0 - 0.3;
    want.window = 17, want.kernel = 5, want.pooling = Pooling::Avg, want.gqa = GqaMode::QueryHead;
    want.schedule = PyramidSchedule::Factory, want.beta = 0.1 + 0.2, want.alpha = 1.0 / 3.0, want.sinks = 9;
    want.seed = std::numeric_limits<uint64_t>::max() - 1, want.lag = 33, want.chunk = 7, want.future = 99;
    want.scorer = "keydiff", want.tau1 = 2.0 / 3.0, want.tau2 = 1e-300, want.gamma = 123.456789012345678;
    want.lazy = 0.7, want.layerWeights = {0.1, 0.1 + 0.2}, want.sketch = 31, want.attnChunk = 77;
    want.blend = 0.25, want.think = 0.125, want.repeatChunk = 1000, want.finchChunk = 300;
    want.convention = Convention::Kvpress;
    {
        Database db(path, path, SQLITE_OPEN_READWRITE);
        Statement set(db,
                      "UPDATE runs SET method = ?, budget = ?, budget_ratio = ?, window_size = ?, kernel = ?, "
                      "pooling = ?, gqa = ?, schedule = ?, beta = ?, alpha = ?, sinks = ?, seed = ?, lag = ?, "
                      "chunk_size = ?, future = ?, scorer = ?, tau1 = ?, tau2 = ?, gamma = ?, lazy = ?, "
                      "layer_weights = ?, sketch = ?, attn_chunk = ?, blend = ?, think = ?, repeat_chunk = ?, "
                      "finch_chunk = ?, convention = ?",
                      "set every knob");
        set.bind(1, want.method).bind(2, want.budget).bind(3, want.budgetRatio).bind(4, want.window);
        set.bind(5, want.kernel).bind(6, std::string("avg")).bind(7, std::string("query-head"));
        set.bind(8, std::string("factory")).bind(9, want.beta).bind(10, want.alpha).bind(11, want.sinks);
        set.bind(12, int64_t(want.seed)).bind(13, want.lag).bind(14, want.chunk).bind(15, want.future);
        set.bind(16, want.scorer).bind(17, want.tau1).bind(18, want.tau2).bind(19, want.gamma).bind(20, want.lazy);
        set.bind(21, std::string("[0.1,0.30000000000000004]")).bind(22, want.sketch).bind(23, want.attnChunk);
        set.bind(24, want.blend).bind(25, want.think).bind(26, want.repeatChunk).bind(27, want.finchChunk);
        set.bind(28, std::string("kvpress"));
        set.run();
    }
    const nlohmann::json expected = methods::paramsJson(want);
    {
        SessionStore store(path, SessionStore::Access::ReadOnly);  // schema 9, read as it is
        EXPECT_EQ(methods::paramsJson(store.run(id).params), expected);
        EXPECT_EQ(methods::paramsJson(store.runs(session).at(0).params), expected);
    }
    {
        SessionStore store(path);  // migrated
        EXPECT_EQ(methods::paramsJson(store.run(id).params), expected);
        EXPECT_EQ(methods::paramsJson(store.runs(session).at(0).params), expected);
        EXPECT_EQ(store.run(id).params.describe(), want.describe());
    }
    Database db(path, path, SQLITE_OPEN_READONLY);
    EXPECT_EQ(db.pragmaInt("user_version"), int64_t(StoreSchema::version()));
    Statement columns(db, "SELECT group_concat(name, ' ') FROM pragma_table_info('runs')", "list the columns");
    ASSERT_TRUE(columns.step());
    const std::string names = " " + columns.getText(0) + " ";
    for (const char* gone : {"window_size", "kernel", "pooling", "seed", "layer_weights", "convention"})
        EXPECT_EQ(names.find(std::string(" ") + gone + " "), std::string::npos) << gone << " in" << names;
    EXPECT_NE(names.find(" params "), std::string::npos) << names;
    Statement stored(db, "SELECT json_extract(params, '$.tau1'), json_extract(params, '$.convention') FROM runs",
                     "read the knobs");
    ASSERT_TRUE(stored.step());
    EXPECT_EQ(stored.getText(1), "kvpress");
}

TEST(SessionStore, AStoredKnobOfTheWrongTypeOrRangeIsNamedWithItsRun) {
    const std::string path = test::storePath("badknobs.db");
    int64_t id = 0;
    {
        SessionStore store(path);
        const int64_t session = store.createSession("s").id;
        const int64_t prompt = store.savePrompt(test::samplePrompt(session, store.saveModel(test::sampleModel())));
        id = store.saveRun(test::sampleRun(5, session, prompt));
    }
    const std::string run = path + ": run " + std::to_string(id);
    const std::vector<std::pair<std::string, std::string>> cases = {
        {"json_set(params, '$.convention', 'kvpres')", run + ".params.convention 'kvpres' is not paper or kvpress"},
        {"json_set(params, '$.window', 0)", run + ".params.window '0' is not an integer in [1, 1048576]"},
        {"json_set(params, '$.window', 'wide')", run + ".params.window: expected an integer, got a string"},
        {"json_set(params, '$.beta', 'x')", run + ".params.beta: expected a number, got a string"},
        {"json_set(params, '$.scorer', 'attention')",
         run + ".params.scorer 'attention' is not one of snapkv, h2o, tova, knorm, keydiff, lagkv, expected, cur, cake, "
               "leverage, noncausal, compactor, kvzip"},
        {"json_set(params, '$.layer_weights', json_array(1, 'two'))",
         run + ".params.layer_weights[]: expected a number, got a string"},
        {"json_set(params, '$.wobble', 3)", run + ".params: 'wobble' is not a parameter of a method"},
        {"json_array(1, 2)", run + ".params: expected an object of parameters, got a list"},
        {"'{'", run + ".params: not JSON, or a number beyond a double (the store is damaged)"},
        {"'{\"window\": 1e400}'", run + ".params: not JSON, or a number beyond a double (the store is damaged)"},
    };
    for (const auto& [expression, message] : cases) {
        {
            Database db(path, path, SQLITE_OPEN_READWRITE);
            // The column's CHECK refuses text that is not JSON; a store written by hand without it is read all the same.
            db.exec("PRAGMA ignore_check_constraints = 1; UPDATE runs SET params = " + expression + ";",
                    "spoil the knobs");
        }
        SessionStore store(path, SessionStore::Access::ReadOnly);
        EXPECT_EQ(errorOf([&] { (void)store.run(id); }), message) << expression;
        EXPECT_EQ(errorOf([&] { (void)store.runs(store.session("s").id); }), message) << expression;
        {
            // Put the good knobs back for the next case.
            Database db(path, path, SQLITE_OPEN_READWRITE);
            db.exec("UPDATE runs SET params = '" + methods::knobsJson(test::sampleRun(5, 1, 1).params).dump() + "';",
                    "mend the knobs");
        }
    }
    {
        Database db(path, path, SQLITE_OPEN_READWRITE);
        db.exec("UPDATE runs SET method = 'snapk';", "spoil the method");
    }
    SessionStore store(path, SessionStore::Access::ReadOnly);
    EXPECT_EQ(errorOf([&] { (void)store.run(id); }).rfind(run + ".method 'snapk' is not one of full, snapkv, ", 0), 0u);
}

TEST(SessionStore, AVersionOneStoreOpenedReadOnlySaysItNeedsAnUpgrade) {
    const std::string path = test::storePath("v1readonly.db");
    {
        Database db(path, path, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE);
        Migrations::apply(db, {StoreSchema::steps()[0]});
    }
    EXPECT_EQ(errorOf([&] { SessionStore store(path, SessionStore::Access::ReadOnly); }),
              path + ": store schema 1 needs an upgrade to " + std::to_string(StoreSchema::version()) +
                  ", which read-only access cannot do");
}

// A Hugging Face folder: each file's (weights, config, tokenizer) size, mtime and SHA-256 kept in order,
// the folder's digest over them, a known file not hashed again, and a reopened
// session told which file changed or went missing.
TEST(SessionStore, AFolderModelKeepsEachFilesHash) {
    const std::string dir = test::storePath("folder");
    ::mkdir(dir.c_str(), 0755);
    auto write = [&](const std::string& name, const std::string& bytes) { std::ofstream(dir + "/" + name) << bytes; };
    write("config.json", "{}");
    write("model-00001-of-00002.safetensors", std::string(3000, 'a'));
    write("model-00002-of-00002.safetensors", std::string(5000, 'b'));
    write("model.safetensors.index.json",
          R"({"metadata": {}, "weight_map": {"x": "model-00002-of-00002.safetensors", "a": "model-00001-of-00002.safetensors",
              "y": "model-00002-of-00002.safetensors"}})");
    SessionStore store(test::storePath("folder.db"));
    ModelRecord m = test::sampleModel();
    m.isFile = true;
    m.path = dir;
    RunRecorder recorder(store);
    const ModelRecord d = recorder.describeFile(m);
    ASSERT_EQ(d.files.size(), 3u);  // the shards by name, then config.json
    EXPECT_EQ(d.files[2].name, "config.json");
    EXPECT_EQ(d.files[0].name, "model-00001-of-00002.safetensors");  // by name
    EXPECT_EQ(d.files[1].name, "model-00002-of-00002.safetensors");
    EXPECT_EQ(d.files[0].sha256, ModelFile::sha256(dir + "/model-00001-of-00002.safetensors"));
    EXPECT_EQ(d.files[1].sha256, ModelFile::sha256(dir + "/model-00002-of-00002.safetensors"));
    EXPECT_EQ(d.sizeBytes, 8002);
    EXPECT_EQ(d.sha256, Sha256::hex(d.files[0].sha256 + "  " + d.files[0].name + "\n" + d.files[1].sha256 + "  " +
                                    d.files[1].name + "\n" + d.files[2].sha256 + "  config.json\n"));
    const int64_t id = store.saveModel(d);
    const ModelRecord back = store.model(id);
    ASSERT_EQ(back.files.size(), 3u);
    EXPECT_EQ(back.files[1].name, d.files[1].name);
    EXPECT_EQ(back.files[1].sha256, d.files[1].sha256);
    EXPECT_EQ(back.files[1].mtimeNs, d.files[1].mtimeNs);
    EXPECT_EQ(store.models(0).size(), 0u);
    EXPECT_EQ(store.knownFileSha256(dir, d.files[0].name, d.files[0].sizeBytes, d.files[0].mtimeNs), d.files[0].sha256);
    EXPECT_EQ(store.saveModel(recorder.describeFile(m)), id);  // the same folder: the same model
    EXPECT_EQ(ModelFile::check(back, true).status, ModelFile::Status::Unchanged);

    write("model-00001-of-00002.safetensors", std::string(2999, 'a') + "c");  // same size, new content
    const ModelFile::Check changed = ModelFile::check(back, true);
    EXPECT_EQ(changed.status, ModelFile::Status::ContentChanged);
    EXPECT_EQ(changed.message.rfind("model folder " + dir + " changed: model-00001-of-00002.safetensors SHA-256 ", 0), 0u)
        << changed.message;
    ::unlink((dir + "/model-00001-of-00002.safetensors").c_str());
    const ModelFile::Check missing = ModelFile::check(back, false);
    EXPECT_EQ(missing.status, ModelFile::Status::Missing);
    EXPECT_EQ(missing.message, "model folder " + dir + ": file model-00001-of-00002.safetensors is missing");
    ::unlink((dir + "/model.safetensors.index.json").c_str());
    ::unlink((dir + "/model-00002-of-00002.safetensors").c_str());
    EXPECT_EQ(errorOf([&] { recorder.describeFile(m); }),
              dir + ": no weights (model.safetensors or model.safetensors.index.json) to hash");
}

TEST(SessionStore, AVersionThreeStoreOpensReadOnlyWithoutWeightFiles) {
    const std::string path = test::storePath("v3.db");
    int64_t model = 0;
    {
        SessionStore store(path);
        const int64_t session = store.createSession("s").id;
        model = store.saveModel(test::sampleModel());
        store.savePrompt(test::samplePrompt(session, model));
    }
    {
        test::downgradeToSchema9(path);
        Database db(path, path, SQLITE_OPEN_READWRITE);
        db.exec("DROP TABLE model_files; ALTER TABLE runs DROP COLUMN scorer; ALTER TABLE runs DROP COLUMN tau1; "
                "ALTER TABLE runs DROP COLUMN tau2; ALTER TABLE runs DROP COLUMN gamma; ALTER TABLE runs DROP COLUMN "
                "lazy; ALTER TABLE runs DROP COLUMN layer_weights; ALTER TABLE runs DROP COLUMN sketch; ALTER TABLE runs DROP COLUMN attn_chunk; ALTER TABLE runs DROP COLUMN blend; ALTER TABLE runs DROP COLUMN think; ALTER TABLE runs DROP COLUMN repeat_chunk; ALTER TABLE runs DROP COLUMN finch_chunk; ALTER TABLE runs DROP COLUMN convention; ALTER TABLE metrics DROP COLUMN allocated_bytes; ALTER TABLE metrics DROP COLUMN decode_every; ALTER TABLE metrics DROP COLUMN cache_entries; ALTER TABLE selection_heads DROP COLUMN pruned_channels; PRAGMA user_version = 3;",
                "make a version 3 store");
    }
    {
        SessionStore store(path, SessionStore::Access::ReadOnly);
        EXPECT_TRUE(store.model(model).files.empty());
        EXPECT_EQ(store.models(store.session("s").id).size(), 1u);
    }
    SessionStore store(path);  // read-write: migrated to the current schema
    EXPECT_TRUE(store.model(model).files.empty());
}

TEST(SessionStore, RunOfAnotherSessionsPromptIsRefused) {
    SessionStore store(test::storePath("owner.db"));
    const int64_t a = store.createSession("a").id, b = store.createSession("b").id;
    const int64_t model = store.saveModel(test::sampleModel());
    const int64_t prompt = store.savePrompt(test::samplePrompt(a, model));
    EXPECT_EQ(errorOf([&] { store.saveRun(test::sampleRun(1, b, prompt)); }),
              store.path() + ": prompt " + std::to_string(prompt) + " is not in session " +
                  std::to_string(b));
    RunRecord bad = test::sampleRun(1, a, prompt);
    bad.status = "half";
    EXPECT_EQ(errorOf([&] { store.saveRun(bad); }), "run status 'half' is not complete or failed");
    EXPECT_TRUE(store.runs(a).empty());
}

TEST(SessionStore, RenameAndDeleteCascade) {
    const std::string path = test::storePath("delete.db");
    SessionStore store(path);
    const int64_t a = store.createSession("a").id;
    const int64_t keep = store.createSession("keep").id;
    ModelRecord own = test::sampleModel();
    own.spec = "random:tiny";
    const int64_t model = store.saveModel(own), shared = store.saveModel(test::sampleModel());
    const int64_t pa = store.savePrompt(test::samplePrompt(a, model));
    const int64_t pa2 = store.savePrompt(test::samplePrompt(a, shared, 10));
    const int64_t pk = store.savePrompt(test::samplePrompt(keep, shared));
    const int64_t r1 = store.saveRun(test::sampleRun(1, a, pa));
    store.saveRun(test::sampleRun(2, a, pa2));
    const int64_t rk = store.saveRun(test::sampleRun(3, keep, pk));

    store.renameSession("a", "b");
    EXPECT_FALSE(store.findSession("a"));
    EXPECT_EQ(store.session("b").id, a);
    EXPECT_EQ(store.run(r1).sessionId, a);
    EXPECT_EQ(errorOf([&] { store.renameSession("b", "keep"); }),
              path + ": a session named 'keep' already exists");
    EXPECT_EQ(errorOf([&] { store.renameSession("zz", "y"); }),
              path + ": no session 'zz' (sessions: b, keep)");

    store.deleteSession("b");
    EXPECT_EQ(store.sessions().size(), 1u);
    EXPECT_EQ(errorOf([&] { store.run(r1); }), path + ": no run with id " + std::to_string(r1));
    EXPECT_EQ(errorOf([&] { store.model(model); }),
              path + ": no model with id " + std::to_string(model));
    EXPECT_EQ(store.model(shared).id, shared);  // still used by "keep"
    test::expectSameRun(store.run(rk), [&] {
        RunRecord r = test::sampleRun(3, keep, pk);
        r.id = rk;
        return r;
    }());
    Database db(path, path, SQLITE_OPEN_READONLY);
    for (const char* table :
         {"prompts", "runs", "selections", "selection_heads", "metrics", "layer_stats"}) {
        Statement count(db, std::string("SELECT count(*) FROM ") + table, "count");
        ASSERT_TRUE(count.step());
        Statement kept(db,
                       std::string("SELECT count(*) FROM ") + table +
                           (std::string(table) == "prompts" ? " WHERE session_id = ?"
                            : std::string(table) == "runs"  ? " WHERE session_id = ?"
                                                            : " WHERE run_id = ?"),
                       "count");
        kept.bind(1, std::string(table) == "prompts" || std::string(table) == "runs" ? keep : rk);
        ASSERT_TRUE(kept.step());
        EXPECT_EQ(count.getInt(0), kept.getInt(0)) << table << " kept rows of the deleted session";
    }
    store.deleteRun(rk);
    EXPECT_TRUE(store.runs(keep).empty());
    EXPECT_EQ(store.integrityCheck(), "ok");
}

TEST(SessionStore, WriteAllIsOneTransaction) {
    SessionStore store(test::storePath("batch.db"));
    const int64_t s = store.createSession("s").id;
    const int64_t model = store.saveModel(test::sampleModel());
    const int64_t prompt = store.savePrompt(test::samplePrompt(s, model));
    EXPECT_THROW(store.writeAll([&] {
        store.saveRun(test::sampleRun(1, s, prompt));
        store.saveRun(test::sampleRun(2, s, prompt));
        throw Error("stop");
    }),
                 Error);
    EXPECT_TRUE(store.runs(s).empty());
    store.writeAll([&] { store.saveRun(test::sampleRun(1, s, prompt)); });
    EXPECT_EQ(store.runs(s).size(), 1u);
}

TEST(SessionStore, DefaultPathHonoursXdgDataHome) {
    const char* oldXdg = std::getenv("XDG_DATA_HOME");
    const std::string saved = oldXdg ? oldXdg : "";
    ::setenv("XDG_DATA_HOME", "/tmp/xdg-test", 1);
    EXPECT_EQ(SessionStore::defaultPath(), "/tmp/xdg-test/kvlens/sessions.db");
    ::unsetenv("XDG_DATA_HOME");
    EXPECT_EQ(SessionStore::defaultPath(),
              std::string(std::getenv("HOME")) + "/.local/share/kvlens/sessions.db");
    if (oldXdg) ::setenv("XDG_DATA_HOME", saved.c_str(), 1);
}

TEST(Migrations, PendingStepsRunInOneTransaction) {
    const std::string path = test::storePath("migrate.db");
    Database db(path, path, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE);
    const std::vector<Migrations::Step> good = {
        [](Database& d) { d.exec("CREATE TABLE a (x)", "step 1"); },
        [](Database& d) { d.exec("CREATE TABLE b (y)", "step 2"); },
    };
    EXPECT_EQ(Migrations::apply(db, {good[0]}), 0);
    EXPECT_EQ(db.pragmaInt("user_version"), 1);
    // Step 2 then a failing step 3: neither stays.
    std::vector<Migrations::Step> failing = good;
    failing.push_back([](Database& d) { d.exec("CREATE TABLE broken (", "step 3"); });
    EXPECT_THROW(Migrations::apply(db, failing), Error);
    EXPECT_EQ(db.pragmaInt("user_version"), 1);
    EXPECT_FALSE(db.hasTable("b"));
    EXPECT_EQ(Migrations::apply(db, good), 1);
    EXPECT_EQ(db.pragmaInt("user_version"), 2);
    EXPECT_TRUE(db.hasTable("b"));
    EXPECT_EQ(Migrations::apply(db, good), 2);  // nothing left to do
    EXPECT_EQ(errorOf([&] { Migrations::apply(db, {good[0]}); }),
              path +
                  ": written by a newer KV Lens (store schema 2, this build reads up to 1); left "
                  "unchanged: "
                  "update kvlens to open it");
}

}  // namespace
}  // namespace kvlens::sessions
