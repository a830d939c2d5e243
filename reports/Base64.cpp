#include "reports/Base64.h"

namespace kvlens {
namespace {

std::string encodeBytes(const uint8_t* p, size_t n) {
    static const char* kDigits = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    std::string out;
    out.reserve((n + 2) / 3 * 4);
    size_t i = 0;
    for (; i + 3 <= n; i += 3) {
        const uint32_t v = uint32_t(p[i]) << 16 | uint32_t(p[i + 1]) << 8 | p[i + 2];
        out += kDigits[v >> 18 & 63];
        out += kDigits[v >> 12 & 63];
        out += kDigits[v >> 6 & 63];
        out += kDigits[v & 63];
    }
    if (n - i == 1) {
        const uint32_t v = uint32_t(p[i]) << 16;
        out += kDigits[v >> 18 & 63];
        out += kDigits[v >> 12 & 63];
        out += "==";
    } else if (n - i == 2) {
        const uint32_t v = uint32_t(p[i]) << 16 | uint32_t(p[i + 1]) << 8;
        out += kDigits[v >> 18 & 63];
        out += kDigits[v >> 12 & 63];
        out += kDigits[v >> 6 & 63];
        out += '=';
    }
    return out;
}

}  // namespace

std::string Base64::encode(const std::vector<uint8_t>& bytes) { return encodeBytes(bytes.data(), bytes.size()); }

std::string Base64::encode(const std::string& bytes) {
    return encodeBytes(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
}

}  // namespace kvlens
