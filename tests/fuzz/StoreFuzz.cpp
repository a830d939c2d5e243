// Mutation fuzzer for the session store's read and import paths: a valid store (a
// session with a model, a prompt, runs with selections, metrics and layer statistics,
// and needle-in-a-haystack runs) is damaged, either through SQL (hostile numbers, NULLs,
// text and blobs of the wrong type, truncated or flipped blobs, dangling ids, deleted
// rows: rows, blobs, shapes and foreign keys) or byte-wise in the file; then every
// reader runs on it: the session listing, runs, each run whole, prompts, models, needle
// runs and their grid, a report's data and tables, `sessions import` into a new store
// (whose result must read back whole) and `sessions merge` (which, failing, leaves no
// target). Each must succeed or throw one kvlens::Error line, within 10 s. Built with
// ASan/UBSan, so an out-of-bounds read or an overflow aborts it too. Deterministic for a
// given --seed; a failing input is kept as store_fuzz_failure.db.
#include <sqlite3.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <fstream>
#include <functional>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "FuzzMutator.h"
#include "core/Error.h"
#include "reports/ReportData.h"
#include "reports/ReportTables.h"
#include "sessions/NiahGrid.h"
#include "sessions/SampleRecords.h"
#include "sessions/SessionExport.h"
#include "sessions/SessionMerge.h"
#include "sessions/SessionStore.h"

namespace {

namespace fs = std::filesystem;
using kvlens::sessions::SessionStore;

std::string readBytes(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
}

void writeBytes(const std::string& path, const std::string& bytes) {
    std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
}

void removeStore(const std::string& path) {
    for (const char* suffix : {"", "-wal", "-shm", "-journal"}) fs::remove(path + suffix);
}

// The valid store every input starts from: shapes consistent with each other (3 layers,
// 2 KV heads of 16 query heads, a 64-token prompt).
void writeSeed(const std::string& path) {
    namespace t = kvlens::sessions::test;
    removeStore(path);
    SessionStore store(path);
    const int64_t session = store.createSession("s", "notes").id;
    kvlens::sessions::ModelRecord model = t::sampleModel();
    model.layers = 3;
    model.heads = 16;
    model.kvHeads = 2;
    const int64_t modelId = store.saveModel(model);
    const int64_t prompt = store.savePrompt(t::samplePrompt(session, modelId, 64));
    t::SampleShape shape;
    shape.layers = 3;
    shape.heads = 2;
    shape.promptLength = 64;
    shape.kept = 10;
    for (uint64_t seed = 1; seed <= 3; ++seed) store.saveRun(t::sampleRun(seed, session, prompt, shape));
    for (int i = 0; i < 3; ++i) {
        kvlens::sessions::NiahRunRecord r;
        r.sessionId = session;
        r.modelId = modelId;
        r.task = "single";
        r.taskSeed = 5;
        r.length = 1024;
        r.tokens = 1019;
        r.depth = 25.0 * i;
        r.newTokens = 16;
        r.method = i == 2 ? "full" : "snapkv";
        r.budget = i == 2 ? "" : "64";
        r.params = i == 2 ? "full" : "snapkv budget=64";
        r.contains = 1.0;
        r.needleKept = 0.5;
        r.agreement = 0.75;
        r.meanKl = 0.01;
        r.answer = "4821937";
        r.expected = {"4821937"};
        r.needlePositions = {100, 101, 102};
        store.saveNiahRun(r);
    }
}

class Mutator {
public:
    explicit Mutator(uint64_t seed) : rng_(seed) {}
    size_t below(size_t n) { return n == 0 ? 0 : std::uniform_int_distribution<size_t>(0, n - 1)(rng_); }

    // One to four SQL changes; a change a constraint refuses is skipped, as it would be
    // for whoever wrote the store.
    void sql(const std::string& path) {
        sqlite3* db = nullptr;
        if (sqlite3_open(path.c_str(), &db) != SQLITE_OK) {
            sqlite3_close(db);
            return;
        }
        struct Table {
            std::string name;
            std::vector<std::string> columns;
        };
        std::vector<Table> tables;
        query(db, "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'",
              [&](sqlite3_stmt* s) { tables.push_back({text(s, 0), {}}); });
        for (Table& t : tables)
            query(db, "SELECT name FROM pragma_table_info('" + t.name + "')",
                  [&](sqlite3_stmt* s) { t.columns.push_back(text(s, 0)); });
        const size_t n = 1 + below(4);
        for (size_t k = 0; k < n && !tables.empty(); ++k) {
            const Table& t = tables[below(tables.size())];
            if (t.columns.empty()) continue;
            const std::string& c = t.columns[below(t.columns.size())];
            std::vector<int64_t> rowids;
            query(db, "SELECT rowid FROM \"" + t.name + "\"", [&](sqlite3_stmt* s) {
                rowids.push_back(sqlite3_column_int64(s, 0));
            });
            const std::string where = rowids.empty() || below(4) == 0
                                          ? std::string()
                                          : " WHERE rowid = " + std::to_string(rowids[below(rowids.size())]);
            switch (below(4)) {
                case 0:
                    exec(db, "DELETE FROM \"" + t.name + "\"" + where);
                    break;
                case 1:
                    flipBlob(db, t.name, c, where);
                    break;
                default:
                    exec(db, "UPDATE \"" + t.name + "\" SET \"" + c + "\" = " + hostile(c) + where);
            }
        }
        sqlite3_close(db);
    }

    // Byte flips after the header, or a truncation.
    void bytes(std::string& file) {
        if (file.size() <= 100) return;
        if (below(5) == 0) {
            file.resize(100 + below(file.size() - 100));
            return;
        }
        const size_t n = 1 + below(16);
        for (size_t k = 0; k < n; ++k) file[100 + below(file.size() - 100)] = char(below(256));
    }

private:
    static std::string text(sqlite3_stmt* s, int column) {
        const auto* p = reinterpret_cast<const char*>(sqlite3_column_text(s, column));
        return p ? std::string(p) : std::string();
    }
    static void query(sqlite3* db, const std::string& sql, const std::function<void(sqlite3_stmt*)>& row) {
        sqlite3_stmt* s = nullptr;
        if (sqlite3_prepare_v2(db, sql.c_str(), -1, &s, nullptr) == SQLITE_OK)
            while (sqlite3_step(s) == SQLITE_ROW) row(s);
        sqlite3_finalize(s);
    }
    static void exec(sqlite3* db, const std::string& sql) { sqlite3_exec(db, sql.c_str(), nullptr, nullptr, nullptr); }

    std::string hostile(const std::string& column) {
        static const char* values[] = {"NULL", "0", "-1", "1", "2", "3", "7", "64", "65", "2147483647", "2147483648",
                                       "-2147483649", "9223372036854775807", "-9223372036854775808", "1e308",
                                       "-1e308", "0.5", "'x'", "''", "'snapkv'", "'full'", "'{}'", "'[]'",
                                       "'null'", "'{\"method\": 7}'", "X''", "X'00'", "X'ffffffff'",
                                       "randomblob(9)", "randomblob(300)", "zeroblob(4096)", "'\xff\xfe'"};
        constexpr size_t kValues = sizeof values / sizeof *values;
        const size_t pick = below(kValues + 4);
        if (pick < kValues) return values[pick];
        switch (pick - kValues) {
            case 0:  // truncated
                return "substr(\"" + column + "\", 1, " + std::to_string(below(12)) + ")";
            case 1:  // a dangling or shifted id
                return "\"" + column + "\" + " + std::to_string(1 + below(1000));
            case 2:
                return "\"" + column + "\" * -1";
            default:
                return "\"" + column + "\" || X'00'";
        }
    }

    void flipBlob(sqlite3* db, const std::string& table, const std::string& column, const std::string& where) {
        std::vector<std::pair<int64_t, std::string>> values;
        query(db, "SELECT rowid, \"" + column + "\" FROM \"" + table + "\"" + where, [&](sqlite3_stmt* s) {
            if (sqlite3_column_type(s, 1) != SQLITE_BLOB) return;
            const auto* p = static_cast<const char*>(sqlite3_column_blob(s, 1));
            values.emplace_back(sqlite3_column_int64(s, 0),
                                p ? std::string(p, size_t(sqlite3_column_bytes(s, 1))) : std::string());
        });
        for (auto& [rowid, blob] : values) {
            if (blob.empty()) continue;
            const size_t n = 1 + below(4);
            for (size_t k = 0; k < n; ++k) blob[below(blob.size())] = char(below(256));
            if (below(4) == 0) blob.resize(below(blob.size()));
            sqlite3_stmt* s = nullptr;
            const std::string sql = "UPDATE \"" + table + "\" SET \"" + column + "\" = ? WHERE rowid = ?";
            if (sqlite3_prepare_v2(db, sql.c_str(), -1, &s, nullptr) == SQLITE_OK) {
                sqlite3_bind_blob(s, 1, blob.data(), int(blob.size()), SQLITE_TRANSIENT);
                sqlite3_bind_int64(s, 2, rowid);
                sqlite3_step(s);
            }
            sqlite3_finalize(s);
        }
    }

    std::mt19937_64 rng_;
};

// Every reader over `store`, as `sessions show`, `sessions export` and `report` use them.
// Returns the runs read whole.
int64_t readAll(SessionStore& store, int64_t& niahRuns) {
    int64_t runs = 0;
    for (const kvlens::sessions::SessionInfo& s : store.sessions()) {
        store.models(s.id);
        store.prompts(s.id);
        store.runsWithoutPrompt(s.id);
        for (const kvlens::sessions::RunSummary& r : store.runs(s.id)) {
            store.run(r.id);
            ++runs;
        }
        const auto niah = store.niahRuns(s.id);
        niahRuns += int64_t(niah.size());
        const kvlens::sessions::NiahGrid grid(niah);
        for (const auto& g : grid.groups())
            for (const auto& kind : g.kinds)
                for (double depth : g.depths)
                    for (int64_t length : g.lengths) (void)g.cell(kind, depth, length);
    }
    return runs;
}

}  // namespace

int main(int argc, char** argv) {
    uint64_t seed = 1, iterations = 1500;
    for (int i = 1; i < argc; ++i) {
        if (!kvlens::test::fuzzCountFlag(argc, argv, i, seed, iterations)) {
            std::fprintf(stderr, "usage: kvlens_store_fuzz [--seed N] [--iterations N]\n");
            return 2;
        }
    }
    const std::string seedPath = "store_fuzz_seed.db", input = "store_fuzz_input.db",
                      imported = "store_fuzz_imported.db", merged = "store_fuzz_merged.db";
    try {
        writeSeed(seedPath);
        SessionStore store(seedPath, SessionStore::Access::ReadOnly);
        int64_t niah = 0;
        if (readAll(store, niah) != 3 || niah != 3) {
            std::fprintf(stderr, "the seed store does not read back whole\n");
            return 1;
        }
    } catch (const std::exception& e) {
        std::fprintf(stderr, "the seed store: %s\n", e.what());
        return 1;
    }
    const std::string seedBytes = readBytes(seedPath);
    Mutator mut(seed);
    const auto start = std::chrono::steady_clock::now();
    uint64_t refused = 0, readWhole = 0, importedWhole = 0, importRefused = 0, mergedWhole = 0, mergeRefused = 0,
             sqlInputs = 0, byteInputs = 0;
    double slowest = 0.0;
    for (uint64_t it = 0; it < iterations; ++it) {
        removeStore(input);
        std::string bytes = seedBytes;
        const bool byteWise = mut.below(5) == 0;
        if (byteWise) {
            mut.bytes(bytes);
            writeBytes(input, bytes);
            ++byteInputs;
        } else {
            writeBytes(input, bytes);
            mut.sql(input);
            ++sqlInputs;
        }
        const std::string kept = readBytes(input);
        auto fail = [&](const std::string& why) {
            std::fprintf(stderr, "iteration %llu: %s\n", (unsigned long long)it, why.c_str());
            writeBytes("store_fuzz_failure.db", kept);
            return 1;
        };
        // One line, naming the file it is about.
        auto checkMessage = [&](const std::string& m, const std::string& file) -> std::string {
            if (m.empty() || m.find('\n') != std::string::npos) return "a message that is not one line: '" + m + "'";
            if (!file.empty() && m.find(file) == std::string::npos)
                return "a message that does not name " + file + ": '" + m + "'";
            return "";
        };
        const auto t0 = std::chrono::steady_clock::now();
        std::string problem;
        // Reading.
        try {
            SessionStore store(input, SessionStore::Access::ReadOnly);
            int64_t niah = 0;
            readAll(store, niah);
            ++readWhole;
            for (const kvlens::sessions::SessionInfo& s : store.sessions()) {
                try {
                    const kvlens::ReportData data = kvlens::ReportData::load(store, s.name);
                    kvlens::ReportTables::settings(data);
                    kvlens::ReportTables::metrics(data);
                    kvlens::ReportTables::overlap(data);
                    kvlens::ReportTables::overlapPerLayer(data);
                } catch (const kvlens::Error& e) {
                    problem = checkMessage(e.what(), "");
                    if (!problem.empty()) return fail("report: " + problem);
                }
            }
        } catch (const kvlens::Error& e) {
            problem = checkMessage(e.what(), input);
            if (!problem.empty()) return fail("read: " + problem);
            ++refused;
        } catch (const std::exception& e) {
            return fail(std::string("read: ") + e.what() + " thrown instead of kvlens::Error");
        }
        // Import into a new store: what it takes reads back whole.
        removeStore(imported);
        try {
            SessionStore to(imported);
            try {
                kvlens::sessions::SessionExport::importSession(to, input);
                ++importedWhole;
                int64_t niah = 0;
                try {
                    readAll(to, niah);
                } catch (const kvlens::Error& e) {
                    return fail(std::string("the import took what does not read back: ") + e.what());
                }
            } catch (const kvlens::Error& e) {
                problem = checkMessage(e.what(), input);
                if (!problem.empty()) return fail("import: " + problem);
                if (!to.sessions().empty()) return fail("a refused import left a session behind");
                ++importRefused;
            }
        } catch (const std::exception& e) {
            return fail(std::string("import: ") + e.what() + " thrown instead of kvlens::Error");
        }
        // Merge into a new store: refused, it leaves no target.
        removeStore(merged);
        try {
            kvlens::sessions::SessionMerge::merge({input}, merged);
            ++mergedWhole;
        } catch (const kvlens::Error& e) {
            // Named: the source, or the target when the source was read whole.
            problem = checkMessage(e.what(), std::string(e.what()).find(merged) != std::string::npos ? merged : input);
            if (!problem.empty()) return fail("merge: " + problem);
            if (fs::exists(merged)) return fail("a refused merge left its target behind: " + std::string(e.what()));
            ++mergeRefused;
        } catch (const std::exception& e) {
            return fail(std::string("merge: ") + e.what() + " thrown instead of kvlens::Error");
        }
        const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        slowest = std::max(slowest, s);
        if (s > 10.0) return fail("took " + std::to_string(s) + " s");
    }
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::printf(
        "store fuzz: %llu damaged stores (%llu through SQL, %llu byte-wise): read whole %llu, refused %llu; "
        "import took %llu (each read back whole), refused %llu; merge took %llu, refused %llu (no target left); "
        "every refusal one line; slowest %.3f s, %.1f s in all\n",
        (unsigned long long)iterations, (unsigned long long)sqlInputs, (unsigned long long)byteInputs,
        (unsigned long long)readWhole, (unsigned long long)refused, (unsigned long long)importedWhole,
        (unsigned long long)importRefused, (unsigned long long)mergedWhole, (unsigned long long)mergeRefused,
        slowest, s);
    for (const std::string& p : {seedPath, input, imported, merged}) removeStore(p);
    return 0;
}
