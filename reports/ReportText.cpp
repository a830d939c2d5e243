#include "reports/ReportText.h"

#include <cmath>
#include <cstdio>

namespace kvlens {
namespace {

const char* kReplacement = "\xef\xbf\xbd";

// Length of the valid UTF-8 character at s[i], or 0 when the bytes there are not one.
size_t charLength(const std::string& s, size_t i, uint32_t& cp) {
    const auto b = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
    const unsigned char c = b(i);
    size_t n = 0;
    if (c < 0x80) {
        cp = c;
        return 1;
    } else if ((c & 0xE0) == 0xC0) {
        n = 2, cp = c & 0x1F;
    } else if ((c & 0xF0) == 0xE0) {
        n = 3, cp = c & 0x0F;
    } else if ((c & 0xF8) == 0xF0) {
        n = 4, cp = c & 0x07;
    } else {
        return 0;
    }
    if (i + n > s.size()) return 0;
    for (size_t k = 1; k < n; ++k) {
        if ((b(i + k) & 0xC0) != 0x80) return 0;
        cp = cp << 6 | (b(i + k) & 0x3F);
    }
    // Overlong forms, surrogates and values past U+10FFFF are not UTF-8.
    if ((n == 2 && cp < 0x80) || (n == 3 && cp < 0x800) || (n == 4 && cp < 0x10000) || cp > 0x10FFFF ||
        (cp >= 0xD800 && cp <= 0xDFFF)) {
        return 0;
    }
    return n;
}

bool xmlAllowed(uint32_t cp) {
    if (cp == 0x9 || cp == 0xA || cp == 0xD) return true;
    if (cp < 0x20 || cp == 0x7F || (cp >= 0x80 && cp <= 0x9F)) return false;
    return cp != 0xFFFE && cp != 0xFFFF;
}

}  // namespace

std::string ReportText::sanitize(const std::string& text) {
    std::string out;
    out.reserve(text.size());
    for (size_t i = 0; i < text.size();) {
        uint32_t cp = 0;
        const size_t n = charLength(text, i, cp);
        if (n == 0) {
            out += kReplacement;
            ++i;
            continue;
        }
        if (xmlAllowed(cp)) {
            out.append(text, i, n);
        } else {
            out += kReplacement;
        }
        i += n;
    }
    return out;
}

std::string ReportText::xml(const std::string& text) {
    const std::string clean = sanitize(text);
    std::string out;
    out.reserve(clean.size());
    for (char c : clean) {
        switch (c) {
            case '&': out += "&amp;"; break;
            case '<': out += "&lt;"; break;
            case '>': out += "&gt;"; break;
            case '"': out += "&quot;"; break;
            case '\'': out += "&#39;"; break;
            case '\r': out += "&#13;"; break;
            default: out += c;
        }
    }
    return out;
}

size_t ReportText::commonPrefix(const std::string& a, const std::string& b) {
    size_t i = 0;
    while (i < a.size() && i < b.size()) {
        uint32_t ca = 0, cb = 0;
        const size_t na = charLength(a, i, ca), nb = charLength(b, i, cb);
        const size_t n = na ? na : 1;
        if (na != nb || a.compare(i, n, b, i, n) != 0) break;
        i += n;
    }
    return i;
}

std::string ReportText::preview(const std::string& text, size_t maxChars) {
    size_t i = 0, chars = 0;
    while (i < text.size() && chars < maxChars) {
        uint32_t cp = 0;
        const size_t n = charLength(text, i, cp);
        i += n ? n : 1;
        ++chars;
    }
    return text.substr(0, i);
}

std::string ReportText::number(const char* format, double v) {
    if (std::isnan(v)) return dash();
    char buf[64];
    std::snprintf(buf, sizeof buf, format, v);
    return buf;
}

std::string ReportText::percent(double fraction, int decimals) {
    if (std::isnan(fraction)) return dash();
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.*f%%", decimals, 100.0 * fraction);
    return buf;
}

std::string ReportText::bytes(int64_t n) {
    const double v = double(n);
    if (n < 1000) return std::to_string(n) + " B";
    if (v < 1e6) return number("%.1f KB", v / 1e3);
    if (v < 1e9) return number("%.2f MB", v / 1e6);
    return number("%.2f GB", v / 1e9);
}

std::string ReportText::exact(double v) {
    if (std::isnan(v)) return "nan";
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.17g", v);
    return buf;
}

}  // namespace kvlens
