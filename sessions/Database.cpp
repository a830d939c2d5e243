// SQLite connection wrapper: open, exec, pragmas, and error messages.
#include "sessions/Database.h"

#include <sqlite3.h>

#include "core/Error.h"
#include "sessions/Statement.h"

namespace kvlens::sessions {

namespace {

// SQLite's message on one line: a damaged schema's message quotes the schema's own SQL,
// line breaks and all. Runs of control characters become one space.
std::string oneLine(const char* message) {
    std::string out;
    bool gap = false;
    for (const char* p = message ? message : ""; *p; ++p) {
        if (static_cast<unsigned char>(*p) < 0x20 || *p == 0x7f) {
            gap = true;
            continue;
        }
        if (gap && !out.empty()) out += ' ';
        gap = false;
        out += *p;
    }
    return out;
}

std::string why(sqlite3* db, int code) {
    const int primary = code & 0xff;
    if (primary == SQLITE_CORRUPT || primary == SQLITE_NOTADB) {
        return "the store is damaged (" + oneLine(db ? sqlite3_errmsg(db) : sqlite3_errstr(code)) + ")";
    }
    if (primary == SQLITE_BUSY || primary == SQLITE_LOCKED) {
        return "another process kept the store locked too long (" +
               std::string(sqlite3_errstr(code)) + ")";
    }
    if (primary == SQLITE_READONLY) return "the store is read-only here";
    return oneLine(db ? sqlite3_errmsg(db) : sqlite3_errstr(code));
}

}  // namespace

Database::Database(const std::string& path, const std::string& target, int flags, bool uri)
    : path_(path) {
    if (uri) flags |= SQLITE_OPEN_URI;
    const int rc = sqlite3_open_v2(target.c_str(), &db_, flags | SQLITE_OPEN_NOMUTEX, nullptr);
    if (rc != SQLITE_OK) {
        const std::string message = path_ + ": cannot open: " + why(db_, rc);
        sqlite3_close_v2(db_);
        db_ = nullptr;
        throw Error(message);
    }
    sqlite3_extended_result_codes(db_, 1);
}

Database::~Database() { sqlite3_close_v2(db_); }

void Database::exec(const std::string& sql, const std::string& doing) {
    char* message = nullptr;
    const int rc = sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &message);
    sqlite3_free(message);
    if (rc != SQLITE_OK) fail(doing);
}

int64_t Database::pragmaInt(const std::string& name) {
    Statement s(*this, "PRAGMA " + name, "read " + name);
    return s.step() ? s.getInt(0) : 0;
}

bool Database::hasTable(const std::string& name) {
    Statement s(*this, "SELECT 1 FROM sqlite_schema WHERE type = 'table' AND name = ?",
                "read the schema");
    s.bind(1, name);
    return s.step();
}

int64_t Database::changes() const { return sqlite3_changes64(db_); }

int64_t Database::lastInsertId() const { return sqlite3_last_insert_rowid(db_); }

void Database::fail(const std::string& doing) const {
    throw Error(path_ + ": cannot " + doing + ": " + why(db_, sqlite3_extended_errcode(db_)));
}

void Database::leaveFileAsIs() {
    sqlite3_db_config(db_, SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 1, nullptr);
}

}  // namespace kvlens::sessions
