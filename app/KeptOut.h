// `run|compare --kept-out FILE.json`: the positions each run kept, per layer and head, with the
// prompt's token ids, as one JSON file for Python (and for checking against kvpress's own
// kept indices). Rewritten after every run (through a temporary file renamed into place), so
// a run that fails later leaves the runs before it; a file already there is kept until the
// first run replaces it.
//
//   {"model": SPEC, "prompt_ids": [...], "runs": [{"method", "params", "knobs", "budget",
//     "heads_are": "kv"|"query", "layer_budgets": [...], "kept": [[[pos, ...] per head] per layer],
//     "kv_ratio", "token_agreement", "mean_kl"}]}
#pragma once

#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/RunMetrics.h"
#include "core/Selection.h"

namespace kvlens {

class CommandLine;

// A selection's kept positions as JSON: "heads_are", "layer_budgets" and "kept".
nlohmann::json keptJson(const Selection& selection);

class KeptOut {
public:
    // Null without --kept-out; throws kvlens::Error naming --kept-out for a file that cannot
    // be written (checked before the model loads).
    static std::unique_ptr<KeptOut> fromCommandLine(const CommandLine& args);
    void begin(const std::string& model, const std::vector<int32_t>& promptIds);
    void add(const PressParams& params, const Selection& selection, const RunMetrics& metrics);

private:
    explicit KeptOut(std::string path) : path_(std::move(path)) {}
    void write() const;
    std::string path_;
    nlohmann::json doc_;
};

}  // namespace kvlens
