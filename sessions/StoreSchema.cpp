// Schema versions 1 to 10. Times are Unix milliseconds (UTC). REAL columns hold NULL
// for NaN (SQLite cannot store NaN). BLOBs are ArrayCodec / SelectionCodec data.
#include "sessions/StoreSchema.h"

#include "core/Error.h"
#include "core/ParamsJson.h"
#include "sessions/Database.h"
#include "sessions/LegacyRunParams.h"
#include "sessions/Statement.h"

namespace kvlens::sessions {

namespace {

const char* kVersion1 = R"SQL(
CREATE TABLE sessions (
  id          INTEGER PRIMARY KEY,
  name        TEXT NOT NULL UNIQUE CHECK (length(name) > 0),
  notes       TEXT NOT NULL DEFAULT '',
  created_ms  INTEGER NOT NULL,
  updated_ms  INTEGER NOT NULL,
  ui_state    TEXT NOT NULL DEFAULT '{}' CHECK (json_valid(ui_state))
);
CREATE TABLE models (
  id             INTEGER PRIMARY KEY,
  spec           TEXT NOT NULL,          -- as given to --model: a path or random:<preset>...
  kind           TEXT NOT NULL CHECK (kind IN ('file', 'random')),
  path           TEXT NOT NULL,          -- absolute path of a file model, '' for random
  size_bytes     INTEGER NOT NULL,
  mtime_ns       INTEGER NOT NULL,
  sha256         TEXT NOT NULL,          -- hex, '' for random
  architecture   TEXT NOT NULL,
  name           TEXT NOT NULL,
  layers         INTEGER NOT NULL,
  heads          INTEGER NOT NULL,
  kv_heads       INTEGER NOT NULL,
  head_dim       INTEGER NOT NULL,
  embed_dim      INTEGER NOT NULL,
  ffn_dim        INTEGER NOT NULL,
  vocab_size     INTEGER NOT NULL,
  context_length INTEGER NOT NULL,
  rope_theta     REAL
);
CREATE INDEX models_by_path ON models (path, size_bytes, mtime_ns);
CREATE TABLE prompts (
  id          INTEGER PRIMARY KEY,
  session_id  INTEGER NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
  model_id    INTEGER NOT NULL REFERENCES models (id),
  text        TEXT NOT NULL,
  add_bos     INTEGER NOT NULL,
  token_count INTEGER NOT NULL,
  token_ids   BLOB NOT NULL              -- int32 little-endian
);
CREATE INDEX prompts_by_session ON prompts (session_id);
CREATE INDEX prompts_by_model ON prompts (model_id);
CREATE TABLE runs (
  id             INTEGER PRIMARY KEY,
  session_id     INTEGER NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
  prompt_id      INTEGER NOT NULL REFERENCES prompts (id) ON DELETE CASCADE,
  created_ms     INTEGER NOT NULL,
  method         TEXT NOT NULL,
  budget         INTEGER NOT NULL,       -- entries per head, 0: budget_ratio of the prompt
  budget_ratio   REAL,
  window_size    INTEGER NOT NULL,
  kernel         INTEGER NOT NULL,
  pooling        TEXT NOT NULL,
  beta           REAL,
  alpha          REAL,
  gqa            TEXT NOT NULL,
  schedule       TEXT NOT NULL,
  sinks          INTEGER NOT NULL,
  seed           INTEGER NOT NULL,       -- uint64 bit pattern
  new_tokens     INTEGER NOT NULL,
  engine_version TEXT NOT NULL,
  device         TEXT NOT NULL,
  dtype          TEXT NOT NULL,
  threads        INTEGER NOT NULL,
  prefill_s      REAL,
  status         TEXT NOT NULL CHECK (status IN ('complete', 'failed')),
  error          TEXT NOT NULL,
  full_text      TEXT NOT NULL,
  text           TEXT NOT NULL
);
CREATE INDEX runs_by_session ON runs (session_id);
CREATE INDEX runs_by_prompt ON runs (prompt_id);
CREATE TABLE selections (
  run_id        INTEGER PRIMARY KEY REFERENCES runs (id) ON DELETE CASCADE,
  params        TEXT NOT NULL,           -- JSON: the press parameters as the press saw them
  prompt_length INTEGER NOT NULL,
  query_heads   INTEGER NOT NULL,
  kv_heads      INTEGER NOT NULL,
  gqa           TEXT NOT NULL,
  head_counts   BLOB NOT NULL,           -- int64 per layer: rows in selection_heads
  layer_budgets BLOB NOT NULL,           -- int64 per layer
  entries       INTEGER NOT NULL         -- kept positions over all layers and heads
);
CREATE TABLE selection_heads (
  run_id    INTEGER NOT NULL REFERENCES selections (run_id) ON DELETE CASCADE,
  layer     INTEGER NOT NULL,
  head      INTEGER NOT NULL,
  count     INTEGER NOT NULL,
  positions BLOB NOT NULL,               -- SelectionCodec
  PRIMARY KEY (run_id, layer, head)
) WITHOUT ROWID;
CREATE TABLE metrics (
  run_id          INTEGER PRIMARY KEY REFERENCES runs (id) ON DELETE CASCADE,
  agreed_prefix   INTEGER NOT NULL,
  token_agreement REAL,
  mean_kl         REAL,
  top1_agreement  REAL,
  full_bytes      INTEGER NOT NULL,
  bytes           INTEGER NOT NULL,
  ratio           REAL,
  select_s        REAL,
  gather_s        REAL,
  decode_s        REAL,
  kl_per_step     BLOB NOT NULL,         -- float64
  bytes_per_layer BLOB NOT NULL,         -- int64
  bytes_per_head  BLOB NOT NULL,         -- ArrayCodec rows of int64
  full_token_ids  BLOB NOT NULL,         -- int32
  token_ids       BLOB NOT NULL,         -- int32
  hit_rate        REAL,                  -- NULL: not measured
  hit_rate_per_layer BLOB NOT NULL,      -- float64
  hit_k           INTEGER NOT NULL,
  hit_steps       INTEGER NOT NULL
);
CREATE TABLE layer_stats (               -- rowid keeps the order they were given in
  run_id INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
  name   TEXT NOT NULL,
  layer  INTEGER NOT NULL,
  head   INTEGER NOT NULL,               -- -1: the layer as a whole
  value  REAL
);
CREATE INDEX layer_stats_by_run ON layer_stats (run_id);
)SQL";

// Version 2: needle-in-a-haystack runs (kvlens niah --save). One row per sample and
// method run; the key of a run (its UNIQUE columns) lets a killed sweep resume and
// a merge of shards keep each run once.
const char* kVersion2 = R"SQL(
CREATE TABLE niah_runs (
  id               INTEGER PRIMARY KEY,
  session_id       INTEGER NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
  model_id         INTEGER NOT NULL REFERENCES models (id),
  created_ms       INTEGER NOT NULL,
  task             TEXT NOT NULL,          -- single, multikey, ... (NeedleKind)
  task_seed        INTEGER NOT NULL,       -- uint64 bit pattern
  length           INTEGER NOT NULL,       -- tokens asked for
  tokens           INTEGER NOT NULL,       -- the prompt's tokens
  depth            REAL NOT NULL,          -- 0-100
  sample           INTEGER NOT NULL,
  question_after   INTEGER NOT NULL,       -- 1: the question appended to the compressed context
  new_tokens       INTEGER NOT NULL,
  method           TEXT NOT NULL,
  budget           TEXT NOT NULL,          -- as shown: '-', '64', '12.5%'
  params           TEXT NOT NULL,          -- PressParams::describe()
  contains_score   REAL,
  exact_score      REAL,
  needle_kept      REAL,
  agreement        REAL,
  mean_kl          REAL,
  answer           TEXT NOT NULL,
  expected         TEXT NOT NULL CHECK (json_valid(expected)),  -- JSON array of strings
  needle_positions BLOB NOT NULL,          -- int32 little-endian
  UNIQUE (session_id, model_id, task, task_seed, length, depth, sample, question_after, new_tokens, params)
);
CREATE INDEX niah_runs_by_session ON niah_runs (session_id);
)SQL";

// Version 3: the settings of LagKV (lag), ChunkKV (chunk_size) and Expected Attention
// (future); runs saved before hold their defaults.
const char* kVersion3 = R"SQL(
ALTER TABLE runs ADD COLUMN lag INTEGER NOT NULL DEFAULT 128;
ALTER TABLE runs ADD COLUMN chunk_size INTEGER NOT NULL DEFAULT 10;
ALTER TABLE runs ADD COLUMN future INTEGER NOT NULL DEFAULT 512;
)SQL";

// Version 4: the files of a Hugging Face folder model (models.path is the
// folder; its sha256 covers these files' hashes).
const char* kVersion4 = R"SQL(
CREATE TABLE model_files (
  model_id    INTEGER NOT NULL REFERENCES models (id) ON DELETE CASCADE,
  position    INTEGER NOT NULL,
  name        TEXT NOT NULL CHECK (length(name) > 0),
  size_bytes  INTEGER NOT NULL,
  mtime_ns    INTEGER NOT NULL,
  sha256      TEXT NOT NULL,
  PRIMARY KEY (model_id, position)
);
)SQL";

// Version 5: the scorer of AdaKV, ChunkKV, CAKE and per-layer, CAKE's tau1, tau2 and
// gamma, SimLayerKV's lazy threshold and per-layer's weights (JSON array); runs saved
// before hold their defaults.
const char* kVersion5 = R"SQL(
ALTER TABLE runs ADD COLUMN scorer TEXT NOT NULL DEFAULT '';
ALTER TABLE runs ADD COLUMN tau1 REAL NOT NULL DEFAULT 1.0;
ALTER TABLE runs ADD COLUMN tau2 REAL NOT NULL DEFAULT 1.0;
ALTER TABLE runs ADD COLUMN gamma REAL NOT NULL DEFAULT 200.0;
ALTER TABLE runs ADD COLUMN lazy REAL NOT NULL DEFAULT 0.9;
ALTER TABLE runs ADD COLUMN layer_weights TEXT NOT NULL DEFAULT '[]' CHECK (json_valid(layer_weights));
)SQL";

// Version 6: LeverageScore's and Compactor's sketch size, the non-causal attention's
// chunk, Compactor's blend (-1: the compression ratio) and ThinK's share of key channels,
// and per selection head the channels ThinK pruned (SelectionCodec; NULL: none); runs
// saved before hold their defaults.
const char* kVersion6 = R"SQL(
ALTER TABLE runs ADD COLUMN sketch INTEGER NOT NULL DEFAULT 48;
ALTER TABLE runs ADD COLUMN attn_chunk INTEGER NOT NULL DEFAULT 256;
ALTER TABLE runs ADD COLUMN blend REAL NOT NULL DEFAULT -1.0;
ALTER TABLE runs ADD COLUMN think REAL NOT NULL DEFAULT 0.0;
ALTER TABLE selection_heads ADD COLUMN pruned_channels BLOB;
)SQL";

// Version 7: KVzip's reconstruction chunk (runs saved before hold its default), the bytes
// the compressed cache's buffers really took (NULL: not recorded, runs saved before), and
// compression during decoding: the steps between two compressions (0: none) and the entries
// per head after each step (the mean over the cache heads, rounded up; before AdaKV's and
// PyramidKV's decode forms, the longest head's, equal to the mean for every method then) (int64; NULL without).
const char* kVersion7 = R"SQL(
ALTER TABLE runs ADD COLUMN repeat_chunk INTEGER NOT NULL DEFAULT 2048;
ALTER TABLE metrics ADD COLUMN allocated_bytes INTEGER;
ALTER TABLE metrics ADD COLUMN decode_every INTEGER NOT NULL DEFAULT 0 CHECK (decode_every >= 0);
ALTER TABLE metrics ADD COLUMN cache_entries BLOB;
)SQL";

// Version 8: Finch's chunk (the context positions its prefill reads per step); runs saved
// before hold its default.
const char* kVersion8 = R"SQL(
ALTER TABLE runs ADD COLUMN finch_chunk INTEGER NOT NULL DEFAULT 512;
)SQL";

// Version 9: the convention a run follows (paper, kvpress: --convention); runs saved before
// followed the paper's.
const char* kVersion9 = R"SQL(
ALTER TABLE runs ADD COLUMN convention TEXT NOT NULL DEFAULT 'paper' CHECK (convention IN ('paper', 'kvpress'));
)SQL";

// Version 10: a run's knobs as one JSON object (runs.params, methods::knobsJson), read and
// written through the knob table, so a new knob needs no column and no migration. Every run's
// knob columns are copied into it in C++ (SQLite's json_object would round doubles to 15
// digits), then dropped; method, budget and budget_ratio stay columns.
void moveKnobsToJson(Database& db) {
    db.exec("ALTER TABLE runs ADD COLUMN params TEXT NOT NULL DEFAULT '{}' CHECK (json_valid(params))",
            "add the runs' parameters as JSON");
    std::vector<std::pair<int64_t, std::string>> rows;
    {
        Statement read(db, "SELECT id, " + LegacyRunParams::columns(9) + " FROM runs", "read the runs' knobs");
        while (read.step()) {
            const int64_t id = read.getInt(0);
            const PressParams p = LegacyRunParams::read(read, 1, db.path() + ": run " + std::to_string(id));
            rows.emplace_back(id, methods::knobsJson(p).dump());
        }
    }
    Statement write(db, "UPDATE runs SET params = ? WHERE id = ?", "write the runs' knobs as JSON");
    for (const auto& [id, json] : rows) {
        write.reset();
        write.bind(1, json).bind(2, id);
        write.run();
    }
    std::string drop;
    for (const char* column : LegacyRunParams::knobColumns()) drop += std::string("ALTER TABLE runs DROP COLUMN ") + column + ";";
    db.exec(drop, "drop the runs' knob columns");
}

// Version 11: task evaluations (kvlens eval --save), one row per record and run. IF NOT
// EXISTS: a store a test wound back to an older version keeps the table.
const char* kVersion11 = R"SQL(
CREATE TABLE IF NOT EXISTS eval_runs (
  id           INTEGER PRIMARY KEY,
  session_id   INTEGER NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
  model_id     INTEGER NOT NULL REFERENCES models (id),
  created_ms   INTEGER NOT NULL,
  source       TEXT NOT NULL,          -- SHA-256 (hex) of what the records came from
  source_name  TEXT NOT NULL,          -- the data file's name, or the generated task's
  record       TEXT NOT NULL,          -- 'line 12', '#3'
  dataset      TEXT NOT NULL,
  metric       TEXT NOT NULL,
  tokens       INTEGER NOT NULL,
  question_after INTEGER NOT NULL,
  new_tokens   INTEGER NOT NULL,
  method       TEXT NOT NULL,
  budget       TEXT NOT NULL,
  params       TEXT NOT NULL,          -- PressParams::describe()
  score        REAL,
  agreement    REAL,
  mean_kl      REAL,
  answer       TEXT NOT NULL,
  expected     TEXT NOT NULL CHECK (json_valid(expected)),
  UNIQUE (session_id, model_id, source, record, question_after, new_tokens, metric, params)
);
CREATE INDEX IF NOT EXISTS eval_runs_by_session ON eval_runs (session_id);
)SQL";

const char* kTables[] = {"sessions",   "models",          "prompts", "runs",
                         "selections", "selection_heads", "metrics", "layer_stats", "niah_runs"};

}  // namespace

const std::vector<Migrations::Step>& StoreSchema::steps() {
    static const std::vector<Migrations::Step> all = {
        [](Database& db) {
            db.exec("PRAGMA application_id = " + std::to_string(int32_t(kApplicationId)),
                    "mark the file as a KV Lens store");
            db.exec(kVersion1, "create the schema");
        },
        [](Database& db) { db.exec(kVersion2, "add the needle-in-a-haystack runs"); },
        [](Database& db) { db.exec(kVersion3, "add the LagKV, ChunkKV and Expected Attention settings"); },
        [](Database& db) { db.exec(kVersion4, "add the files of Hugging Face folder models"); },
        [](Database& db) { db.exec(kVersion5, "add the CAKE, SimLayerKV, per-layer and scorer settings"); },
        [](Database& db) { db.exec(kVersion6, "add the LeverageScore, non-causal attention, Compactor and ThinK settings"); },
        [](Database& db) { db.exec(kVersion7, "add KVzip's reconstruction chunk, the allocated bytes and the decode's compression"); },
        [](Database& db) { db.exec(kVersion8, "add Finch's chunk"); },
        [](Database& db) { db.exec(kVersion9, "add the runs' convention (paper or kvpress)"); },
        moveKnobsToJson,
        [](Database& db) { db.exec(kVersion11, "add the task evaluations"); },
    };
    return all;
}

void StoreSchema::checkTables(Database& db) {
    for (const char* table : kTables) {
        if (!db.hasTable(table)) {
            db.leaveFileAsIs();
            throw Error(db.path() + ": the store is damaged (table '" + table + "' is missing)");
        }
    }
}

}  // namespace kvlens::sessions
