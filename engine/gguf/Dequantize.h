// ggml tensor types: block sizes, byte sizes, and conversion to float.
// Plain C++ so the fuzz target can build it alone.
#pragma once

#include <cstddef>
#include <cstdint>

namespace kvlens {

// ggml_type codes as they appear in GGUF files.
enum class GgmlType : uint32_t {
    F32 = 0,
    F16 = 1,
    Q4_0 = 2,
    Q4_1 = 3,
    Q5_0 = 6,
    Q5_1 = 7,
    Q8_0 = 8,
    Q8_1 = 9,
    Q2_K = 10,
    Q3_K = 11,
    Q4_K = 12,
    Q5_K = 13,
    Q6_K = 14,
    Q8_K = 15,
    BF16 = 30,
};

// Name of a type code ("Q4_K"), or "type<N>" for codes this build does not know.
const char* ggmlTypeName(uint32_t type);

// True for the types this project can dequantise: F32, F16, BF16, Q8_0, Q4_0, Q4_K, Q6_K.
bool ggmlTypeSupported(uint32_t type);

// Elements per block (1 for F32/F16/BF16, 32 for Q8_0/Q4_0, 256 for K-quants);
// 0 for unknown codes.
int64_t ggmlBlockSize(uint32_t type);

// Bytes per block; 0 for unknown codes.
size_t ggmlBlockBytes(uint32_t type);

// Converts `n` elements of type `type` at `src` to float. `n` must be a multiple
// of the block size and the type supported (throws kvlens::Error otherwise).
void dequantize(uint32_t type, const void* src, float* dst, int64_t n);

// IEEE half and bfloat16 to float (subnormals, inf and NaN included).
float halfToFloat(uint16_t h);
float bf16ToFloat(uint16_t b);

}  // namespace kvlens
