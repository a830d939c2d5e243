#include "reports/ReportData.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <set>

#include "core/Error.h"

namespace kvlens {

ReportData ReportData::load(sessions::SessionStore& store, const std::string& name,
                            const std::vector<int64_t>& runIds) {
    ReportData d;
    d.storePath = store.path();
    d.session = store.session(name);  // throws naming the store and session
    const std::vector<sessions::RunSummary> summaries = store.runs(d.session.id);
    const std::string where = "session '" + d.session.name + "' in " + store.path();
    std::vector<int64_t> ids;
    if (runIds.empty()) {
        for (const auto& s : summaries) {
            if (s.status == "complete") {
                ids.push_back(s.id);
            } else {
                ++d.skippedFailed;
            }
        }
        if (ids.empty()) {
            throw Error(where + (summaries.empty() ? ": has no runs" : ": has no complete runs") +
                        " (save some with kvlens run/compare --save)" +
                        (d.session.evalRunCount > 0
                             ? "; its " + std::to_string(d.session.evalRunCount) +
                                   " eval runs: kvlens sessions show, or export --format csv"
                             : std::string()));
        }
    } else {
        std::set<int64_t> seen;
        for (int64_t id : runIds) {
            const auto it = std::find_if(summaries.begin(), summaries.end(),
                                         [&](const sessions::RunSummary& s) { return s.id == id; });
            if (it == summaries.end()) throw Error("--runs: run " + std::to_string(id) + " is not in " + where);
            if (it->status != "complete") {
                throw Error("--runs: run " + std::to_string(id) + " of " + where + " did not complete (" +
                            it->status + ")");
            }
            if (!seen.insert(id).second) throw Error("--runs: run " + std::to_string(id) + " is named twice");
            ids.push_back(id);
        }
    }
    std::set<int64_t> promptIds;
    for (int64_t id : ids) {
        d.runs.push_back(store.run(id));
        promptIds.insert(d.runs.back().promptId);
    }
    if (promptIds.size() > 1) {
        throw Error(where + ": the runs use " + std::to_string(promptIds.size()) +
                    " prompts; choose runs of one prompt with --runs");
    }
    d.prompt = store.prompt(*promptIds.begin());
    d.model = store.model(d.prompt.modelId);
    return d;
}

std::string ReportData::budgetText(const PressParams& p) {
    if (p.isFull()) return "\xe2\x80\x94";
    if (p.budget > 0) return std::to_string(p.budget);
    char text[32];
    std::snprintf(text, sizeof text, "%g%%", p.budgetRatio * 100);
    return text;
}

std::string ReportData::label(const sessions::RunRecord& run) {
    std::string l = "#" + std::to_string(run.id) + " " + run.params.method;
    if (!run.params.isFull()) l += " " + budgetText(run.params);
    return l;
}

int64_t ReportData::budgetEntries(const sessions::RunRecord& run) const {
    if (run.params.budget > 0) return run.params.budget;
    return std::max<int64_t>(1, std::llround(run.params.budgetRatio * double(promptLength())));
}

double ReportData::hitRate(const RunMetrics& metrics) { return metrics.hitRate; }

std::vector<double> ReportData::hitRatePerLayer(const RunMetrics& metrics) { return metrics.hitRatePerLayer; }

std::vector<size_t> ReportData::selectionRuns() const {
    std::vector<size_t> out;
    for (size_t i = 0; i < runs.size(); ++i) {
        const Selection& s = runs[i].selection;
        if (!runs[i].params.isFull() && s.layers() > 0 && s.promptLength > 0 && s.headsPerLayer() > 0) {
            out.push_back(i);
        }
    }
    return out;
}

std::vector<int64_t> ReportData::mapLayers() const {
    int64_t layers = 0;
    for (size_t i : selectionRuns()) layers = std::max(layers, runs[i].selection.layers());
    std::vector<int64_t> out;
    for (int64_t l : {int64_t(0), layers / 2, layers - 1}) {
        if (l >= 0 && l < layers && std::find(out.begin(), out.end(), l) == out.end()) out.push_back(l);
    }
    return out;
}

}  // namespace kvlens
