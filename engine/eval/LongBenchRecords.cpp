#include "engine/eval/LongBenchRecords.h"

#include <nlohmann/json.hpp>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "core/Error.h"

namespace kvlens {

namespace {

// "FILE:LINE: field: expected ..., got <JSON type>": the one shape of a wrong field.
[[noreturn]] void wrongType(const std::string& where, const char* field, const char* expected,
                            const nlohmann::json& v) {
    throw Error(where + ": " + field + ": expected " + expected + ", got " + v.type_name());
}

// A list of non-empty strings (or, where `oneString`, one string alone).
std::vector<std::string> strings(const nlohmann::json& v, const std::string& where, const char* field, bool oneString) {
    const char* expected = oneString ? "a string or a list of strings" : "a list of strings";
    std::vector<std::string> out;
    if (oneString && v.is_string()) {
        out.push_back(v.get<std::string>());
    } else if (v.is_array()) {
        for (const auto& item : v) {
            if (!item.is_string()) {
                throw Error(where + ": " + field + ": expected " + expected + ", got a list holding a " +
                            item.type_name());
            }
            out.push_back(item.get<std::string>());
        }
    } else {
        wrongType(where, field, expected, v);
    }
    for (const std::string& s : out) {
        if (s.find_first_not_of(" \t\r\n") == std::string::npos) {
            throw Error(where + ": " + field + ": an empty string (it would match any output)");
        }
    }
    return out;
}

}  // namespace

std::vector<LongBenchRecord> readLongBenchRecords(const std::string& path) {
    std::error_code ec;
    if (std::filesystem::is_directory(path, ec)) throw Error(path + ": a folder, not a .jsonl file of records");
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
        } catch (const nlohmann::json::out_of_range&) {
            throw Error(where + ": not JSON: a number too large for a double");
        } catch (const nlohmann::json::exception&) {
            throw Error(where + ": not JSON");
        }
        if (!j.is_object()) throw Error(where + ": not a JSON object");
        LongBenchRecord r;
        r.line = line;
        if (!j.contains("context")) throw Error(where + ": context: missing (expected a string)");
        if (!j["context"].is_string()) wrongType(where, "context", "a string", j["context"]);
        r.context = j["context"].get<std::string>();
        const char* question = j.contains("input") ? "input" : "question";
        if (!j.contains(question)) throw Error(where + ": input: missing (expected a string; or 'question')");
        if (!j[question].is_string()) wrongType(where, question, "a string", j[question]);
        r.input = j[question].get<std::string>();
        if (!j.contains("answers")) throw Error(where + ": answers: missing (expected a string or a list of strings)");
        r.answers = strings(j["answers"], where, "answers", true);
        if (r.answers.empty()) throw Error(where + ": answers: an empty list");
        if (j.contains("all_classes") && !j["all_classes"].is_null()) {
            r.allClasses = strings(j["all_classes"], where, "all_classes", false);
            if (r.allClasses.empty()) throw Error(where + ": all_classes: an empty list (null when the task has none)");
        }
        if (j.contains("length") && !j["length"].is_null()) {
            const nlohmann::json& v = j["length"];
            if (!v.is_number_integer()) wrongType(where, "length", "a whole number of words", v);
            if (v.is_number_unsigned() ? v.get<uint64_t>() > uint64_t(INT64_MAX) : v.get<int64_t>() < 0) {
                throw Error(where + ": length: expected a number of words >= 0, got " + v.dump());
            }
            r.length = v.get<int64_t>();
        }
        if (j.contains("dataset") && !j["dataset"].is_null()) {
            if (!j["dataset"].is_string()) wrongType(where, "dataset", "a string (the task's name)", j["dataset"]);
            r.dataset = j["dataset"].get<std::string>();
            if (r.dataset.empty()) throw Error(where + ": dataset: an empty name (leave it out, or null)");
        }
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
