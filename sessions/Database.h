// One SQLite connection to a store file, with errors turned into one-line
// kvlens::Error messages that name the file and what was being done.
#pragma once

#include <cstdint>
#include <string>

struct sqlite3;

namespace kvlens::sessions {

class Database {
public:
    // `flags` are sqlite3_open_v2 flags; `uri` true when `target` is a file: URI.
    Database(const std::string& path, const std::string& target, int flags, bool uri = false);
    ~Database();
    Database(const Database&) = delete;
    Database& operator=(const Database&) = delete;

    sqlite3* handle() const { return db_; }
    const std::string& path() const { return path_; }

    // Runs SQL without results; throws "<path>: cannot <doing>: <why>".
    void exec(const std::string& sql, const std::string& doing);
    // An integer PRAGMA (application_id, user_version, ...).
    int64_t pragmaInt(const std::string& name);
    bool hasTable(const std::string& name);
    int64_t lastInsertId() const;
    int64_t changes() const;  // rows the last statement inserted, updated or deleted

    // Throws the one-line error for the connection's last failure.
    [[noreturn]] void fail(const std::string& doing) const;
    // Keeps close() from checkpointing the WAL into the file: used when the
    // store is refused, so that a refused file is never written.
    void leaveFileAsIs();

private:
    std::string path_;
    sqlite3* db_ = nullptr;
};

}  // namespace kvlens::sessions
