// The knobs of a KV-cache compression method ("press"): budget, window,
// pooling, GQA mode, PyramidKV schedule, AdaKV safeguard, seed.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace kvlens {

enum class GqaMode {
    KvHead,     // one selection per KV head, votes averaged over its query heads
    QueryHead,  // one selection per query head (the original SnapKV code's layout)
};
enum class Pooling { Max, Avg };
enum class PyramidSchedule {
    Exact,    // linear fall whose layer budgets sum to exactly L x (B - W)
    Factory,  // the reference implementation's integer schedule (overshoots slightly)
};

const char* gqaModeName(GqaMode mode);
const char* poolingName(Pooling pooling);
const char* scheduleName(PyramidSchedule schedule);

struct PressParams {
    std::string method = "snapkv";  // full, snapkv, pyramidkv, streamingllm, h2o, adakv, random
    int64_t budget = 0;             // KV entries per head, window included; 0: use budgetRatio
    double budgetRatio = 0.0;       // of the prompt length, when budget is 0
    int64_t window = 32;
    int64_t kernel = 7;
    Pooling pooling = Pooling::Max;
    double beta = 20.0;
    double alpha = 0.2;
    GqaMode gqa = GqaMode::KvHead;
    PyramidSchedule schedule = PyramidSchedule::Exact;
    int64_t sinks = 4;
    uint64_t seed = 0;

    // Entries per head for a prompt of `promptLength` tokens (ratio rounded, at least 1).
    int64_t resolveBudget(int64_t promptLength) const;

    // Throws kvlens::Error naming the flag: unknown method, window >= prompt or
    // above `maxWindow`, an even or non-positive kernel, budget <= window (for
    // window-based methods) or <= sinks, alpha outside [0, 1], beta < 1.
    void validate(int64_t promptLength, int64_t maxWindow) const;

    // One line for tables: "snapkv B=128 W=32 k=7 max kv-head".
    std::string describe() const;

    static const std::vector<std::string>& methodNames();
    // Methods that keep the observation window (and so need budget > window).
    bool usesWindow() const;
};

// Parsers for the CLI; each throws kvlens::Error naming the flag and value.
GqaMode parseGqaMode(const std::string& text);
Pooling parsePooling(const std::string& text);
PyramidSchedule parseSchedule(const std::string& text);

}  // namespace kvlens
