// Base64 (RFC 4648, with padding), for the data: URIs that make the HTML report
// self-contained.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace kvlens {

class Base64 {
public:
    static std::string encode(const std::vector<uint8_t>& bytes);
    static std::string encode(const std::string& bytes);
};

}  // namespace kvlens
