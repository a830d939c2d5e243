// The session store: one SQLite file holding sessions, models, prompts and
// runs (parameters, selections, metrics, per-layer statistics, text). WAL
// mode, so a reader (the GUI) and a writer (the CLI) work at once; every save
// is one transaction, so a killed writer leaves only whole runs behind.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "sessions/StoreRecords.h"

namespace kvlens::sessions {

class Database;

class SessionStore {
public:
    enum class Access {
        ReadWrite,  // creates the store (and its folders) when missing
        ReadOnly,   // never writes; works on a read-only file or folder
    };

    // $XDG_DATA_HOME/kvlens/sessions.db, else ~/.local/share/kvlens/sessions.db.
    static std::string defaultPath();
    static uint32_t schemaVersion();
    // Why `name` cannot name a session ("session name is empty", "... has a control
    // character", shown escaped), or empty when it can.
    static std::string nameProblem(const std::string& name);
    // The name as printed: control characters as \xNN, so that one stored by another
    // tool cannot break a line of a listing.
    static std::string shownName(const std::string& name);

    // Opens (or, ReadWrite, creates) the store and applies pending migrations.
    // Throws kvlens::Error with one line naming the file, leaving it unchanged,
    // when it is not a SQLite file, is another program's database, is truncated
    // or damaged, was written by a newer version, or cannot be written (ReadWrite).
    explicit SessionStore(const std::string& path, Access access = Access::ReadWrite);
    ~SessionStore();
    SessionStore(const SessionStore&) = delete;
    SessionStore& operator=(const SessionStore&) = delete;

    const std::string& path() const { return path_; }

    // Sessions, by unique name. Lookups by name throw kvlens::Error naming the
    // store and the session when there is none.
    std::vector<SessionInfo> sessions();
    std::optional<SessionInfo> findSession(const std::string& name);
    SessionInfo session(const std::string& name);
    SessionInfo session(int64_t id);
    SessionInfo createSession(const std::string& name, const std::string& notes = "");
    SessionInfo openSession(const std::string& name);  // finds it or creates it
    // For import and export: a new session with the notes, times and UI state
    // of `info` (its id and counts are ignored); setSessionTimes puts the times
    // back after the saves that follow have moved updatedMs.
    SessionInfo createSession(const SessionInfo& info);
    void setSessionTimes(const std::string& name, int64_t createdMs, int64_t updatedMs);
    void renameSession(const std::string& from, const std::string& to);
    void setNotes(const std::string& name, const std::string& notes);
    void setUiState(const std::string& name, const std::string& json);  // throws on bad JSON
    // Deletes the session with its prompts and runs, and models no session uses.
    void deleteSession(const std::string& name);

    // Models are shared by the sessions of a store: saving an equal record
    // returns the existing id.
    int64_t saveModel(const ModelRecord& model);
    ModelRecord model(int64_t id);
    std::vector<ModelRecord> models(int64_t sessionId);  // those its prompts and niah runs use
    // The SHA-256 recorded for a file of this path, size and mtime, if any:
    // saves a re-hash of a multi-GB model that did not change.
    std::optional<std::string> knownSha256(const std::string& path, int64_t sizeBytes,
                                           int64_t mtimeNs);
    // The same for file `name` of the folder model at `folder` (absolute).
    std::optional<std::string> knownFileSha256(const std::string& folder, const std::string& name, int64_t sizeBytes,
                                               int64_t mtimeNs);

    // Prompts belong to a session; saving an equal one returns its id.
    int64_t savePrompt(const PromptRecord& prompt);
    PromptRecord prompt(int64_t id);
    std::vector<PromptRecord> prompts(int64_t sessionId);

    // Saves the run with its selection, metrics and statistics in one
    // transaction and returns its id (createdMs 0: now).
    int64_t saveRun(const RunRecord& run);
    // Saves a needle-in-a-haystack run; false (nothing written) when the session
    // already holds the same run (NiahRunRecord::key).
    bool saveNiahRun(const NiahRunRecord& run);
    std::vector<NiahRunRecord> niahRuns(int64_t sessionId);  // in the order saved
    // Saves a task evaluation's run; false (nothing written) when the session already holds
    // the same run (EvalRunRecord::key).
    bool saveEvalRun(const EvalRunRecord& run);
    std::vector<EvalRunRecord> evalRuns(int64_t sessionId);  // in the order saved; none in a schema <= 10 store read as it is
    RunRecord run(int64_t id);  // read in one snapshot
    std::vector<RunSummary> runs(int64_t sessionId);
    // Runs of the session whose prompt the store does not hold (run id, prompt id): a
    // store edited with its foreign keys off. runs() cannot list them.
    std::vector<std::pair<int64_t, int64_t>> runsWithoutPrompt(int64_t sessionId);
    void deleteRun(int64_t id);

    // Runs `work` in one write transaction: the saves inside it commit
    // together or, when it throws, not at all.
    void writeAll(const std::function<void()>& work);

    // SQLite's PRAGMA integrity_check: "ok" or its first complaint.
    std::string integrityCheck();
    // Checkpoints the WAL and switches to a rollback journal, so that the file
    // stands alone once closed (exports); it goes back to WAL when next opened
    // for writing.
    void makeSelfContained();

private:
    void open(Access access);
    void touchSession(int64_t sessionId, int64_t nowMs);

    std::string path_;
    std::unique_ptr<Database> db_;
    // A schema 2 store opened read-only: its runs lack the LagKV, ChunkKV and Expected
    // Attention settings (schema 3), which read as their defaults.
    int64_t runsSchema_ = 0;  // the schema the runs table is read as (older when read-only)
    bool noModelFiles_ = false;  // a read-only store of schema 2 or 3
    bool evalRuns_ = true;       // false: a store of schema 10 or older read as it is (no eval_runs)
    void readModelFiles(ModelRecord& m);
};

}  // namespace kvlens::sessions
