#include "sessions/NiahGrid.h"
#include "core/Methods.h"

#include <algorithm>
#include <cmath>
#include <set>

namespace kvlens::sessions {

void NiahMean::add(double v) {
    if (!std::isfinite(v)) return;
    sum += v;
    ++n;
}

double NiahMean::value() const { return n ? sum / static_cast<double>(n) : std::nan(""); }

void NiahMeans::add(const NiahRunRecord& r) {
    contains.add(r.contains);
    exact.add(r.exact);
    kept.add(r.needleKept);
    agreement.add(r.agreement);
    kl.add(r.meanKl);
    ++runs;
}

std::string NiahGrid::kindLabel(const Kind& kind) {
    return kind.first == methods::info(MethodId::Full).name ? kind.first : kind.first + " " + kind.second;
}

const NiahGrid::Cell* NiahGrid::Group::cell(const Kind& kind, double depth, int64_t length) const {
    const auto it = cells.find({kind, depth, length});
    return it == cells.end() ? nullptr : &it->second;
}

namespace {

std::vector<NiahRunRecord> onceEach(std::vector<NiahRunRecord> runs) {
    std::set<std::string> seen;
    std::vector<NiahRunRecord> out;
    out.reserve(runs.size());
    for (NiahRunRecord& r : runs)
        if (seen.insert(r.key()).second) out.push_back(std::move(r));
    return out;
}

}  // namespace

NiahGrid::NiahGrid(std::vector<NiahRunRecord> runs) : runs_(onceEach(std::move(runs))) {
    std::map<std::pair<std::string, bool>, Group> byKey;
    std::map<std::pair<std::string, bool>, std::pair<std::set<int64_t>, std::set<double>>> axes;
    for (const NiahRunRecord& r : runs_) {
        const std::pair<std::string, bool> key{r.task, r.questionAfter};
        Group& g = byKey[key];
        g.task = r.task;
        g.questionAfter = r.questionAfter;
        const Kind k{r.method, r.budget};
        if (std::find(g.kinds.begin(), g.kinds.end(), k) == g.kinds.end()) g.kinds.push_back(k);
        axes[key].first.insert(r.length);
        axes[key].second.insert(r.depth);
        g.overall[k].add(r);
        Cell& c = g.cells[{k, r.depth, r.length}];
        c.means.add(r);
        c.runs.push_back(&r);
    }
    for (auto& [key, g] : byKey) {
        g.lengths.assign(axes[key].first.begin(), axes[key].first.end());
        g.depths.assign(axes[key].second.begin(), axes[key].second.end());
        for (auto& [k, c] : g.cells)
            std::stable_sort(c.runs.begin(), c.runs.end(),
                             [](const NiahRunRecord* a, const NiahRunRecord* b) { return a->sample < b->sample; });
        groups_.push_back(std::move(g));
    }
}

}  // namespace kvlens::sessions
