// Text helpers of the report: stored text made safe for XML (invalid UTF-8 and
// control characters become U+FFFD, so the XHTML stays well-formed whatever a
// model generated), XML escaping, the common prefix of two texts on a character
// boundary, and the number formats the tables use.
#pragma once

#include <cstdint>
#include <string>

namespace kvlens {

class ReportText {
public:
    // Valid UTF-8 without C0 controls other than tab and line ends (nor DEL, C1, or
    // XML's non-characters U+FFFE/U+FFFF): each bad byte or character becomes U+FFFD.
    static std::string sanitize(const std::string& text);
    // sanitize() and escape &, <, >, " and '.
    static std::string xml(const std::string& text);
    // Bytes of the longest common prefix of a and b that ends on a UTF-8 character
    // boundary of both.
    static size_t commonPrefix(const std::string& a, const std::string& b);
    // The first `maxChars` characters (whole UTF-8 characters) of text.
    static std::string preview(const std::string& text, size_t maxChars);
    // Formats: printf-style for one double; "—" for NaN.
    static std::string number(const char* format, double v);
    // "12.5%" of a fraction; "—" for NaN.
    static std::string percent(double fraction, int decimals = 1);
    // Bytes as "512 B", "12.3 KB", "4.56 MB", "1.23 GB" (decimal units).
    static std::string bytes(int64_t n);
    // The exact value, for data attributes: %.17g, "nan" for NaN.
    static std::string exact(double v);
    static const char* dash() { return "\xe2\x80\x94"; }
};

}  // namespace kvlens
