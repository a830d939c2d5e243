// Text from a Hugging Face file (a tensor, token, class or shard name), quoted for a
// one-line message: control bytes escaped, very long text cut.
#pragma once

#include <string>

namespace kvlens {

inline std::string quotedText(const std::string& s) {
    static const char* hex = "0123456789abcdef";
    std::string out = "'";
    for (size_t i = 0; i < s.size() && i < 120; ++i) {
        const unsigned char c = static_cast<unsigned char>(s[i]);
        if (c < 0x20 || c == 0x7F) {
            out += "\\x";
            out += hex[c >> 4];
            out += hex[c & 15];
        } else {
            out += static_cast<char>(c);
        }
    }
    return out + (s.size() > 120 ? "...'" : "'");
}

}  // namespace kvlens
