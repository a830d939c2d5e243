// CSV formatting and writing.
#include "viz/CsvTable.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "core/Error.h"
#include "viz/OutputFile.h"

namespace kvlens::viz {

CsvTable::CsvTable(std::vector<std::string> header) : header_(std::move(header)) {}

void CsvTable::addRow(std::vector<std::string> row) {
    if (row.size() != header_.size()) {
        throw Error("CSV row has " + std::to_string(row.size()) + " fields, header has " +
                    std::to_string(header_.size()));
    }
    rows_.push_back(std::move(row));
}

std::string CsvTable::quote(const std::string& field) {
    if (field.find_first_of(",\"\r\n") == std::string::npos) return field;
    std::string out = "\"";
    for (char c : field) {
        if (c == '"') out += '"';
        out += c;
    }
    return out + "\"";
}

std::string CsvTable::number(double v) {
    if (!std::isfinite(v)) return "";
    char buf[32];
    if (v == std::floor(v) && std::fabs(v) < 1e15) {
        std::snprintf(buf, sizeof buf, "%.0f", v);
        return buf;
    }
    for (int precision = 1; precision <= 9; ++precision) {
        std::snprintf(buf, sizeof buf, "%.*g", precision, v);
        if (std::strtod(buf, nullptr) == v) return buf;
    }
    std::snprintf(buf, sizeof buf, "%.9g", v);
    return buf;
}

std::string CsvTable::number32(float v) {
    if (!std::isfinite(v)) return "";
    char buf[32];
    if (v == std::floor(v) && std::fabs(v) < 1e7f) {
        std::snprintf(buf, sizeof buf, "%.0f", static_cast<double>(v));
        return buf;
    }
    for (int precision = 1; precision <= 9; ++precision) {
        std::snprintf(buf, sizeof buf, "%.*g", precision, static_cast<double>(v));
        if (std::strtof(buf, nullptr) == v) return buf;
    }
    return buf;
}

std::string CsvTable::str() const {
    std::string out;
    auto line = [&out](const std::vector<std::string>& fields) {
        for (size_t i = 0; i < fields.size(); ++i) {
            if (i) out += ',';
            out += quote(fields[i]);
        }
        out += '\n';
    };
    line(header_);
    for (const auto& r : rows_) line(r);
    return out;
}

void CsvTable::write(const std::string& path) const { writeOutputFile(path, str()); }

}  // namespace kvlens::viz
