// Scalar helpers the CPU kernel bodies share: bf16 <-> fp32 and typed loads.
#pragma once

#include <cstdint>
#include <cstring>

namespace kvlens::kernels {

inline float bf16ToFloat(uint16_t b) {
    const uint32_t bits = uint32_t(b) << 16;
    float f;
    std::memcpy(&f, &bits, sizeof f);
    return f;
}

// Round to nearest even, as LibTorch's conversion does (NaN kept quiet).
inline uint16_t floatToBf16(float f) {
    uint32_t bits;
    std::memcpy(&bits, &f, sizeof bits);
    if ((bits & 0x7fffffffu) > 0x7f800000u) return uint16_t((bits >> 16) | 0x40u);
    bits += 0x7fffu + ((bits >> 16) & 1u);
    return uint16_t(bits >> 16);
}

}  // namespace kvlens::kernels
