// Writing a whole output file at once, with the one-line kvlens::Error that names the
// file when it cannot be written; and the naming rule for a chart's CSV beside it.
#pragma once

#include <cstddef>
#include <string>

namespace kvlens::viz {

// Writes (replaces) path with the n bytes at data. Throws kvlens::Error
// "<path>: cannot write: <reason>" on failure.
void writeOutputFile(const std::string& path, const void* data, size_t n);
void writeOutputFile(const std::string& path, const std::string& content);

// "dir/funnel.svg" -> "dir/funnel.csv" (the extension replaced, or ".csv" appended).
std::string csvPathBeside(const std::string& path);

}  // namespace kvlens::viz
