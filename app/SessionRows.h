// A session's runs as flat rows for Python (`kvlens sessions export NAME FILE --format
// jsonl|csv [--kept]`), and the run objects `sessions show --json` prints: one object per run
// (kind "run") and per needle run (kind "niah"), with the session and the model's spec, path
// and SHA-256 on every row, so a merged sweep loads as one pandas DataFrame.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "sessions/StoreRecords.h"

namespace kvlens {

namespace sessions {
class SessionStore;
}

// A CSV cell of `text`: UTF-8 (invalid bytes as U+FFFD, as the JSONL export writes them),
// quoted when it holds a comma, a quote or a line break.
std::string csvCell(const std::string& text);

// The fields of one run / needle run, as `sessions show --json` prints them.
nlohmann::json runJson(const sessions::RunSummary& r);
nlohmann::json niahRunJson(const sessions::NiahRunRecord& r);
nlohmann::json evalRunJson(const sessions::EvalRunRecord& r);

class SessionRows {
public:
    enum class Format { Jsonl, Csv };
    // "jsonl" or "csv"; throws kvlens::Error naming --format.
    static Format parseFormat(const std::string& text);
    // Writes session `name`'s rows to `path` ("-": stdout), through a temporary file renamed
    // into place. `kept`: each run's kept positions ([layer][head] -> positions) and its
    // prompt's token ids (needle runs store none: their rows are as without it). Returns the
    // number of rows.
    static int64_t write(sessions::SessionStore& store, const std::string& name, const std::string& path, Format format,
                         bool kept);
};

}  // namespace kvlens
