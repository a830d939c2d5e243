#include "engine/eval/LongBenchRecords.h"

#include <nlohmann/json.hpp>

#include <cerrno>
#include <cstring>
#include <fstream>

#include "core/Error.h"

namespace kvlens {

namespace {

std::vector<std::string> strings(const nlohmann::json& v, const std::string& where, const char* field) {
    if (v.is_string()) return {v.get<std::string>()};
    if (!v.is_array()) throw Error(where + ": '" + field + "' is neither a string nor a list of strings");
    std::vector<std::string> out;
    for (const auto& item : v) {
        if (!item.is_string()) throw Error(where + ": '" + field + "' holds a value that is not a string");
        out.push_back(item.get<std::string>());
    }
    return out;
}

}  // namespace

std::vector<LongBenchRecord> readLongBenchRecords(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw Error(path + ": cannot read: " + std::strerror(errno));
    std::vector<LongBenchRecord> out;
    std::string text;
    for (int64_t line = 1; std::getline(in, text); ++line) {
        if (!text.empty() && text.back() == '\r') text.pop_back();
        if (text.find_first_not_of(" \t") == std::string::npos) continue;
        const std::string where = path + ":" + std::to_string(line);
        nlohmann::json j;
        try {
            j = nlohmann::json::parse(text);
        } catch (const nlohmann::json::parse_error&) {
            throw Error(where + ": not JSON");
        }
        if (!j.is_object()) throw Error(where + ": not a JSON object");
        LongBenchRecord r;
        r.line = line;
        if (!j.contains("context") || !j["context"].is_string()) throw Error(where + ": no 'context' string");
        r.context = j["context"].get<std::string>();
        const char* question = j.contains("input") ? "input" : "question";
        if (!j.contains(question) || !j[question].is_string()) throw Error(where + ": no 'input' (or 'question') string");
        r.input = j[question].get<std::string>();
        if (!j.contains("answers")) throw Error(where + ": no 'answers'");
        r.answers = strings(j["answers"], where, "answers");
        if (r.answers.empty()) throw Error(where + ": 'answers' is empty");
        if (j.contains("all_classes") && !j["all_classes"].is_null())
            r.allClasses = strings(j["all_classes"], where, "all_classes");
        if (j.contains("length")) {
            if (!j["length"].is_number_integer()) throw Error(where + ": 'length' is not an integer");
            r.length = j["length"].get<int64_t>();
        }
        if (j.contains("dataset") && j["dataset"].is_string()) r.dataset = j["dataset"].get<std::string>();
        out.push_back(std::move(r));
    }
    if (out.empty()) throw Error(path + ": no records");
    return out;
}

std::string longBenchMetric(const std::string& dataset) {
    std::string d = dataset;
    if (d.size() > 2 && d.compare(d.size() - 2, 2, "_e") == 0) d.resize(d.size() - 2);
    for (const char* f : {"narrativeqa", "qasper", "multifieldqa_en", "hotpotqa", "2wikimqa", "musique", "triviaqa"})
        if (d == f) return "f1";
    for (const char* r : {"gov_report", "qmsum", "multi_news", "samsum", "vcsum"})
        if (d == r) return "rouge";
    if (d == "trec" || d == "lsht") return "classification";
    if (d.rfind("niah", 0) == 0 || d == "vt" || d == "cwe" || d == "fwe" || d == "qa_1" || d == "qa_2") return "contains";
    return "em";
}

}  // namespace kvlens
