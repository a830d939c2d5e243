// What the session store holds, as plain structs: a session, a model, a prompt
// and a run (press parameters, selection, metrics, per-layer statistics, text).
// The engine's Selection, PressParams and RunMetrics are header-only data.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/ModelShape.h"
#include "core/RunMetrics.h"
#include "core/Selection.h"

namespace kvlens::sessions {

struct SessionInfo {
    int64_t id = 0;
    std::string name;
    std::string notes;
    int64_t createdMs = 0;  // Unix milliseconds, UTC
    int64_t updatedMs = 0;
    std::string uiState = "{}";  // JSON, the GUI's own layout
    // Filled by listings.
    int64_t runCount = 0;
    int64_t promptCount = 0;
    int64_t niahRunCount = 0;  // needle-in-a-haystack runs (kvlens niah --save)
    int64_t evalRunCount = 0;  // task evaluations (kvlens eval --save)
};

// One file of a Hugging Face folder model (a weight shard, config.json, a tokenizer
// file), by its name in the folder.
struct FolderFileRecord {
    std::string name;
    int64_t sizeBytes = 0;
    int64_t mtimeNs = 0;
    std::string sha256;  // lower-case hex
};

struct ModelRecord : ModelShape {
    int64_t id = 0;
    std::string spec;    // as given to --model
    bool isFile = true;  // false: a random:<preset> spec, no file to hash
    std::string path;    // absolute: a GGUF file, or a Hugging Face folder
    // For a folder: the sum of its files' sizes, their latest mtime, and the
    // SHA-256 of the lines "<sha256>  <name>\n" of `files` in order.
    int64_t sizeBytes = 0;
    int64_t mtimeNs = 0;
    std::string sha256;  // lower-case hex
    std::vector<FolderFileRecord> files;  // a folder's files (ModelFile::folderFiles); empty for a file
};

struct PromptRecord {
    int64_t id = 0;
    int64_t sessionId = 0;
    int64_t modelId = 0;
    std::string text;
    bool addBos = true;
    std::vector<int32_t> tokenIds;
};

// One statistic of one layer (head -1) or one head of a layer.
struct LayerStatistic {
    std::string name;  // e.g. "entropy", "sink_mass"
    int32_t layer = 0;
    int32_t head = -1;
    double value = 0.0;
};

struct RunRecord {
    int64_t id = 0;
    int64_t sessionId = 0;
    int64_t promptId = 0;
    int64_t createdMs = 0;
    PressParams params;
    int64_t newTokens = 0;
    std::string engineVersion, device, dtype;
    int64_t threads = 0;
    double prefillSeconds = 0.0;
    std::string status = "complete";  // or "failed", with `error`
    std::string error;
    Selection selection;
    RunMetrics metrics;
    std::vector<LayerStatistic> layerStats;
    std::string fullText, text;  // the two greedy continuations
};

// A row of a session's run listing: no selection, statistics or token ids.
struct RunSummary {
    int64_t id = 0;
    int64_t promptId = 0;
    int64_t createdMs = 0;
    PressParams params;
    int64_t newTokens = 0;
    std::string status;
    int64_t promptTokens = 0;
    int64_t bytes = 0, fullBytes = 0;
    double ratio = 0.0, tokenAgreement = 0.0, meanKl = 0.0, top1Agreement = 0.0;
    int64_t agreedPrefix = 0;
    double hitRate = 0.0;  // NaN: not measured
    int64_t decodeEvery = 0;  // compressed every this many decode steps (0: once, after the prompt)
};

// One needle-in-a-haystack run (kvlens niah --save): a generated sample, one method
// and budget on its capture, and the scores.
struct NiahRunRecord {
    int64_t id = 0;
    int64_t sessionId = 0;
    int64_t modelId = 0;
    int64_t createdMs = 0;
    std::string task;
    uint64_t taskSeed = 0;
    int64_t length = 0, tokens = 0;
    double depth = 0.0;
    int64_t sample = 0;
    bool questionAfter = false;
    int64_t newTokens = 0;
    std::string method, budget, params;
    double contains = 0.0, exact = 0.0, needleKept = 0.0, agreement = 0.0, meanKl = 0.0;
    std::string answer;
    std::vector<std::string> expected;
    std::vector<int32_t> needlePositions;
    // What makes two records the same run (the table's UNIQUE key, but the model by id).
    // A full-cache run is one run whatever budget its sweep was given: its budget word is
    // left out (sweeps before the fix stored the first of --budgets with it).
    std::string key() const;
};

// One record of a task evaluation (kvlens eval --save): a LongBench-format record or a
// generated sample, one method and budget on its capture, and the score.
struct EvalRunRecord {
    int64_t id = 0;
    int64_t sessionId = 0;
    int64_t modelId = 0;
    int64_t createdMs = 0;
    std::string source;      // what the records came from, hashed: the data file's bytes, or
                             // the generated task's settings, with the template and truncation
    std::string sourceName;  // as shown: the data file's name, or the task's
    std::string record;      // "line 12", "#3"
    std::string dataset, metric;
    int64_t tokens = 0;
    bool questionAfter = false;
    int64_t newTokens = 0;
    std::string method, budget, params;
    double score = 0.0, agreement = 0.0, meanKl = 0.0;
    std::string answer;
    std::vector<std::string> expected;
    // What makes two records the same run (the table's UNIQUE key, but the model by id).
    std::string key() const;
};

}  // namespace kvlens::sessions
