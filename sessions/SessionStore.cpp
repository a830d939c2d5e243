// The session store over SQLite: opening and validation, then one method per
// record kind. Every write is one transaction (BEGIN IMMEDIATE ... COMMIT).
#include "sessions/SessionStore.h"

#include <sqlite3.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>

#include "core/Error.h"
#include "core/Methods.h"
#include "core/ParamsJson.h"
#include "sessions/ArrayCodec.h"
#include "sessions/Database.h"
#include "sessions/LegacyRunParams.h"
#include "sessions/Migrations.h"
#include "sessions/ParamText.h"
#include "sessions/SelectionCodec.h"
#include "sessions/Statement.h"
#include "sessions/TemporaryFiles.h"
#include "sessions/StoreCreator.h"
#include "sessions/StoreFile.h"
#include "sessions/StoreSchema.h"
#include "sessions/Transaction.h"

namespace kvlens::sessions {

namespace {

constexpr int kBusyTimeoutMs = 10000;

int64_t nowMs() {
    return std::chrono::duration_cast<std::chrono::milliseconds>(
               std::chrono::system_clock::now().time_since_epoch())
        .count();
}

// A file: URI for `path` (percent-escaping what URIs reserve).
std::string fileUri(const std::string& path, const std::string& query) {
    std::string uri = "file:";
    for (unsigned char c : path) {
        if (c == '%' || c == '?' || c == '#' || c < 0x20) {
            static const char* hex = "0123456789ABCDEF";
            uri += '%';
            uri += hex[c >> 4];
            uri += hex[c & 15];
        } else {
            uri += char(c);
        }
    }
    return uri + "?" + query;
}

// "?, ?, ?" (n of them).
std::string placeholders(int n) {
    std::string out;
    for (int i = 0; i < n; ++i) out += i ? ", ?" : "?";
    return out;
}

void checkSessionName(const std::string& name) {
    const std::string problem = SessionStore::nameProblem(name);
    if (!problem.empty()) throw Error(problem);
}

// The press parameters in the runs table from `first`, each after `prefix` ("r." in a join):
// since schema 10 method, budget, budget_ratio and the knobs as one JSON object
// (methods::knobsJson); an older store read as it is (read-only) has a column per knob.
constexpr int64_t kKnobsAsJson = 10;
int paramColumnCount(int64_t schema) { return schema < kKnobsAsJson ? LegacyRunParams::kColumns : 4; }

std::string paramColumns(int64_t schema, const std::string& prefix = "") {
    if (schema < kKnobsAsJson) return LegacyRunParams::columns(schema, prefix);
    return prefix + "method, " + prefix + "budget, " + prefix + "budget_ratio, " + prefix + "params";
}

void bindParams(Statement& s, int first, const PressParams& p) {
    s.bind(first, p.method).bind(first + 1, p.budget).bind(first + 2, p.budgetRatio);
    s.bind(first + 3, methods::knobsJson(p).dump());
}

PressParams readParams(const Statement& s, int first, int64_t schema, const std::string& what) {
    if (schema < kKnobsAsJson) return LegacyRunParams::read(s, first, what);
    PressParams p;
    p.method = methods::named(s.getText(first), what + ".method").name;
    p.budget = s.getInt(first + 1);
    p.budgetRatio = s.getDouble(first + 2);
    if (p.budget < 0 || p.budget > (int64_t(1) << 31))
        throw Error(what + ".budget " + std::to_string(p.budget) + " is outside [0, 2147483648] (the store is damaged)");
    if (!(p.budgetRatio >= 0.0 && p.budgetRatio <= 1.0))
        throw Error(what + ".budget_ratio " + methods::shortestText(p.budgetRatio) +
                    " is outside [0, 1] (the store is damaged)");
    nlohmann::json knobs;
    try {
        knobs = nlohmann::json::parse(s.getText(first + 3));
    } catch (const nlohmann::json::exception&) {
        throw Error(what + ".params: not JSON, or a number beyond a double (the store is damaged)");
    }
    methods::setKnobs(p, knobs, what + ".params");
    return p;
}

const char* kModelColumns =
    "spec, kind, path, size_bytes, mtime_ns, sha256, architecture, name, layers, heads, kv_heads, "
    "head_dim, embed_dim, ffn_dim, vocab_size, context_length, rope_theta";

void bindModel(Statement& s, const ModelRecord& m) {
    s.bind(1, m.spec)
        .bind(2, std::string(m.isFile ? "file" : "random"))
        .bind(3, m.path)
        .bind(4, m.sizeBytes)
        .bind(5, m.mtimeNs)
        .bind(6, m.sha256)
        .bind(7, m.architecture)
        .bind(8, m.name)
        .bind(9, m.layers)
        .bind(10, m.heads)
        .bind(11, m.kvHeads)
        .bind(12, m.headDim)
        .bind(13, m.embedDim)
        .bind(14, m.ffnDim)
        .bind(15, m.vocabSize)
        .bind(16, m.contextLength)
        .bind(17, m.ropeTheta);
}

ModelRecord readModel(const Statement& s) {
    ModelRecord m;
    m.id = s.getInt(0);
    m.spec = s.getText(1);
    m.isFile = s.getText(2) == "file";
    m.path = s.getText(3);
    m.sizeBytes = s.getInt(4);
    m.mtimeNs = s.getInt(5);
    m.sha256 = s.getText(6);
    m.architecture = s.getText(7);
    m.name = s.getText(8);
    m.layers = s.getInt(9);
    m.heads = s.getInt(10);
    m.kvHeads = s.getInt(11);
    m.headDim = s.getInt(12);
    m.embedDim = s.getInt(13);
    m.ffnDim = s.getInt(14);
    m.vocabSize = s.getInt(15);
    m.contextLength = s.getInt(16);
    m.ropeTheta = s.getDouble(17);
    return m;
}

// A store of schema 10 or older read as it is has no eval_runs: none counted.
std::string sessionSelect(bool evalRuns) {
    return std::string("SELECT s.id, s.name, s.notes, s.created_ms, s.updated_ms, s.ui_state, "
                       "(SELECT count(*) FROM runs r WHERE r.session_id = s.id), "
                       "(SELECT count(*) FROM prompts p WHERE p.session_id = s.id), "
                       "(SELECT count(*) FROM niah_runs n WHERE n.session_id = s.id), ") +
           (evalRuns ? "(SELECT count(*) FROM eval_runs e WHERE e.session_id = s.id)" : "0") + " FROM sessions s ";
}

SessionInfo readSession(const Statement& s) {
    SessionInfo info;
    info.id = s.getInt(0);
    info.name = s.getText(1);
    info.notes = s.getText(2);
    info.createdMs = s.getInt(3);
    info.updatedMs = s.getInt(4);
    info.uiState = s.getText(5);
    info.runCount = s.getInt(6);
    info.promptCount = s.getInt(7);
    info.niahRunCount = s.getInt(8);
    info.evalRunCount = s.getInt(9);
    return info;
}

// Whether a connection can read the store's header page (a read-only one
// cannot while a killed writer's WAL index or hot journal waits for recovery).
bool readable(Database& db) {
    try {
        db.pragmaInt("application_id");
        return true;
    } catch (const Error&) {
        return false;
    }
}

}  // namespace

std::string SessionStore::shownName(const std::string& name) {
    std::string shown;
    for (unsigned char c : name) {
        if (c < 0x20 || c == 0x7f) {
            static const char* hex = "0123456789abcdef";
            shown += "\\x";
            shown += hex[c >> 4];
            shown += hex[c & 15];
        } else {
            shown += char(c);
        }
    }
    return shown;
}

std::string SessionStore::nameProblem(const std::string& name) {
    if (name.empty()) return "session name is empty";
    const std::string shown = shownName(name);
    return shown != name ? "session name '" + shown + "' has a control character" : "";
}

std::string SessionStore::defaultPath() {
    const char* xdg = std::getenv("XDG_DATA_HOME");
    if (xdg && xdg[0] == '/') return std::string(xdg) + "/kvlens/sessions.db";
    const char* home = std::getenv("HOME");
    if (!home || !home[0])
        throw Error("no home folder ($HOME is not set): choose a store with --store PATH");
    return std::string(home) + "/.local/share/kvlens/sessions.db";
}

uint32_t SessionStore::schemaVersion() { return StoreSchema::version(); }

SessionStore::SessionStore(const std::string& path, Access access) : path_(path) {
    if (path_.empty()) throw Error("--store: the path is empty");
    open(access);
}

SessionStore::~SessionStore() = default;

void SessionStore::open(Access access) {
    const uint32_t version = StoreSchema::version();
    StoreFile::Header header = StoreFile::inspect(path_, StoreSchema::kApplicationId, version);
    const bool readOnly = access == Access::ReadOnly;
    runsSchema_ = version;
    if (readOnly) {
        if (!header.exists) {
            throw Error(path_ + ": no session store here yet (runs saved with --save create it)");
        }
        if (header.fileSize == 0) {
            throw Error(path_ + ": is an empty file, no session store yet (a run saved there with "
                                "--save makes it one)");
        }
        const std::string dir = StoreFile::directoryOf(path_);
        if (::access(dir.c_str(), W_OK) == 0) {
            db_ = std::make_unique<Database>(path_, path_, SQLITE_OPEN_READONLY);
            sqlite3_busy_timeout(db_->handle(), kBusyTimeoutMs);
            if (!readable(*db_) && ::access(path_.c_str(), W_OK) == 0) {
                // A writer killed mid-save leaves a WAL index, or a hot rollback
                // journal, that only a read-write connection may recover (a
                // read-only one fails with "read-only"): recover it, without
                // checkpointing the WAL into the store file, and read again.
                try {
                    Database recover(path_, path_, SQLITE_OPEN_READWRITE);
                    recover.leaveFileAsIs();
                    sqlite3_busy_timeout(recover.handle(), kBusyTimeoutMs);
                    recover.pragmaInt("application_id");
                } catch (const Error&) {
                    // The read-only connection below says what is wrong.
                }
                db_ = std::make_unique<Database>(path_, path_, SQLITE_OPEN_READONLY);
            }
        } else {
            // A WAL store in a folder we cannot write has no -shm to share; nobody
            // else can write there either, so read the file as immutable.
            db_ = std::make_unique<Database>(path_, fileUri(path_, "immutable=1"),
                                             SQLITE_OPEN_READONLY, true);
        }
    } else {
        StoreFile::requireWritable(path_, header.exists);
        // What killed creators left beside the store.
        TemporaryFiles::removeStale(path_, StoreCreator::temporaryTag());
        if (!header.exists || header.fileSize == 0) {
            // Never created in place: SQLite would leave a 0-byte file at the
            // first write, and a half-migrated one if killed during the schema.
            StoreCreator::ensure(path_, [](Database& db) { Migrations::apply(db, StoreSchema::steps()); });
            header = StoreFile::inspect(path_, StoreSchema::kApplicationId, version);
        }
        db_ = std::make_unique<Database>(path_, path_, SQLITE_OPEN_READWRITE);
    }
    sqlite3_busy_timeout(db_->handle(), kBusyTimeoutMs);
    try {
        if (header.exists) {
            // The header was checked; the WAL may hold later pages, so ask SQLite too.
            if (uint32_t(db_->pragmaInt("application_id")) != StoreSchema::kApplicationId) {
                throw Error(
                    path_ +
                    ": not a KV Lens session store (it is a SQLite database of another program)");
            }
            const int64_t stored = db_->pragmaInt("user_version");
            if (stored > int64_t(version)) {
                throw Error(path_ + ": written by a newer KV Lens (store schema " +
                            std::to_string(stored) + ", this build reads up to " +
                            std::to_string(version) +
                            "); left unchanged: update kvlens to open it");
            }
            // Schemas 3 and 5 only added columns to runs, which a read of an older store
            // fills with their defaults, and schema 4 the table of folder models' files,
            // which such a store has none of: it lists, reports and exports as it is.
            runsSchema_ = readOnly ? stored : int64_t(version);
            noModelFiles_ = readOnly && stored < 4;
            if (readOnly && stored < int64_t(version) && stored < 2) {
                throw Error(path_ + ": store schema " + std::to_string(stored) +
                            " needs an upgrade to " + std::to_string(version) +
                            ", which read-only access cannot do");
            }
        }
        if (!readOnly) {
            Migrations::apply(*db_, StoreSchema::steps());
            bool wal = false;
            {
                Statement mode(*db_, "PRAGMA journal_mode", "read the journal mode");
                wal = mode.step() && mode.getText(0) == "wal";
            }
            if (!wal) {
                Statement toWal(*db_, "PRAGMA journal_mode = WAL", "switch to WAL mode");
                toWal.run();
            }
            db_->exec("PRAGMA synchronous = FULL", "set synchronous writes");
        }
        StoreSchema::checkTables(*db_);
        evalRuns_ = db_->hasTable("eval_runs");
        if (!noModelFiles_ && !db_->hasTable("model_files")) {
            db_->leaveFileAsIs();
            throw Error(path_ + ": the store is damaged (table 'model_files' is missing)");
        }
        db_->exec("PRAGMA foreign_keys = ON", "enable foreign keys");
    } catch (...) {
        db_->leaveFileAsIs();
        throw;
    }
}

// ---- sessions ----

std::vector<SessionInfo> SessionStore::sessions() {
    Statement s(*db_, sessionSelect(evalRuns_) + "ORDER BY s.name", "list sessions");
    std::vector<SessionInfo> out;
    while (s.step()) out.push_back(readSession(s));
    return out;
}

std::optional<SessionInfo> SessionStore::findSession(const std::string& name) {
    Statement s(*db_, sessionSelect(evalRuns_) + "WHERE s.name = ?",
                "find session '" + name + "'");
    s.bind(1, name);
    if (!s.step()) return std::nullopt;
    return readSession(s);
}

SessionInfo SessionStore::session(const std::string& name) {
    if (auto found = findSession(name)) return *found;
    std::string names;
    const auto all = sessions();
    for (size_t i = 0; i < all.size() && i < 8; ++i) names += (i ? ", " : "") + all[i].name;
    if (all.size() > 8) names += ", ...";
    throw Error(
        path_ + ": no session '" + name + "'" +
        (all.empty() ? std::string(" (the store has no sessions)") : " (sessions: " + names + ")"));
}

SessionInfo SessionStore::session(int64_t id) {
    Statement s(*db_, sessionSelect(evalRuns_) + "WHERE s.id = ?", "read session");
    s.bind(1, id);
    if (!s.step()) throw Error(path_ + ": no session with id " + std::to_string(id));
    return readSession(s);
}

SessionInfo SessionStore::createSession(const std::string& name, const std::string& notes) {
    checkSessionName(name);
    {
        Transaction tx(*db_, Transaction::Kind::Write);
        if (findSession(name))
            throw Error(path_ + ": a session named '" + name + "' already exists");
        const int64_t now = nowMs();
        Statement s(
            *db_, "INSERT INTO sessions (name, notes, created_ms, updated_ms) VALUES (?, ?, ?, ?)",
            "create session '" + name + "'");
        s.bind(1, name).bind(2, notes).bind(3, now).bind(4, now).run();
        tx.commit();
    }
    return session(name);
}

SessionInfo SessionStore::openSession(const std::string& name) {
    checkSessionName(name);
    {
        Transaction tx(*db_, Transaction::Kind::Write);
        if (!findSession(name)) {
            const int64_t now = nowMs();
            Statement s(
                *db_,
                "INSERT INTO sessions (name, notes, created_ms, updated_ms) VALUES (?, '', ?, ?)",
                "create session '" + name + "'");
            s.bind(1, name).bind(2, now).bind(3, now).run();
        }
        tx.commit();
    }
    return session(name);
}

SessionInfo SessionStore::createSession(const SessionInfo& info) {
    checkSessionName(info.name);
    if (!nlohmann::json::accept(info.uiState)) {
        throw Error("UI state of session '" + info.name + "' is not valid JSON");
    }
    {
        Transaction tx(*db_, Transaction::Kind::Write);
        if (findSession(info.name))
            throw Error(path_ + ": a session named '" + info.name + "' already exists");
        Statement s(*db_,
                    "INSERT INTO sessions (name, notes, created_ms, updated_ms, ui_state) VALUES "
                    "(?, ?, ?, ?, ?)",
                    "create session '" + info.name + "'");
        s.bind(1, info.name).bind(2, info.notes).bind(3, info.createdMs).bind(4, info.updatedMs);
        s.bind(5, info.uiState).run();
        tx.commit();
    }
    return session(info.name);
}

void SessionStore::setSessionTimes(const std::string& name, int64_t createdMs, int64_t updatedMs) {
    Transaction tx(*db_, Transaction::Kind::Write);
    const SessionInfo info = session(name);
    Statement s(*db_, "UPDATE sessions SET created_ms = ?, updated_ms = ? WHERE id = ?",
                "set the times of '" + name + "'");
    s.bind(1, createdMs).bind(2, updatedMs).bind(3, info.id).run();
    tx.commit();
}

void SessionStore::renameSession(const std::string& from, const std::string& to) {
    checkSessionName(to);
    Transaction tx(*db_, Transaction::Kind::Write);
    const SessionInfo info = session(from);
    if (from == to) return;
    if (findSession(to)) throw Error(path_ + ": a session named '" + to + "' already exists");
    Statement s(*db_, "UPDATE sessions SET name = ?, updated_ms = ? WHERE id = ?",
                "rename session '" + from + "'");
    s.bind(1, to).bind(2, nowMs()).bind(3, info.id).run();
    tx.commit();
}

void SessionStore::setNotes(const std::string& name, const std::string& notes) {
    Transaction tx(*db_, Transaction::Kind::Write);
    const SessionInfo info = session(name);
    Statement s(*db_, "UPDATE sessions SET notes = ?, updated_ms = ? WHERE id = ?",
                "set the notes of '" + name + "'");
    s.bind(1, notes).bind(2, nowMs()).bind(3, info.id).run();
    tx.commit();
}

void SessionStore::setUiState(const std::string& name, const std::string& json) {
    if (!nlohmann::json::accept(json))
        throw Error("UI state of session '" + name + "' is not valid JSON");
    Transaction tx(*db_, Transaction::Kind::Write);
    const SessionInfo info = session(name);
    Statement s(*db_, "UPDATE sessions SET ui_state = ?, updated_ms = ? WHERE id = ?",
                "save the UI state of '" + name + "'");
    s.bind(1, json).bind(2, nowMs()).bind(3, info.id).run();
    tx.commit();
}

void SessionStore::deleteSession(const std::string& name) {
    Transaction tx(*db_, Transaction::Kind::Write);
    const SessionInfo info = session(name);
    Statement del(*db_, "DELETE FROM sessions WHERE id = ?", "delete session '" + name + "'");
    del.bind(1, info.id).run();
    db_->exec("DELETE FROM models WHERE id NOT IN (SELECT model_id FROM prompts) AND "
              "id NOT IN (SELECT model_id FROM niah_runs) AND id NOT IN (SELECT model_id FROM eval_runs)",
              "delete unused models");
    tx.commit();
}

void SessionStore::touchSession(int64_t sessionId, int64_t now) {
    Statement s(*db_, "UPDATE sessions SET updated_ms = max(updated_ms, ?) WHERE id = ?",
                "update the session");
    s.bind(1, now).bind(2, sessionId).run();
}

// ---- models ----

int64_t SessionStore::saveModel(const ModelRecord& model) {
    Transaction tx(*db_, Transaction::Kind::Write);
    Statement find(
        *db_,
        "SELECT id FROM models WHERE spec = ?1 AND kind = ?2 AND path = ?3 AND size_bytes = ?4 "
        "AND mtime_ns = ?5 AND sha256 = ?6 AND architecture = ?7 AND name = ?8 AND layers = ?9 "
        "AND heads = ?10 AND kv_heads = ?11 AND head_dim = ?12 AND embed_dim = ?13 AND "
        "ffn_dim = ?14 AND vocab_size = ?15 AND context_length = ?16 AND rope_theta IS ?17",
        "find the model");
    bindModel(find, model);
    if (find.step()) return find.getInt(0);  // nothing written: the rollback is a no-op
    Statement insert(
        *db_,
        std::string("INSERT INTO models (") + kModelColumns +
            ") VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17)",
        "save the model");
    bindModel(insert, model);
    insert.run();
    const int64_t id = db_->lastInsertId();
    for (size_t i = 0; i < model.files.size(); ++i) {
        const FolderFileRecord& f = model.files[i];
        Statement file(*db_,
                       "INSERT INTO model_files (model_id, position, name, size_bytes, mtime_ns, sha256) "
                       "VALUES (?, ?, ?, ?, ?, ?)",
                       "save a file of the model");
        file.bind(1, id).bind(2, int64_t(i)).bind(3, f.name).bind(4, f.sizeBytes).bind(5, f.mtimeNs).bind(6, f.sha256).run();
    }
    tx.commit();
    return id;
}

void SessionStore::readModelFiles(ModelRecord& m) {
    if (noModelFiles_) return;
    Statement s(*db_,
                "SELECT name, size_bytes, mtime_ns, sha256 FROM model_files WHERE model_id = ? ORDER BY position",
                "read the files of a model");
    s.bind(1, m.id);
    while (s.step()) m.files.push_back({s.getText(0), s.getInt(1), s.getInt(2), s.getText(3)});
}

ModelRecord SessionStore::model(int64_t id) {
    Statement s(*db_, std::string("SELECT id, ") + kModelColumns + " FROM models WHERE id = ?",
                "read a model");
    s.bind(1, id);
    if (!s.step()) throw Error(path_ + ": no model with id " + std::to_string(id));
    ModelRecord m = readModel(s);
    readModelFiles(m);
    return m;
}

std::vector<ModelRecord> SessionStore::models(int64_t sessionId) {
    Statement s(*db_,
                std::string("SELECT id, ") + kModelColumns +
                    " FROM models WHERE id IN (SELECT model_id FROM prompts WHERE session_id = ?1) "
                    "OR id IN (SELECT model_id FROM niah_runs WHERE session_id = ?1) " +
                    (evalRuns_ ? "OR id IN (SELECT model_id FROM eval_runs WHERE session_id = ?1) " : "") +
                    "ORDER BY id",
                "list the models of a session");
    s.bind(1, sessionId);
    std::vector<ModelRecord> out;
    while (s.step()) out.push_back(readModel(s));
    for (ModelRecord& m : out) readModelFiles(m);
    return out;
}

std::optional<std::string> SessionStore::knownFileSha256(const std::string& folder, const std::string& name,
                                                         int64_t sizeBytes, int64_t mtimeNs) {
    if (noModelFiles_) return std::nullopt;
    Statement s(*db_,
                "SELECT f.sha256 FROM model_files f JOIN models m ON m.id = f.model_id WHERE m.path = ? AND "
                "f.name = ? AND f.size_bytes = ? AND f.mtime_ns = ? LIMIT 1",
                "look up a folder file hash");
    s.bind(1, folder).bind(2, name).bind(3, sizeBytes).bind(4, mtimeNs);
    if (!s.step()) return std::nullopt;
    return s.getText(0);
}

std::optional<std::string> SessionStore::knownSha256(const std::string& path, int64_t sizeBytes,
                                                     int64_t mtimeNs) {
    Statement s(*db_,
                "SELECT sha256 FROM models WHERE kind = 'file' AND path = ? AND size_bytes = ? AND "
                "mtime_ns = ? AND sha256 != '' LIMIT 1",
                "look up a model hash");
    s.bind(1, path).bind(2, sizeBytes).bind(3, mtimeNs);
    if (!s.step()) return std::nullopt;
    return s.getText(0);
}

// ---- prompts ----

int64_t SessionStore::savePrompt(const PromptRecord& prompt) {
    Transaction tx(*db_, Transaction::Kind::Write);
    session(prompt.sessionId);
    model(prompt.modelId);
    const std::string tokens = ArrayCodec::encode(prompt.tokenIds);
    Statement find(
        *db_,
        "SELECT id FROM prompts WHERE session_id = ? AND model_id = ? AND add_bos = ? AND "
        "text = ? AND token_ids = ?",
        "find the prompt");
    find.bind(1, prompt.sessionId)
        .bind(2, prompt.modelId)
        .bind(3, int64_t(prompt.addBos))
        .bind(4, prompt.text);
    find.bindBlob(5, tokens);
    if (find.step()) return find.getInt(0);
    Statement insert(
        *db_,
        "INSERT INTO prompts (session_id, model_id, text, add_bos, token_count, token_ids) "
        "VALUES (?, ?, ?, ?, ?, ?)",
        "save the prompt");
    insert.bind(1, prompt.sessionId).bind(2, prompt.modelId).bind(3, prompt.text);
    insert.bind(4, int64_t(prompt.addBos))
        .bind(5, int64_t(prompt.tokenIds.size()))
        .bindBlob(6, tokens);
    insert.run();
    const int64_t id = db_->lastInsertId();
    touchSession(prompt.sessionId, nowMs());
    tx.commit();
    return id;
}

namespace {

PromptRecord readPrompt(const Statement& s, const std::string& path) {
    PromptRecord p;
    p.id = s.getInt(0);
    p.sessionId = s.getInt(1);
    p.modelId = s.getInt(2);
    p.text = s.getText(3);
    p.addBos = s.getInt(4) != 0;
    const std::string what = path + ": prompt " + std::to_string(p.id) + " token_ids";
    p.tokenIds = ArrayCodec::decodeInt32s(s.getBlob(6), what);
    if (int64_t(p.tokenIds.size()) != s.getInt(5)) throw Error(what + ": corrupt (count differs)");
    return p;
}

const char* kPromptSelect =
    "SELECT id, session_id, model_id, text, add_bos, token_count, token_ids FROM prompts ";

}  // namespace

PromptRecord SessionStore::prompt(int64_t id) {
    Statement s(*db_, std::string(kPromptSelect) + "WHERE id = ?", "read a prompt");
    s.bind(1, id);
    if (!s.step()) throw Error(path_ + ": no prompt with id " + std::to_string(id));
    return readPrompt(s, path_);
}

std::vector<PromptRecord> SessionStore::prompts(int64_t sessionId) {
    Statement s(*db_, std::string(kPromptSelect) + "WHERE session_id = ? ORDER BY id",
                "list prompts");
    s.bind(1, sessionId);
    std::vector<PromptRecord> out;
    while (s.step()) out.push_back(readPrompt(s, path_));
    return out;
}

// ---- runs ----

namespace {

// A full-cache run's parameters without their budget word ("full B=128 kvpress" ->
// "full kvpress"): the full cache keeps everything, whatever budget the sweep named.
std::string fullRunParams(const std::string& method, const std::string& params) {
    const MethodInfo* m = methods::find(method);
    if (!m || m->id != MethodId::Full) return params;
    std::string out;
    size_t at = 0;
    while (at < params.size()) {
        size_t end = params.find(' ', at);
        if (end == std::string::npos) end = params.size();
        const std::string word = params.substr(at, end - at);
        if (word.rfind("B=", 0) != 0) out += (out.empty() ? "" : " ") + word;
        at = end + 1;
    }
    return out;
}

}  // namespace

std::string EvalRunRecord::key() const {
    return std::to_string(modelId) + "|" + source + "|" + record + "|" + (questionAfter ? "1" : "0") + "|" +
           std::to_string(newTokens) + "|" + metric + "|" + fullRunParams(method, params);
}

std::string NiahRunRecord::key() const {
    char depthText[32];
    std::snprintf(depthText, sizeof depthText, "%.17g", depth);
    return std::to_string(modelId) + "|" + task + "|" + std::to_string(taskSeed) + "|" + std::to_string(length) +
           "|" + depthText + "|" + std::to_string(sample) + "|" + (questionAfter ? "1" : "0") + "|" +
           std::to_string(newTokens) + "|" + fullRunParams(method, params);
}

bool SessionStore::saveNiahRun(const NiahRunRecord& run) {
    const int64_t now = nowMs();
    Transaction tx(*db_, Transaction::Kind::Write);
    Statement insert(*db_,
                     "INSERT OR IGNORE INTO niah_runs (session_id, model_id, created_ms, task, task_seed, length, "
                     "tokens, depth, sample, question_after, new_tokens, method, budget, params, contains_score, "
                     "exact_score, needle_kept, agreement, mean_kl, answer, expected, needle_positions) VALUES "
                     "(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                     "save the niah run");
    nlohmann::json expected = run.expected;
    insert.bind(1, run.sessionId)
        .bind(2, run.modelId)
        .bind(3, run.createdMs ? run.createdMs : now)
        .bind(4, run.task)
        .bind(5, static_cast<int64_t>(run.taskSeed))
        .bind(6, run.length)
        .bind(7, run.tokens)
        .bind(8, run.depth)
        .bind(9, run.sample)
        .bind(10, int64_t(run.questionAfter ? 1 : 0))
        .bind(11, run.newTokens)
        .bind(12, run.method)
        .bind(13, run.budget)
        .bind(14, run.params)
        .bind(15, run.contains)
        .bind(16, run.exact)
        .bind(17, run.needleKept)
        .bind(18, run.agreement)
        .bind(19, run.meanKl)
        .bind(20, run.answer)
        .bind(21, expected.dump())
        .bindBlob(22, ArrayCodec::encode(run.needlePositions));
    insert.run();
    const bool added = db_->changes() > 0;
    if (added) touchSession(run.sessionId, now);
    tx.commit();
    return added;
}

std::vector<NiahRunRecord> SessionStore::niahRuns(int64_t sessionId) {
    Statement s(*db_,
                "SELECT id, session_id, model_id, created_ms, task, task_seed, length, tokens, depth, sample, "
                "question_after, new_tokens, method, budget, params, contains_score, exact_score, needle_kept, "
                "agreement, mean_kl, answer, expected, needle_positions FROM niah_runs WHERE session_id = ? "
                "ORDER BY id",
                "read the niah runs");
    s.bind(1, sessionId);
    std::vector<NiahRunRecord> out;
    while (s.step()) {
        NiahRunRecord r;
        r.id = s.getInt(0);
        r.sessionId = s.getInt(1);
        r.modelId = s.getInt(2);
        r.createdMs = s.getInt(3);
        r.task = s.getText(4);
        r.taskSeed = static_cast<uint64_t>(s.getInt(5));
        r.length = s.getInt(6);
        r.tokens = s.getInt(7);
        r.depth = s.getDouble(8);
        r.sample = s.getInt(9);
        r.questionAfter = s.getInt(10) != 0;
        r.newTokens = s.getInt(11);
        r.method = s.getText(12);
        r.budget = s.getText(13);
        r.params = s.getText(14);
        r.contains = s.getDouble(15);
        r.exact = s.getDouble(16);
        r.needleKept = s.getDouble(17);
        r.agreement = s.getDouble(18);
        r.meanKl = s.getDouble(19);
        r.answer = s.getText(20);
        const std::string what = path_ + ": niah run " + std::to_string(r.id);
        auto damaged = [&](const std::string& field, const std::string& why) {
            throw Error(what + ": field " + field + " " + why + " (the store is damaged)");
        };
        const nlohmann::json expected = nlohmann::json::parse(s.getText(21), nullptr, false);
        if (!expected.is_array()) damaged("expected", "is not a JSON list");
        for (const auto& e : expected) {
            if (!e.is_string()) damaged("expected", "holds " + std::string(e.type_name()) + ", not only strings");
            r.expected.push_back(e.get<std::string>());
        }
        r.needlePositions = ArrayCodec::decodeInt32s(s.getBlob(22), what + " needle_positions");
        // Every field within its range before a grid or a report counts or divides by it.
        constexpr int64_t kMaxTokens = int64_t(1) << 31;
        auto range = [&](const std::string& field, int64_t v, int64_t lo, int64_t hi) {
            if (v < lo || v > hi)
                damaged(field, "is " + std::to_string(v) + ", outside " + std::to_string(lo) + ".." + std::to_string(hi));
        };
        if (r.task.empty()) damaged("task", "is empty");
        if (r.method.empty()) damaged("method", "is empty");
        range("length", r.length, 1, kMaxTokens);
        range("tokens", r.tokens, 1, kMaxTokens);
        range("sample", r.sample, 0, kMaxTokens);
        range("new_tokens", r.newTokens, 0, kMaxTokens);
        range("question_after", s.getInt(10), 0, 1);
        if (!(r.depth >= 0.0 && r.depth <= 100.0)) damaged("depth", "is " + std::to_string(r.depth) + ", outside 0..100");
        const std::pair<const char*, double> shares[] = {{"contains_score", r.contains},
                                                         {"exact_score", r.exact},
                                                         {"needle_kept", r.needleKept},
                                                         {"agreement", r.agreement}};
        for (const auto& [field, v] : shares)  // NaN: not measured
            if (!std::isnan(v) && !(v >= 0.0 && v <= 1.0))
                damaged(field, "is " + std::to_string(v) + ", outside 0..1");
        if (std::isinf(r.meanKl)) damaged("mean_kl", "is infinite");
        for (const int32_t p : r.needlePositions)
            if (p < 0 || p >= r.tokens) range("needle_positions", p, 0, r.tokens - 1);
        out.push_back(std::move(r));
    }
    return out;
}

bool SessionStore::saveEvalRun(const EvalRunRecord& run) {
    const int64_t now = nowMs();
    Transaction tx(*db_, Transaction::Kind::Write);
    Statement insert(*db_,
                     "INSERT OR IGNORE INTO eval_runs (session_id, model_id, created_ms, source, source_name, record, "
                     "dataset, metric, tokens, question_after, new_tokens, method, budget, params, score, agreement, "
                     "mean_kl, answer, expected) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                     "save the eval run");
    const nlohmann::json expected = run.expected;
    insert.bind(1, run.sessionId)
        .bind(2, run.modelId)
        .bind(3, run.createdMs ? run.createdMs : now)
        .bind(4, run.source)
        .bind(5, run.sourceName)
        .bind(6, run.record)
        .bind(7, run.dataset)
        .bind(8, run.metric)
        .bind(9, run.tokens)
        .bind(10, int64_t(run.questionAfter ? 1 : 0))
        .bind(11, run.newTokens)
        .bind(12, run.method)
        .bind(13, run.budget)
        .bind(14, run.params)
        .bind(15, run.score)
        .bind(16, run.agreement)
        .bind(17, run.meanKl)
        .bind(18, run.answer)
        .bind(19, expected.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
    insert.run();
    const bool added = db_->changes() > 0;
    if (added) touchSession(run.sessionId, now);
    tx.commit();
    return added;
}

std::vector<EvalRunRecord> SessionStore::evalRuns(int64_t sessionId) {
    std::vector<EvalRunRecord> out;
    if (!evalRuns_) return out;  // a store of schema 10 or older, read as it is
    Statement s(*db_,
                "SELECT id, session_id, model_id, created_ms, source, source_name, record, dataset, metric, tokens, "
                "question_after, new_tokens, method, budget, params, score, agreement, mean_kl, answer, expected "
                "FROM eval_runs WHERE session_id = ? ORDER BY id",
                "read the eval runs");
    s.bind(1, sessionId);
    while (s.step()) {
        EvalRunRecord r;
        r.id = s.getInt(0);
        r.sessionId = s.getInt(1);
        r.modelId = s.getInt(2);
        r.createdMs = s.getInt(3);
        r.source = s.getText(4);
        r.sourceName = s.getText(5);
        r.record = s.getText(6);
        r.dataset = s.getText(7);
        r.metric = s.getText(8);
        r.tokens = s.getInt(9);
        r.questionAfter = s.getInt(10) != 0;
        r.newTokens = s.getInt(11);
        r.method = s.getText(12);
        r.budget = s.getText(13);
        r.params = s.getText(14);
        r.score = s.getDouble(15);
        r.agreement = s.getDouble(16);
        r.meanKl = s.getDouble(17);
        r.answer = s.getText(18);
        const std::string what = path_ + ": eval run " + std::to_string(r.id);
        auto damaged = [&](const std::string& field, const std::string& why) {
            throw Error(what + ": field " + field + " " + why + " (the store is damaged)");
        };
        const nlohmann::json expected = nlohmann::json::parse(s.getText(19), nullptr, false);
        if (!expected.is_array()) damaged("expected", "is not a JSON list");
        for (const auto& e : expected) {
            if (!e.is_string()) damaged("expected", "holds " + std::string(e.type_name()) + ", not only strings");
            r.expected.push_back(e.get<std::string>());
        }
        constexpr int64_t kMaxTokens = int64_t(1) << 31;
        auto range = [&](const std::string& field, int64_t v, int64_t lo, int64_t hi) {
            if (v < lo || v > hi)
                damaged(field, "is " + std::to_string(v) + ", outside " + std::to_string(lo) + ".." + std::to_string(hi));
        };
        if (r.source.empty()) damaged("source", "is empty");
        if (r.record.empty()) damaged("record", "is empty");
        if (r.method.empty()) damaged("method", "is empty");
        if (r.metric.empty()) damaged("metric", "is empty");
        range("tokens", r.tokens, 1, kMaxTokens);
        range("new_tokens", r.newTokens, 0, kMaxTokens);
        range("question_after", s.getInt(10), 0, 1);
        for (const auto& [field, v] : {std::pair<const char*, double>{"score", r.score}, {"agreement", r.agreement}})
            if (!std::isnan(v) && !(v >= 0.0 && v <= 1.0)) damaged(field, "is " + std::to_string(v) + ", outside 0..1");
        if (std::isinf(r.meanKl)) damaged("mean_kl", "is infinite");
        out.push_back(std::move(r));
    }
    return out;
}

int64_t SessionStore::saveRun(const RunRecord& run) {
    if (run.status != "complete" && run.status != "failed") {
        throw Error("run status '" + run.status + "' is not complete or failed");
    }
    const int64_t now = nowMs();
    Transaction tx(*db_, Transaction::Kind::Write);
    {
        Statement owner(*db_, "SELECT session_id FROM prompts WHERE id = ?", "save the run");
        owner.bind(1, run.promptId);
        if (!owner.step())
            throw Error(path_ + ": no prompt with id " + std::to_string(run.promptId));
        if (owner.getInt(0) != run.sessionId) {
            throw Error(path_ + ": prompt " + std::to_string(run.promptId) + " is not in session " +
                        std::to_string(run.sessionId));
        }
    }
    Statement insert(
        *db_,
        std::string("INSERT INTO runs (session_id, prompt_id, created_ms, ") + paramColumns(StoreSchema::version()) +
            ", new_tokens, engine_version, device, dtype, threads, prefill_s, status, error, "
            "full_text, text) VALUES (" + placeholders(3 + paramColumnCount(StoreSchema::version()) + 10) + ")",
        "save the run");
    insert.bind(1, run.sessionId)
        .bind(2, run.promptId)
        .bind(3, run.createdMs ? run.createdMs : now);
    bindParams(insert, 4, run.params);
    const int next = 4 + paramColumnCount(StoreSchema::version());
    insert.bind(next, run.newTokens)
        .bind(next + 1, run.engineVersion)
        .bind(next + 2, run.device)
        .bind(next + 3, run.dtype);
    insert.bind(next + 4, run.threads)
        .bind(next + 5, run.prefillSeconds)
        .bind(next + 6, run.status)
        .bind(next + 7, run.error);
    insert.bind(next + 8, run.fullText).bind(next + 9, run.text);
    insert.run();
    const int64_t id = db_->lastInsertId();

    const Selection& sel = run.selection;
    std::vector<int64_t> headCounts;
    for (const auto& layer : sel.kept) headCounts.push_back(int64_t(layer.size()));
    Statement selection(
        *db_,
        "INSERT INTO selections (run_id, params, prompt_length, query_heads, kv_heads, gqa, "
        "head_counts, layer_budgets, entries) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
        "save the selection");
    selection.bind(1, id).bind(2, ParamText::toJson(sel.params)).bind(3, sel.promptLength);
    selection.bind(4, sel.queryHeads).bind(5, sel.kvHeads).bind(6, ParamText::of(sel.gqa));
    selection.bindBlob(7, ArrayCodec::encode(headCounts))
        .bindBlob(8, ArrayCodec::encode(sel.layerBudgets));
    selection.bind(9, sel.entries()).run();
    Statement head(*db_,
                   "INSERT INTO selection_heads (run_id, layer, head, count, positions, pruned_channels) "
                   "VALUES (?, ?, ?, ?, ?, ?)",
                   "save the selection");
    for (size_t l = 0; l < sel.kept.size(); ++l) {
        for (size_t h = 0; h < sel.kept[l].size(); ++h) {
            head.reset();
            head.bind(1, id)
                .bind(2, int64_t(l))
                .bind(3, int64_t(h))
                .bind(4, int64_t(sel.kept[l][h].size()));
            head.bindBlob(5, SelectionCodec::encode(sel.kept[l][h]));
            if (sel.prunedChannels.empty()) {
                head.bindNull(6);
            } else {
                head.bindBlob(6, SelectionCodec::encode(sel.prunedChannels[l][h]));
            }
            head.run();
        }
    }

    const RunMetrics& m = run.metrics;
    Statement metrics(
        *db_,
        "INSERT INTO metrics (run_id, agreed_prefix, token_agreement, mean_kl, top1_agreement, "
        "full_bytes, bytes, ratio, select_s, gather_s, decode_s, kl_per_step, bytes_per_layer, "
        "bytes_per_head, full_token_ids, token_ids, hit_rate, hit_rate_per_layer, hit_k, hit_steps, "
        "allocated_bytes, decode_every, cache_entries) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        "save the metrics");
    metrics.bind(1, id).bind(2, m.agreedPrefix).bind(3, m.tokenAgreement).bind(4, m.meanKl);
    metrics.bind(5, m.top1Agreement).bind(6, m.fullBytes).bind(7, m.bytes).bind(8, m.ratio);
    metrics.bind(9, m.selectSeconds).bind(10, m.gatherSeconds).bind(11, m.decodeSeconds);
    metrics.bindBlob(12, ArrayCodec::encode(m.klPerStep))
        .bindBlob(13, ArrayCodec::encode(m.bytesPerLayer));
    metrics.bindBlob(14, ArrayCodec::encodeRows(m.bytesPerHead))
        .bindBlob(15, ArrayCodec::encode(m.fullTokens));
    metrics.bindBlob(16, ArrayCodec::encode(m.tokens)).bind(17, m.hitRate);
    metrics.bindBlob(18, ArrayCodec::encode(m.hitRatePerLayer)).bind(19, m.hitK).bind(20, m.hitSteps);
    if (m.allocatedBytes > 0) {
        metrics.bind(21, m.allocatedBytes);
    } else {
        metrics.bindNull(21);
    }
    metrics.bind(22, m.decodeEvery);
    if (m.cacheEntries.empty()) {
        metrics.bindNull(23);
    } else {
        metrics.bindBlob(23, ArrayCodec::encode(m.cacheEntries));
    }
    metrics.run();

    Statement stat(
        *db_, "INSERT INTO layer_stats (run_id, name, layer, head, value) VALUES (?, ?, ?, ?, ?)",
        "save the layer statistics");
    for (const LayerStatistic& st : run.layerStats) {
        stat.reset();
        stat.bind(1, id)
            .bind(2, st.name)
            .bind(3, int64_t(st.layer))
            .bind(4, int64_t(st.head))
            .bind(5, st.value);
        stat.run();
    }
    touchSession(run.sessionId, now);
    tx.commit();
    return id;
}

RunRecord SessionStore::run(int64_t id) {
    Transaction snapshot(*db_, Transaction::Kind::Read);
    const std::string what = path_ + ": run " + std::to_string(id);
    RunRecord r;
    {
        Statement s(
            *db_,
            std::string("SELECT id, session_id, prompt_id, created_ms, ") + paramColumns(runsSchema_) +
                ", new_tokens, engine_version, device, dtype, threads, prefill_s, status, error, "
                "full_text, text FROM runs WHERE id = ?",
            "read run " + std::to_string(id));
        s.bind(1, id);
        if (!s.step()) throw Error(path_ + ": no run with id " + std::to_string(id));
        r.id = s.getInt(0);
        r.sessionId = s.getInt(1);
        r.promptId = s.getInt(2);
        r.createdMs = s.getInt(3);
        r.params = readParams(s, 4, runsSchema_, what);
        const int next = 4 + paramColumnCount(runsSchema_);
        r.newTokens = s.getInt(next);
        r.engineVersion = s.getText(next + 1);
        r.device = s.getText(next + 2);
        r.dtype = s.getText(next + 3);
        r.threads = s.getInt(next + 4);
        r.prefillSeconds = s.getDouble(next + 5);
        r.status = s.getText(next + 6);
        r.error = s.getText(next + 7);
        r.fullText = s.getText(next + 8);
        r.text = s.getText(next + 9);
    }
    {
        Statement s(
            *db_,
            "SELECT params, prompt_length, query_heads, kv_heads, gqa, head_counts, layer_budgets, "
            "entries FROM selections WHERE run_id = ?",
            "read the selection of run " + std::to_string(id));
        s.bind(1, id);
        if (!s.step()) throw Error(what + ": the store is damaged (the run has no selection)");
        Selection& sel = r.selection;
        sel.params = ParamText::fromJson(s.getText(0), what + " selection.params");
        sel.promptLength = s.getInt(1);
        sel.queryHeads = s.getInt(2);
        sel.kvHeads = s.getInt(3);
        sel.gqa = ParamText::gqa(s.getText(4), what + " selection.gqa");
        const auto headCounts =
            ArrayCodec::decodeInt64s(s.getBlob(5), what + " selections.head_counts");
        sel.layerBudgets =
            ArrayCodec::decodeInt64s(s.getBlob(6), what + " selections.layer_budgets");
        const int64_t entries = s.getInt(7);
        // The shapes, against each other and within bounds, before anything sizes a loop
        // by them (a report over a run that said query_heads 2000000000 ran for
        // minutes).
        auto damaged = [&](const std::string& why) { throw Error(what + ": the store is damaged (" + why + ")"); };
        constexpr int64_t kMaxHeads = 1 << 16, kMaxPositions = int64_t(1) << 31;
        if (sel.promptLength < 1 || sel.promptLength > kMaxPositions)
            damaged("prompt_length " + std::to_string(sel.promptLength));
        if (sel.kvHeads < 1 || sel.queryHeads < sel.kvHeads || sel.queryHeads > kMaxHeads ||
            sel.queryHeads % sel.kvHeads != 0) {
            damaged("query_heads " + std::to_string(sel.queryHeads) + " and kv_heads " + std::to_string(sel.kvHeads) +
                    " are no attention's heads");
        }
        if (!sel.layerBudgets.empty() && sel.layerBudgets.size() != headCounts.size())
            damaged(std::to_string(sel.layerBudgets.size()) + " layer budgets for " +
                    std::to_string(headCounts.size()) + " layers");
        sel.kept.resize(headCounts.size());
        int64_t expectedRows = 0;
        for (size_t l = 0; l < headCounts.size(); ++l) {
            if (headCounts[l] != sel.headsPerLayer())
                damaged("layer " + std::to_string(l) + " has " + std::to_string(headCounts[l]) + " heads, not " +
                        std::to_string(sel.headsPerLayer()));
            sel.kept[l].resize(size_t(headCounts[l]));
            expectedRows += headCounts[l];
        }
        Statement h(*db_,
                    std::string("SELECT layer, head, count, positions, ") +
                        (runsSchema_ >= 6 ? "pruned_channels" : "NULL") + " FROM selection_heads WHERE run_id = ?",
                    "read the selection of run " + std::to_string(id));
        h.bind(1, id);
        int64_t rows = 0;
        while (h.step()) {
            const int64_t layer = h.getInt(0), head = h.getInt(1);
            const std::string where =
                what + " layer " + std::to_string(layer) + " head " + std::to_string(head);
            if (layer < 0 || layer >= int64_t(sel.kept.size()) || head < 0 ||
                head >= int64_t(sel.kept[size_t(layer)].size())) {
                throw Error(where + ": the store is damaged (no such head)");
            }
            auto& positions = sel.kept[size_t(layer)][size_t(head)];
            positions = SelectionCodec::decode(h.getBlob(3), where);
            if (int64_t(positions.size()) != h.getInt(2))
                throw Error(where + ": corrupt selection (count differs)");
            for (const int32_t p : positions) {
                if (p < 0 || p >= sel.promptLength) {
                    throw Error(where + ": the store is damaged (position " + std::to_string(p) +
                                " is outside the prompt of " + std::to_string(sel.promptLength) + " tokens)");
                }
            }
            if (!h.isNull(4)) {
                if (sel.prunedChannels.empty())
                    sel.prunedChannels.assign(sel.kept.size(), std::vector<std::vector<int32_t>>(sel.kept[0].size()));
                sel.prunedChannels[size_t(layer)][size_t(head)] = SelectionCodec::decode(h.getBlob(4), where + " channels");
            }
            ++rows;
        }
        if (rows != expectedRows || sel.entries() != entries) {
            throw Error(what + ": the store is damaged (selection rows missing)");
        }
    }
    {
        Statement s(*db_,
                    "SELECT agreed_prefix, token_agreement, mean_kl, top1_agreement, full_bytes, "
                    "bytes, ratio, "
                    "select_s, gather_s, decode_s, kl_per_step, bytes_per_layer, bytes_per_head, "
                    "full_token_ids, token_ids, hit_rate, hit_rate_per_layer, hit_k, hit_steps, " +
                        std::string(runsSchema_ < 7 ? "NULL, 0, NULL" : "allocated_bytes, decode_every, cache_entries") +
                        " FROM metrics WHERE run_id = ?",
                    "read the metrics of run " + std::to_string(id));
        s.bind(1, id);
        if (!s.step()) throw Error(what + ": the store is damaged (the run has no metrics)");
        RunMetrics& m = r.metrics;
        m.agreedPrefix = s.getInt(0);
        m.tokenAgreement = s.getDouble(1);
        m.meanKl = s.getDouble(2);
        m.top1Agreement = s.getDouble(3);
        m.fullBytes = s.getInt(4);
        m.bytes = s.getInt(5);
        m.ratio = s.getDouble(6);
        m.selectSeconds = s.getDouble(7);
        m.gatherSeconds = s.getDouble(8);
        m.decodeSeconds = s.getDouble(9);
        m.klPerStep = ArrayCodec::decodeDoubles(s.getBlob(10), what + " metrics.kl_per_step");
        m.bytesPerLayer =
            ArrayCodec::decodeInt64s(s.getBlob(11), what + " metrics.bytes_per_layer");
        m.bytesPerHead = ArrayCodec::decodeRows(s.getBlob(12), what + " metrics.bytes_per_head");
        m.fullTokens = ArrayCodec::decodeInt32s(s.getBlob(13), what + " metrics.full_token_ids");
        m.tokens = ArrayCodec::decodeInt32s(s.getBlob(14), what + " metrics.token_ids");
        m.hitRate = s.getDouble(15);
        m.hitRatePerLayer = ArrayCodec::decodeDoubles(s.getBlob(16), what + " metrics.hit_rate_per_layer");
        m.hitK = s.getInt(17);
        m.hitSteps = s.getInt(18);
        m.allocatedBytes = s.isNull(19) ? 0 : s.getInt(19);
        m.decodeEvery = s.getInt(20);
        if (!s.isNull(21)) m.cacheEntries = ArrayCodec::decodeInt64s(s.getBlob(21), what + " metrics.cache_entries");
    }
    {
        Statement s(
            *db_,
            "SELECT name, layer, head, value FROM layer_stats WHERE run_id = ? ORDER BY rowid",
            "read the layer statistics of run " + std::to_string(id));
        s.bind(1, id);
        while (s.step()) {
            r.layerStats.push_back(
                {s.getText(0), int32_t(s.getInt(1)), int32_t(s.getInt(2)), s.getDouble(3)});
        }
    }
    snapshot.commit();
    return r;
}

std::vector<std::pair<int64_t, int64_t>> SessionStore::runsWithoutPrompt(int64_t sessionId) {
    Statement s(*db_,
                "SELECT r.id, r.prompt_id FROM runs r LEFT JOIN prompts p ON p.id = r.prompt_id "
                "WHERE r.session_id = ? AND (p.id IS NULL OR p.session_id != r.session_id) ORDER BY r.id",
                "list runs without their prompt");
    s.bind(1, sessionId);
    std::vector<std::pair<int64_t, int64_t>> out;
    while (s.step()) out.emplace_back(s.getInt(0), s.getInt(1));
    return out;
}

std::vector<RunSummary> SessionStore::runs(int64_t sessionId) {
    Statement s(
        *db_,
        std::string(
            "SELECT r.id, r.prompt_id, r.created_ms, r.new_tokens, r.status, p.token_count, "
            "m.bytes, m.full_bytes, m.ratio, m.token_agreement, m.mean_kl, m.top1_agreement, "
            "m.agreed_prefix, m.hit_rate, ") +
            (runsSchema_ < 7 ? "0, " : "COALESCE(m.decode_every, 0), ") + paramColumns(runsSchema_, "r.") +
            " FROM runs r JOIN prompts p ON p.id = r.prompt_id "
            "LEFT JOIN metrics m ON m.run_id = r.id WHERE r.session_id = ? ORDER BY r.id",
        "list runs");
    s.bind(1, sessionId);
    std::vector<RunSummary> out;
    while (s.step()) {
        RunSummary r;
        r.id = s.getInt(0);
        r.promptId = s.getInt(1);
        r.createdMs = s.getInt(2);
        r.newTokens = s.getInt(3);
        r.status = s.getText(4);
        r.promptTokens = s.getInt(5);
        r.bytes = s.getInt(6);
        r.fullBytes = s.getInt(7);
        r.ratio = s.getDouble(8);
        r.tokenAgreement = s.getDouble(9);
        r.meanKl = s.getDouble(10);
        r.top1Agreement = s.getDouble(11);
        r.agreedPrefix = s.getInt(12);
        r.hitRate = s.getDouble(13);
        r.decodeEvery = s.getInt(14);
        r.params = readParams(s, 15, runsSchema_, path_ + ": run " + std::to_string(r.id));
        out.push_back(r);
    }
    return out;
}

void SessionStore::deleteRun(int64_t id) {
    Transaction tx(*db_, Transaction::Kind::Write);
    Statement s(*db_, "DELETE FROM runs WHERE id = ?", "delete run " + std::to_string(id));
    s.bind(1, id).run();
    if (sqlite3_changes(db_->handle()) == 0)
        throw Error(path_ + ": no run with id " + std::to_string(id));
    tx.commit();
}

void SessionStore::writeAll(const std::function<void()>& work) {
    Transaction tx(*db_, Transaction::Kind::Write);
    work();
    tx.commit();
}

void SessionStore::makeSelfContained() {
    Statement mode(*db_, "PRAGMA journal_mode = DELETE", "switch to a rollback journal");
    mode.run();
}

std::string SessionStore::integrityCheck() {
    Statement s(*db_, "PRAGMA integrity_check", "check integrity");
    return s.step() ? s.getText(0) : "no answer";
}

}  // namespace kvlens::sessions
