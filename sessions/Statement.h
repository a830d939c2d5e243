// A prepared SQLite statement: bind by 1-based index, step, read columns.
// Doubles round-trip bit-exact; NaN, which SQLite stores as NULL, reads back as NaN.
#pragma once

#include <cstdint>
#include <string>

struct sqlite3_stmt;

namespace kvlens::sessions {

class Database;

class Statement {
public:
    // `doing` names the operation in error messages ("save run", ...).
    Statement(Database& db, const std::string& sql, const std::string& doing);
    ~Statement();
    Statement(const Statement&) = delete;
    Statement& operator=(const Statement&) = delete;

    Statement& bind(int index, int64_t value);
    Statement& bind(int index, int value) { return bind(index, int64_t(value)); }
    Statement& bind(int index, double value);
    Statement& bind(int index, const std::string& text);
    Statement& bindBlob(int index, const std::string& bytes);
    Statement& bindNull(int index);

    // True while there is a row to read; throws on failure.
    bool step();
    // Steps a statement that returns no rows.
    void run();
    void reset();

    bool isNull(int column) const;
    // The getters refuse a value of another storage type than theirs (NULL aside: 0, NaN,
    // empty) with one line naming the file, the operation and the column; getDouble
    // takes integers too, getText anything but a blob.
    int64_t getInt(int column) const;
    double getDouble(int column) const;
    std::string getText(int column) const;
    std::string getBlob(int column) const;

private:
    void expectType(int column, int type) const;

    Database& db_;
    std::string doing_;
    sqlite3_stmt* stmt_ = nullptr;
};

}  // namespace kvlens::sessions
