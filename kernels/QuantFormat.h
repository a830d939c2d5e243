// The weight formats the quantised matrix-vector kernels read in place, with their
// block geometry (ggml's layouts: ggml-common.h of llama.cpp, the GGUF spec).
#pragma once

#include <cstdint>

namespace kvlens::kernels {

enum class QuantFormat : int {
    F16,   // IEEE half per element
    BF16,  // bfloat16 per element
    Q8_0,  // 32 elements: f16 d, int8 q[32]; x = d q
    Q4_0,  // 32: f16 d, 16 bytes of nibbles (low: 0-15, high: 16-31); x = d (q - 8)
    Q4_K,  // 256: f16 d, f16 dmin, 12 bytes of 6-bit scales/mins, 128 bytes of nibbles
    Q5_K,  // 256: as Q4_K plus 32 bytes of fifth bits
    Q6_K,  // 256: 128 bytes low nibbles, 64 bytes high 2-bit pairs, int8 scales[16], f16 d
    Other  // any other ggml type: rows dequantised into a scratch row, then a dot product
};

struct QuantGeometry {
    int64_t blockElements;
    int64_t blockBytes;
};

// Elements and bytes per block of the formats read in place (Other has none).
constexpr QuantGeometry quantGeometry(QuantFormat f) {
    switch (f) {
        case QuantFormat::F16:
        case QuantFormat::BF16: return {1, 2};
        case QuantFormat::Q8_0: return {32, 34};
        case QuantFormat::Q4_0: return {32, 18};
        case QuantFormat::Q4_K: return {256, 144};
        case QuantFormat::Q5_K: return {256, 176};
        case QuantFormat::Q6_K: return {256, 210};
        case QuantFormat::Other: return {0, 0};
    }
    return {0, 0};
}

const char* quantFormatName(QuantFormat f);

}  // namespace kvlens::kernels
