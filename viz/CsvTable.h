// A CSV table (RFC 4180): a header row and data rows, fields quoted when they hold a comma,
// a quote, or a line break. Numbers are formatted with number(): integers in full, others
// as the shortest text that reads back the same (at most 9 significant digits), NaN and
// infinities as an empty field.
#pragma once

#include <string>
#include <vector>

namespace kvlens::viz {

class CsvTable {
public:
    explicit CsvTable(std::vector<std::string> header);

    // Throws kvlens::Error when the row's length differs from the header's.
    void addRow(std::vector<std::string> row);

    const std::vector<std::string>& header() const { return header_; }
    const std::vector<std::vector<std::string>>& rows() const { return rows_; }

    // The whole table, "\n" line ends, ending with a line end.
    std::string str() const;
    // Throws kvlens::Error "<path>: cannot write: ..." on failure.
    void write(const std::string& path) const;

    static std::string quote(const std::string& field);
    static std::string number(double v);
    // The same for a float: shortest text that reads back as the same float.
    static std::string number32(float v);

private:
    std::vector<std::string> header_;
    std::vector<std::vector<std::string>> rows_;
};

}  // namespace kvlens::viz
