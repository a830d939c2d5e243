// One task evaluation (`kvlens eval`, or a sweep file's {"kind": "eval"} task): LongBench-format
// records from a .jsonl file, or samples of a generated needle task, with the template that
// makes their prompts and how their answers are scored.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "engine/eval/LongBenchRecords.h"
#include "engine/eval/NeedleTask.h"

namespace kvlens {

struct EvalTask {
    static constexpr const char* kDefaultTemplate = "{context}\n\nQuestion: {input}\nAnswer:";

    std::string data;  // a LongBench-format .jsonl file; empty: a generated needle task
    NeedleKind kind = NeedleKind::Single;
    int64_t length = 4096, samples = 10;
    uint64_t taskSeed = 1;
    std::string templateText = kDefaultTemplate;
    std::string metric;  // empty: each record's dataset's metric (contains for a generated task)
    int64_t limit = 0;   // the first `limit` records (0: all)
    bool truncate = false, questionAfter = false, noBos = false;
    int64_t newTokens = 32;
    std::vector<LongBenchRecord> records;  // read by prepare()

    // Reads the data file's records, and checks the template and the metric: throws
    // kvlens::Error naming the file's line, the template or the metric.
    void prepare();
    // The records (after limit) or samples: the task's captures.
    int64_t count() const;
    // What the store keys the records' source by: the SHA-256 of the data file's bytes, or of the
    // generated task's settings, with the template, truncation, BOS and limit.
    std::string source() const;
    // The data file's name, or the generated task's.
    std::string sourceName() const;
};

}  // namespace kvlens
