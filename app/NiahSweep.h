// The measuring loop of a needle-in-a-haystack sweep, shared by `kvlens niah` and
// `kvlens sweep run`: per length, depth and sample of a task one generated prompt and one
// capture, then every run (method and budget, each with its own knobs) re-selected on it
// and scored against the needle's value; each run saved to the session store as soon as
// it is measured, and the runs the session already holds skipped (a killed sweep resumes).
#pragma once

#include <cstdint>
#include <functional>
#include <set>
#include <string>
#include <vector>

#include "app/Shard.h"
#include "core/PressParams.h"
#include "engine/eval/NeedleTask.h"

namespace kvlens {

struct LoadedModel;
class ProgressBar;
namespace sessions {
class SessionStore;
}

// One needle task of a sweep: its grid and how each sample is asked.
struct NiahTask {
    std::vector<int64_t> lengths;
    std::vector<double> depths;
    int64_t samples = 1;
    NeedleKind kind = NeedleKind::Single;
    uint64_t taskSeed = 1;
    std::string filler;  // empty: the built-in filler text
    bool noBos = false;
    bool questionAfter = false;
    int64_t newTokens = 16;
    // lengths x depths x samples: the captures (prefills) of the whole task.
    int64_t captures() const { return int64_t(lengths.size()) * int64_t(depths.size()) * samples; }
};

// "0:100:10" (first:last:step) or "0,50,100": needle depths in percent; throws
// kvlens::Error naming `what` (a flag or a sweep file's field).
std::vector<double> parseDepths(const std::string& text, const std::string& what);

// One measured run, as the niah command prints it.
struct NiahRunResult {
    int64_t length = 0, tokens = 0, sample = 0;
    double depth = 0.0;
    PressParams params;
    std::string budget;
    double contains = 0.0, exact = 0.0, needleKept = 0.0, agreement = 0.0, meanKl = 0.0, kvRatio = 0.0;
    std::string answer;
};

class NiahSweep {
public:
    // `store` null: nothing saved or skipped. Otherwise the model is recorded and the
    // session `sessionName` opened (created if new) in it.
    NiahSweep(LoadedModel& loaded, const std::string& modelSpec, sessions::SessionStore* store,
              const std::string& sessionName);

    // Throws kvlens::Error when a length of `task` and its answer tokens pass the model's context.
    void checkContext(const NiahTask& task) const;

    // Each run of `runs` against the prompt of each length of `task` (its first depth's first
    // sample, tokenized): a budget at or over the prompt's tokens, or a setting that does not
    // fit it, throws before any prefill. run() checks every sample's prompt again.
    void checkPrompts(const NiahTask& task, const std::vector<PressParams>& runs) const;

    // Runs the samples of `task` that `shard` holds, their index counted from `firstIndex`
    // (the samples of the sweep's tasks before this one). Each pending run's settings are
    // checked against the prompt before its prefill. `onRun` hears every measured run;
    // `bar` shows the fraction `done / planned` (both counted in samples, `done` advanced).
    void run(const NiahTask& task, const std::vector<PressParams>& runs, int64_t firstIndex, const Shard& shard,
             const std::function<void(const NiahRunResult&)>& onRun, ProgressBar& bar, int64_t& done,
             int64_t planned, const std::string& promptsDir = "");

    int64_t captures() const { return captures_; }
    int64_t stored() const { return stored_; }
    int64_t skipped() const { return skipped_; }
    double captureSeconds() const { return captureSeconds_; }
    double fullSeconds() const { return fullSeconds_; }
    double runSeconds() const { return runSeconds_; }

private:
    LoadedModel& loaded_;
    sessions::SessionStore* store_;
    int64_t sessionId_ = 0, modelId_ = 0;
    std::set<std::string> saved_;  // keys of the runs the session holds
    int64_t captures_ = 0, stored_ = 0, skipped_ = 0;
    double captureSeconds_ = 0.0, fullSeconds_ = 0.0, runSeconds_ = 0.0;
};

}  // namespace kvlens
