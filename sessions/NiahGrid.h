// A session's needle-in-a-haystack runs arranged as the report and the GUI's panel show
// them: one group per task and question mode; inside it, the (method, budget) kinds in
// the order the sweep ran them, the prompt lengths and needle depths measured, and per
// (kind, depth, length) cell the means of the metrics over its samples and the runs
// themselves (for the GUI, which opens a cell's sample). Plain C++: no Qt, no LibTorch.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "sessions/StoreRecords.h"

namespace kvlens::sessions {

// A mean that skips non-finite values (a run without agreement, say); NaN when empty.
struct NiahMean {
    double sum = 0.0;
    int64_t n = 0;
    void add(double v);
    double value() const;
};

struct NiahMeans {
    NiahMean contains, exact, kept, agreement, kl;
    int64_t runs = 0;
    void add(const NiahRunRecord& r);
};

class NiahGrid {
public:
    // A method and budget label (NiahRunRecord::method, ::budget).
    using Kind = std::pair<std::string, std::string>;
    // "full" for FullKV, else "snapkv 128".
    static std::string kindLabel(const Kind& kind);

    struct Cell {
        NiahMeans means;
        std::vector<const NiahRunRecord*> runs;  // in the order saved (samples ascending)
    };
    struct Group {
        std::string task;
        bool questionAfter = false;
        std::vector<Kind> kinds;      // in sweep order (first appearance)
        std::vector<int64_t> lengths;  // ascending
        std::vector<double> depths;    // ascending
        std::map<Kind, NiahMeans> overall;
        std::map<std::tuple<Kind, double, int64_t>, Cell> cells;
        // Null when the sweep has no run there.
        const Cell* cell(const Kind& kind, double depth, int64_t length) const;
    };

    // Runs that are the same run (NiahRunRecord::key) count once: the first is kept
    // (stores written before the full cache's run was keyed without its budget may hold
    // it once per budget of the sweep).
    explicit NiahGrid(std::vector<NiahRunRecord> runs);
    NiahGrid(const NiahGrid&) = delete;  // the groups point into runs_
    NiahGrid& operator=(const NiahGrid&) = delete;

    const std::vector<NiahRunRecord>& runs() const { return runs_; }
    // Ordered by task, then question inside before after.
    const std::vector<Group>& groups() const { return groups_; }

private:
    std::vector<NiahRunRecord> runs_;
    std::vector<Group> groups_;
};

}  // namespace kvlens::sessions
