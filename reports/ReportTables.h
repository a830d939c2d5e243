// The tables of a comparison report: the runs' settings, their metrics (with the best
// value of each column marked), and the mean selection overlap between runs. Each cell
// keeps its shown text and, for numbers, the exact stored value, so the HTML, the PDF
// and the CSV show the same data and tests can compare it with the store.
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "reports/ReportData.h"
#include "viz/CsvTable.h"

namespace kvlens {

struct ReportCell {
    std::string text;                                       // as shown
    double value = std::numeric_limits<double>::quiet_NaN();  // the stored value (numbers)
    bool numeric = false;
    bool best = false;  // the best of its column
};

struct ReportTable {
    std::string name;     // file stem in figures/: "metrics" -> metrics.csv
    std::string title, caption;
    std::vector<std::string> header;     // shown
    std::vector<std::string> columnIds;  // for CSV and data attributes: "mean_kl"
    std::vector<int64_t> rowRuns;        // the run of each row (0: none)
    std::vector<std::vector<ReportCell>> rows;

    // Numbers in full (CsvTable::number of the stored value), text as shown.
    viz::CsvTable csv() const;
};

class ReportTables {
public:
    static ReportTable settings(const ReportData& data);
    // KV memory, ratio, agreed@div, token agreement, mean KL, top-1, hit rate. "Best"
    // is among the compressed runs (full is the reference); NaN is never best.
    static ReportTable metrics(const ReportData& data);
    // Mean over layers of the per-layer Jaccard overlap, every pair of runs with a
    // selection; empty (no rows) with fewer than two.
    static ReportTable overlap(const ReportData& data);
    // The same per layer, long form (run_a, run_b, layer, jaccard), for figures/ only.
    static viz::CsvTable overlapPerLayer(const ReportData& data);
};

}  // namespace kvlens
