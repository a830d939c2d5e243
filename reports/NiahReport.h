// The report of a session's needle-in-a-haystack runs (kvlens niah --save), read from
// the store alone: per task and question mode, depth x length heatmaps of accuracy
// (contains) and needle kept with one panel per method and budget, accuracy against
// the budget per method (FullKV as a dashed reference), and a table of the means.
// Written as SVG (+ the CSV of what each draws) and one self-contained HTML page.
#pragma once

#include <string>
#include <vector>

#include "sessions/SessionStore.h"

namespace kvlens {

class NiahReport {
public:
    // Writes DIR/niah.html, DIR/figures/niah_<task>_<mode>_{contains,needle_kept,budget}.svg
    // with their CSVs, and DIR/niah_table.csv; returns the paths written. Throws
    // kvlens::Error when the session has no niah runs or DIR cannot be written.
    static std::vector<std::string> write(sessions::SessionStore& store, const std::string& session,
                                          const std::string& dir);
};

}  // namespace kvlens
