// LongBench-format task records read from a .jsonl file, one JSON object per line:
// "context", "input" (or "question"), "answers" (a list of strings, or one string),
// and optionally "length", "all_classes" and "dataset" (the task's name, which picks
// its metric). Blank lines are skipped; anything else that is not such an object is
// an error naming the file and line.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace kvlens {

struct LongBenchRecord {
    int64_t line = 0;  // 1-based, in the file
    std::string context, input, dataset;
    std::vector<std::string> answers, allClasses;
    int64_t length = -1;  // the record's own "length" (words), -1 when absent
};

std::vector<LongBenchRecord> readLongBenchRecords(const std::string& path);

// The metric LongBench scores a dataset with: "f1" (qa_f1_score: the English QA sets),
// "rouge" (the summarisation sets), "classification" (trec, lsht), "contains" for
// RULER's exports (niah_*, vt, cwe, fwe, qa_*), "em" for the rest. LongBench's
// passage_count, passage_retrieval and code-similarity scores are not among these:
// their datasets get "em". Names may carry LongBench-E's "_e".
std::string longBenchMetric(const std::string& dataset);

}  // namespace kvlens
