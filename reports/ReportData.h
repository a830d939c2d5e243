// What a comparison report shows, read from the session store alone: the session,
// its model and prompt, and the chosen runs (all of the session's complete runs, or
// those named), with the derived figures every part of the report shares (labels,
// budgets, hit rates, selection overlaps).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "sessions/SessionStore.h"
#include "sessions/StoreRecords.h"

namespace kvlens {

struct ReportData {
    std::string storePath;
    sessions::SessionInfo session;
    sessions::ModelRecord model;
    sessions::PromptRecord prompt;
    std::vector<sessions::RunRecord> runs;  // in the order asked for (default: by id)
    int64_t skippedFailed = 0;              // failed runs of the session left out

    // Throws kvlens::Error with one line: no such session, a session without complete
    // runs, a run id that is not in the session (or did not complete), or runs of more
    // than one prompt (choose runs of one prompt with --runs).
    static ReportData load(sessions::SessionStore& store, const std::string& session,
                           const std::vector<int64_t>& runIds = {});

    // "#3 snapkv 64" (id, method, budget).
    static std::string label(const sessions::RunRecord& run);
    // "64", "25%", or "—" for full.
    static std::string budgetText(const PressParams& params);
    // Entries per head: the budget, or the ratio of the prompt resolved (at least 1).
    int64_t budgetEntries(const sessions::RunRecord& run) const;
    // The run's hit rate (mean over layers) and its per-layer figures; NaN / empty when
    // the run did not measure it.
    static double hitRate(const RunMetrics& metrics);
    static std::vector<double> hitRatePerLayer(const RunMetrics& metrics);

    int64_t promptLength() const { return int64_t(prompt.tokenIds.size()); }
    // Runs with a selection to draw and compare (not "full", with kept positions).
    std::vector<size_t> selectionRuns() const;
    // Layers drawn in the kept-position maps: first, middle and last.
    std::vector<int64_t> mapLayers() const;
};

}  // namespace kvlens
