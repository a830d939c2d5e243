// The GPT-2 byte <-> character table (bytes_to_unicode), built once.
#include "engine/tokenizer/ByteLevel.h"

#include "engine/tokenizer/Utf8.h"

namespace kvlens {

namespace {

bool standsForItself(int b) {
    return (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174 && b <= 255);
}

// Code point -> byte, -1 outside the alphabet (code points 0..511 cover it).
const std::array<int16_t, 512>& reverse() {
    static const std::array<int16_t, 512> r = [] {
        std::array<int16_t, 512> out;
        out.fill(-1);
        int next = 256;
        for (int b = 0; b < 256; ++b) out[size_t(standsForItself(b) ? b : next++)] = int16_t(b);
        return out;
    }();
    return r;
}

}  // namespace

const std::array<std::string, 256>& ByteLevel::table() {
    static const std::array<std::string, 256> t = [] {
        std::array<std::string, 256> out;
        int next = 256;
        for (int b = 0; b < 256; ++b)
            out[size_t(b)] = Utf8::encode(uint32_t(standsForItself(b) ? b : next++));
        return out;
    }();
    return t;
}

std::string ByteLevel::encode(std::string_view bytes) {
    const auto& t = table();
    std::string out;
    out.reserve(bytes.size() * 2);
    for (unsigned char b : bytes) out += t[b];
    return out;
}

bool ByteLevel::decode(std::string_view text, std::string& bytes) {
    const auto& r = reverse();
    size_t at = 0;
    while (at < text.size()) {
        uint32_t cp = 0;
        const size_t n = Utf8::decode(text, at, cp);
        if (n == 0 || cp >= r.size() || r[cp] < 0) return false;
        bytes += char(r[cp]);
        at += n;
    }
    return true;
}

}  // namespace kvlens
