// BEGIN / COMMIT / ROLLBACK around a unit of work.
#include "sessions/Transaction.h"

#include <sqlite3.h>

#include "sessions/Database.h"

namespace kvlens::sessions {

Transaction::Transaction(Database& db, Kind kind) : db_(db) {
    nested_ = sqlite3_get_autocommit(db_.handle()) == 0;
    if (nested_) {
        db_.exec("SAVEPOINT kvlens_nested", "begin a nested transaction");
    } else {
        db_.exec(kind == Kind::Write ? "BEGIN IMMEDIATE" : "BEGIN", "begin a transaction");
    }
}

Transaction::~Transaction() {
    if (!open_) return;
    if (nested_) {
        sqlite3_exec(db_.handle(), "ROLLBACK TO kvlens_nested; RELEASE kvlens_nested", nullptr,
                     nullptr, nullptr);
    } else {
        sqlite3_exec(db_.handle(), "ROLLBACK", nullptr, nullptr, nullptr);
    }
}

void Transaction::commit() {
    db_.exec(nested_ ? "RELEASE kvlens_nested" : "COMMIT", "commit");
    open_ = false;
}

}  // namespace kvlens::sessions
