// A transaction scope: BEGIN on construction, ROLLBACK unless commit() ran.
// Writes take the write lock up front (BEGIN IMMEDIATE) so that two writers
// wait on busy_timeout instead of failing on a lock upgrade. Inside another
// transaction it is a SAVEPOINT, so saves nest in SessionStore::writeAll.
#pragma once

namespace kvlens::sessions {

class Database;

class Transaction {
public:
    enum class Kind { Read, Write };
    Transaction(Database& db, Kind kind);
    ~Transaction();
    Transaction(const Transaction&) = delete;
    Transaction& operator=(const Transaction&) = delete;

    void commit();

private:
    Database& db_;
    bool open_ = true;
    bool nested_ = false;
};

}  // namespace kvlens::sessions
