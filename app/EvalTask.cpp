#include "app/EvalTask.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/Error.h"
#include "engine/eval/AnswerMetrics.h"
#include "sessions/Sha256.h"

namespace kvlens {

void EvalTask::prepare() {
    const size_t c = templateText.find("{context}"), q = templateText.find("{input}");
    if (c == std::string::npos || q == std::string::npos || q < c)
        throw Error("--template: needs {context} and then {input}");
    if (!metric.empty()) scoreAnswer(metric, "", {""});  // an unknown one fails now
    if (!data.empty()) {
        records = readLongBenchRecords(data);
        if (records.empty()) throw Error(data + ": no records");
    }
}

int64_t EvalTask::count() const {
    if (data.empty()) return samples;
    const int64_t n = static_cast<int64_t>(records.size());
    return limit > 0 ? std::min(limit, n) : n;
}

std::string EvalTask::source() const {
    sessions::Sha256 hash;
    if (!data.empty()) {
        std::ifstream f(data, std::ios::binary);
        std::ostringstream bytes;
        bytes << f.rdbuf();
        hash.update("data\n" + bytes.str());
    } else {
        hash.update("task\n" + std::string(needleKindName(kind)) + "\n" + std::to_string(length) + "\n" +
                    std::to_string(samples) + "\n" + std::to_string(taskSeed) + "\n");
    }
    hash.update("\ntemplate\n" + templateText + (truncate ? "\ntruncate" : "") + (noBos ? "\nno-bos" : "") +
                "\nlimit " + std::to_string(limit));
    return hash.finishHex();
}

std::string EvalTask::sourceName() const {
    return data.empty() ? std::string(needleKindName(kind)) : std::filesystem::path(data).filename().string();
}

}  // namespace kvlens
