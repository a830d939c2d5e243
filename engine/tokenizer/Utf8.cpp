// UTF-8 decoding and encoding by RFC 3629.
#include "engine/tokenizer/Utf8.h"

#include <utf8proc.h>

#include <cstdlib>

namespace kvlens {

size_t Utf8::decode(std::string_view s, size_t at, uint32_t& cp) {
    const auto byte = [&](size_t i) { return static_cast<unsigned char>(s[i]); };
    const unsigned c = byte(at);
    if (c < 0x80) {
        cp = c;
        return 1;
    }
    size_t n;
    uint32_t min;
    if ((c & 0xE0) == 0xC0) {
        n = 2, cp = c & 0x1F, min = 0x80;
    } else if ((c & 0xF0) == 0xE0) {
        n = 3, cp = c & 0x0F, min = 0x800;
    } else if ((c & 0xF8) == 0xF0) {
        n = 4, cp = c & 0x07, min = 0x10000;
    } else {
        return 0;
    }
    if (at + n > s.size()) return 0;
    for (size_t k = 1; k < n; ++k) {
        const unsigned b = byte(at + k);
        if ((b & 0xC0) != 0x80) return 0;
        cp = (cp << 6) | (b & 0x3F);
    }
    if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
    return n;
}

size_t Utf8::firstInvalid(std::string_view s) {
    size_t at = 0;
    uint32_t cp = 0;
    while (at < s.size()) {
        const size_t n = decode(s, at, cp);
        if (n == 0) return at;
        at += n;
    }
    return std::string_view::npos;
}

std::string Utf8::encode(uint32_t cp) {
    std::string out;
    if (cp < 0x80) {
        out += char(cp);
    } else if (cp < 0x800) {
        out += char(0xC0 | (cp >> 6));
        out += char(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
        out += char(0xE0 | (cp >> 12));
        out += char(0x80 | ((cp >> 6) & 0x3F));
        out += char(0x80 | (cp & 0x3F));
    } else {
        out += char(0xF0 | (cp >> 18));
        out += char(0x80 | ((cp >> 12) & 0x3F));
        out += char(0x80 | ((cp >> 6) & 0x3F));
        out += char(0x80 | (cp & 0x3F));
    }
    return out;
}

std::string Utf8::nfc(std::string_view text) {
    if (text.empty()) return {};
    utf8proc_uint8_t* out = nullptr;
    const utf8proc_ssize_t n =
        utf8proc_map(reinterpret_cast<const utf8proc_uint8_t*>(text.data()), static_cast<utf8proc_ssize_t>(text.size()),
                     &out, static_cast<utf8proc_option_t>(UTF8PROC_STABLE | UTF8PROC_COMPOSE));
    if (n < 0) return std::string(text);  // not well-formed: the caller has checked it is
    std::string composed(reinterpret_cast<const char*>(out), static_cast<size_t>(n));
    std::free(out);
    return composed;
}

}  // namespace kvlens
