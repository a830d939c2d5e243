// Prepared statements over the SQLite C API.
#include "sessions/Statement.h"

#include <sqlite3.h>

#include <cmath>
#include <limits>

#include "core/Error.h"
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

// A stored value of another type than the column's reader expects is damage (SQLite's
// affinity turns numeric text into numbers, so text left in an INTEGER column never was
// one): one line naming the file, the operation and the column, never a silent 0.
// SQLITE_FLOAT takes integers too.
void Statement::expectType(int column, int type) const {
    const int got = sqlite3_column_type(stmt_, column);
    if (got == SQLITE_NULL || got == type || (type == SQLITE_FLOAT && got == SQLITE_INTEGER)) return;
    auto name = [](int t) -> std::string {
        switch (t) {
            case SQLITE_INTEGER: return "an integer";
            case SQLITE_FLOAT: return "a real number";
            case SQLITE_TEXT: return "text";
            case SQLITE_BLOB: return "a blob";
            default: return "NULL";
        }
    };
    const char* columnName = sqlite3_column_name(stmt_, column);
    throw Error(db_.path() + ": cannot " + doing_ + ": column " + (columnName ? columnName : "?") + " holds " +
                name(got) + ", not " + (type == SQLITE_FLOAT ? "a number" : name(type)) +
                " (the store is damaged)");
}

int64_t Statement::getInt(int column) const {
    expectType(column, SQLITE_INTEGER);
    return sqlite3_column_int64(stmt_, column);
}

double Statement::getDouble(int column) const {
    if (isNull(column)) return std::numeric_limits<double>::quiet_NaN();
    expectType(column, SQLITE_FLOAT);
    if (sqlite3_column_type(stmt_, column) == SQLITE_INTEGER) return double(sqlite3_column_int64(stmt_, column));
    return sqlite3_column_double(stmt_, column);
}

std::string Statement::getText(int column) const {
    if (sqlite3_column_type(stmt_, column) == SQLITE_BLOB) expectType(column, SQLITE_TEXT);
    const auto* text = reinterpret_cast<const char*>(sqlite3_column_text(stmt_, column));
    return text ? std::string(text, size_t(sqlite3_column_bytes(stmt_, column))) : std::string();
}

std::string Statement::getBlob(int column) const {
    expectType(column, SQLITE_BLOB);
    const auto* bytes = static_cast<const char*>(sqlite3_column_blob(stmt_, column));
    return bytes ? std::string(bytes, size_t(sqlite3_column_bytes(stmt_, column))) : std::string();
}

}  // namespace kvlens::sessions
