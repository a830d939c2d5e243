// Small helpers for writing SVG/XML by hand: escaping, compact numbers, base64.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace kvlens::viz {

class SvgText {
public:
    // Escapes & < > " ' for element text and attribute values; drops bytes XML 1.0
    // forbids (control characters other than tab, newline, carriage return).
    static std::string escape(const std::string& text);
    // A coordinate with at most 2 decimals, trailing zeros dropped ("12.5", "3").
    static std::string num(double v);
    static std::string base64(const std::vector<uint8_t>& bytes);
    // Approximate rendered width of text in a sans-serif font of the given size, for layout.
    static double estimateWidth(const std::string& text, double fontSize);
};

}  // namespace kvlens::viz
