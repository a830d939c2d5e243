// Writes a comparison report into a folder:
//   report.html   self-contained XHTML (inline SVG, PNG data: URIs)
//   report.pdf    the same content, A4, through Qt
//   figures/      every figure as <name>.svg, <name>.png and <name>.csv, every table
//                 as <name>.csv (settings, metrics, overlap_mean), and every pair's
//                 per-layer overlap (overlap_layers.csv)
#pragma once

#include <string>
#include <vector>

#include "reports/ReportData.h"

namespace kvlens {

class ReportWriter {
public:
    // Creates `dir` (and figures/) when missing. Throws kvlens::Error with one line
    // naming the path when it cannot be created or written. Returns the files written.
    static std::vector<std::string> write(const ReportData& data, const std::string& dir);
    // Creates dir and dir/figures, and checks that files can be made there.
    static void prepare(const std::string& dir);
};

}  // namespace kvlens
