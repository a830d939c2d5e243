// A sweep file (`kvlens sweep plan|run|slurm FILE`): the grid of a study, models x tasks x
// methods x budgets, as one JSON object. JSON because the project already reads it
// (nlohmann-json, Debian's nlohmann-json3-dev) with line and column on a syntax error, and
// Python writes and reads it with no package: a study's grid is often generated.
//
//   {"session": "niah-small",                       the session the runs go to (default: file stem)
//    "models": ["models/kvlens-testbed.gguf"],       --model specs: GGUF files, HF folders, random:<preset>
//    "tasks": [{"kind": "niah", "lengths": ["1k", 2048], "depths": "0:100:50", "samples": 2,
//               "task": "single", "task_seed": 1, "question_after": false, "filler": "FILE",
//               "no_bos": false, "new_tokens": 16},
//              {"kind": "eval", "data": "qa.jsonl", "template": "FILE", "metric": "f1", "limit": 100,
//               "truncate": true, "question_after": false, "no_bos": false, "new_tokens": 32},
//              {"kind": "eval", "task": "multikey", "length": "4k", "samples": 10, "task_seed": 1}],
//    "methods": ["full", {"method": "snapkv", "window": 16}, {"method": "pyramidkv", "budgets": [64]}],
//    "budgets": [32, 64, "25%"],                     entries per head, or a share of the prompt
//    "new_tokens": 16, "dtype": "auto", "device": "cpu", "threads": 2}
//
// A method entry's keys are the method table's knob keys (`kvlens methods --json`). Every
// field is checked when the file is read: an unknown key, a wrong type or range, an unknown
// method or knob, a missing model, a budget no prompt of the sweep fits, a grid point given
// twice: one line naming the file and the field.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "app/EvalTask.h"
#include "app/NiahSweep.h"
#include "core/PressParams.h"

namespace kvlens {

// One task of a sweep: a needle grid, or a task evaluation.
struct SweepTask {
    bool isEval = false;
    NiahTask niah;
    EvalTask eval;
    // Its captures (prefills) per model: samples, or records.
    int64_t captures() const { return isEval ? eval.count() : niah.captures(); }
};

struct SweepFile {
    std::string path;
    std::string session;
    std::vector<std::string> models;
    std::vector<SweepTask> tasks;
    std::vector<PressParams> runs;  // every method entry at each of its budgets, in the file's order
    std::string dtype = "auto", device = "cpu";
    int64_t threads = 0;  // 0: LibTorch's default

    // Reads and checks `path`; throws kvlens::Error "PATH: FIELD: what is wrong".
    static SweepFile read(const std::string& path);

    // Captures (prefills) of one model: the samples of every task.
    int64_t capturesPerModel() const;
    // Captures of the whole sweep: every model's.
    int64_t captures() const { return capturesPerModel() * int64_t(models.size()); }
    // The flags that load model `model` (--model, --dtype, --device, --threads), `threads`
    // overriding the file's when positive.
    std::vector<std::string> modelArgs(const std::string& model, int64_t threadsOverride) const;

private:
    static SweepFile readFields(const std::string& path);
};

}  // namespace kvlens
