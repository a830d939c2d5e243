// Prepared statements over the SQLite C API.
#include "sessions/Statement.h"

#include <sqlite3.h>

#include <cmath>
#include <limits>

#include "sessions/Database.h"

namespace kvlens::sessions {

Statement::Statement(Database& db, const std::string& sql, const std::string& doing)
    : db_(db), doing_(doing) {
    if (sqlite3_prepare_v2(db.handle(), sql.c_str(), int(sql.size()), &stmt_, nullptr) !=
        SQLITE_OK) {
        db_.fail(doing_);
    }
}

Statement::~Statement() { sqlite3_finalize(stmt_); }

Statement& Statement::bind(int index, int64_t value) {
    if (sqlite3_bind_int64(stmt_, index, value) != SQLITE_OK) db_.fail(doing_);
    return *this;
}

Statement& Statement::bind(int index, double value) {
    const int rc = std::isnan(value) ? sqlite3_bind_null(stmt_, index)
                                     : sqlite3_bind_double(stmt_, index, value);
    if (rc != SQLITE_OK) db_.fail(doing_);
    return *this;
}

Statement& Statement::bind(int index, const std::string& text) {
    if (sqlite3_bind_text(stmt_, index, text.data(), int(text.size()), SQLITE_TRANSIENT) !=
        SQLITE_OK) {
        db_.fail(doing_);
    }
    return *this;
}

Statement& Statement::bindNull(int index) {
    if (sqlite3_bind_null(stmt_, index) != SQLITE_OK) db_.fail(doing_);
    return *this;
}

Statement& Statement::bindBlob(int index, const std::string& bytes) {
    // A zero-length blob must still be a BLOB, not NULL: pass a non-null pointer.
    static const char empty = 0;
    if (sqlite3_bind_blob(stmt_, index, bytes.empty() ? &empty : bytes.data(), int(bytes.size()),
                          SQLITE_TRANSIENT) != SQLITE_OK) {
        db_.fail(doing_);
    }
    return *this;
}

bool Statement::step() {
    const int rc = sqlite3_step(stmt_);
    if (rc == SQLITE_ROW) return true;
    if (rc == SQLITE_DONE) return false;
    db_.fail(doing_);
}

void Statement::run() {
    while (step()) {
    }
}

void Statement::reset() {
    sqlite3_reset(stmt_);
    sqlite3_clear_bindings(stmt_);
}

bool Statement::isNull(int column) const {
    return sqlite3_column_type(stmt_, column) == SQLITE_NULL;
}

int64_t Statement::getInt(int column) const { return sqlite3_column_int64(stmt_, column); }

double Statement::getDouble(int column) const {
    if (isNull(column)) return std::numeric_limits<double>::quiet_NaN();
    return sqlite3_column_double(stmt_, column);
}

std::string Statement::getText(int column) const {
    const auto* text = reinterpret_cast<const char*>(sqlite3_column_text(stmt_, column));
    return text ? std::string(text, size_t(sqlite3_column_bytes(stmt_, column))) : std::string();
}

std::string Statement::getBlob(int column) const {
    const auto* bytes = static_cast<const char*>(sqlite3_column_blob(stmt_, column));
    return bytes ? std::string(bytes, size_t(sqlite3_column_bytes(stmt_, column))) : std::string();
}

}  // namespace kvlens::sessions
