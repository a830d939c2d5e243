// The measuring loop of a task evaluation, shared by `kvlens eval` and `kvlens sweep run`: per
// record one prompt and one capture, then every run re-selected on it and its answer scored
// with the record's metric; each run saved to the session store as it is measured, and the
// runs the session already holds skipped (a killed evaluation resumes).
#pragma once

#include <cstdint>
#include <functional>
#include <set>
#include <string>
#include <vector>

#include "app/EvalTask.h"
#include "app/Shard.h"
#include "core/PressParams.h"

namespace kvlens {

struct LoadedModel;
class ProgressBar;
namespace sessions {
class SessionStore;
}

// One measured run of one record.
struct EvalRunResult {
    std::string where;  // "FILE:12", "single #3"
    std::string dataset, metric;
    int64_t tokens = 0;
    PressParams params;
    std::string budget;
    double score = 0.0, agreement = 0.0, meanKl = 0.0;
    std::string answer;
};

class EvalSweep {
public:
    // `store` null: nothing saved or skipped. Otherwise the model is recorded and the
    // session `sessionName` opened (created if new) in it.
    EvalSweep(LoadedModel& loaded, const std::string& modelSpec, sessions::SessionStore* store,
              const std::string& sessionName);

    // Runs the records of `task` (prepared) that `shard` holds, their index counted from
    // `firstIndex`. Each pending run's settings are checked against the prompt before its
    // prefill. `onRun` hears every measured run; `bar`, when given, shows `done / planned`
    // (records, `done` advanced) and hears the prefills.
    void run(const EvalTask& task, const std::vector<PressParams>& runs, int64_t firstIndex, const Shard& shard,
             const std::function<void(const EvalRunResult&)>& onRun, ProgressBar* bar, int64_t& done,
             int64_t planned);

    int64_t captures() const { return captures_; }
    int64_t stored() const { return stored_; }
    int64_t skipped() const { return skipped_; }
    double captureSeconds() const { return captureSeconds_; }
    double runSeconds() const { return runSeconds_; }

private:
    LoadedModel& loaded_;
    sessions::SessionStore* store_;
    int64_t sessionId_ = 0, modelId_ = 0;
    std::set<std::string> saved_;
    int64_t captures_ = 0, stored_ = 0, skipped_ = 0;
    double captureSeconds_ = 0.0, runSeconds_ = 0.0;
};

}  // namespace kvlens
