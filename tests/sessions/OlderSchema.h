// A store as schema 9 wrote it, made from a current one: the knob columns back in runs,
// filled from runs.params, and runs.params dropped (the tests of older schemas then drop what
// each schema before 9 lacked).
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "sessions/Database.h"
#include "sessions/Statement.h"

namespace kvlens::sessions::test {

inline void downgradeToSchema9(const std::string& path) {
    Database db(path, path, SQLITE_OPEN_READWRITE);
    db.exec(
        "ALTER TABLE runs ADD COLUMN window_size INTEGER NOT NULL DEFAULT 0;"
        "ALTER TABLE runs ADD COLUMN kernel INTEGER NOT NULL DEFAULT 0;"
        "ALTER TABLE runs ADD COLUMN pooling TEXT NOT NULL DEFAULT '';"
        "ALTER TABLE runs ADD COLUMN beta REAL;"
        "ALTER TABLE runs ADD COLUMN alpha REAL;"
        "ALTER TABLE runs ADD COLUMN gqa TEXT NOT NULL DEFAULT '';"
        "ALTER TABLE runs ADD COLUMN schedule TEXT NOT NULL DEFAULT '';"
        "ALTER TABLE runs ADD COLUMN sinks INTEGER NOT NULL DEFAULT 0;"
        "ALTER TABLE runs ADD COLUMN seed INTEGER NOT NULL DEFAULT 0;"
        "ALTER TABLE runs ADD COLUMN lag INTEGER NOT NULL DEFAULT 128;"
        "ALTER TABLE runs ADD COLUMN chunk_size INTEGER NOT NULL DEFAULT 10;"
        "ALTER TABLE runs ADD COLUMN future INTEGER NOT NULL DEFAULT 512;"
        "ALTER TABLE runs ADD COLUMN scorer TEXT NOT NULL DEFAULT '';"
        "ALTER TABLE runs ADD COLUMN tau1 REAL NOT NULL DEFAULT 1.0;"
        "ALTER TABLE runs ADD COLUMN tau2 REAL NOT NULL DEFAULT 1.0;"
        "ALTER TABLE runs ADD COLUMN gamma REAL NOT NULL DEFAULT 200.0;"
        "ALTER TABLE runs ADD COLUMN lazy REAL NOT NULL DEFAULT 0.9;"
        "ALTER TABLE runs ADD COLUMN layer_weights TEXT NOT NULL DEFAULT '[]' CHECK (json_valid(layer_weights));"
        "ALTER TABLE runs ADD COLUMN sketch INTEGER NOT NULL DEFAULT 48;"
        "ALTER TABLE runs ADD COLUMN attn_chunk INTEGER NOT NULL DEFAULT 256;"
        "ALTER TABLE runs ADD COLUMN blend REAL NOT NULL DEFAULT -1.0;"
        "ALTER TABLE runs ADD COLUMN think REAL NOT NULL DEFAULT 0.0;"
        "ALTER TABLE runs ADD COLUMN repeat_chunk INTEGER NOT NULL DEFAULT 2048;"
        "ALTER TABLE runs ADD COLUMN finch_chunk INTEGER NOT NULL DEFAULT 512;"
        "ALTER TABLE runs ADD COLUMN convention TEXT NOT NULL DEFAULT 'paper' CHECK (convention IN ('paper', 'kvpress'));"
        "UPDATE runs SET window_size = json_extract(params, '$.window'), kernel = json_extract(params, '$.kernel'),"
        " pooling = json_extract(params, '$.pool'), beta = json_extract(params, '$.beta'),"
        " alpha = json_extract(params, '$.alpha'), gqa = json_extract(params, '$.gqa'),"
        " schedule = json_extract(params, '$.schedule'), sinks = json_extract(params, '$.sinks'),"
        " lag = json_extract(params, '$.lag'),"
        " chunk_size = json_extract(params, '$.chunk'), future = json_extract(params, '$.future'),"
        " scorer = json_extract(params, '$.scorer'), tau1 = json_extract(params, '$.tau1'),"
        " tau2 = json_extract(params, '$.tau2'), gamma = json_extract(params, '$.gamma'),"
        " lazy = json_extract(params, '$.lazy'), layer_weights = json_extract(params, '$.layer_weights'),"
        " sketch = json_extract(params, '$.sketch'), attn_chunk = json_extract(params, '$.attn_chunk'),"
        " blend = CASE json_type(params, '$.blend') WHEN 'text' THEN -1.0 ELSE json_extract(params, '$.blend') END,"
        " think = json_extract(params, '$.think'), repeat_chunk = json_extract(params, '$.repeat_chunk'),"
        " finch_chunk = json_extract(params, '$.finch_chunk'), convention = json_extract(params, '$.convention');",
        "make a version 9 store");
    // The seed is a uint64 (json_extract would read one above 2^63 as a real): its bit pattern, bound.
    std::vector<std::pair<int64_t, uint64_t>> seeds;
    {
        Statement read(db, "SELECT id, params FROM runs", "read the seeds");
        while (read.step()) seeds.emplace_back(read.getInt(0), nlohmann::json::parse(read.getText(1)).at("seed").get<uint64_t>());
    }
    for (const auto& [id, seed] : seeds) {
        Statement set(db, "UPDATE runs SET seed = ? WHERE id = ?", "set the seed");
        set.bind(1, int64_t(seed)).bind(2, id);
        set.run();
    }
    db.exec("ALTER TABLE runs DROP COLUMN params; PRAGMA user_version = 9;", "make a version 9 store");
}

}  // namespace kvlens::sessions::test
