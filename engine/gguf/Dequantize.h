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
    IQ2_XXS = 16,
    IQ2_XS = 17,
    IQ3_XXS = 18,
    IQ1_S = 19,
    IQ4_NL = 20,
    IQ3_S = 21,
    IQ2_S = 22,
    IQ4_XS = 23,
    I8 = 24,
    I16 = 25,
    I32 = 26,
    I64 = 27,
    F64 = 28,
    IQ1_M = 29,
    BF16 = 30,
    TQ1_0 = 34,
    TQ2_0 = 35,
};

// Name of a type code ("Q4_K"), or "type<N>" for codes this build does not know.
const char* ggmlTypeName(uint32_t type);

// True for the types this project can dequantise: F32, F16, BF16, Q4_0, Q4_1,
// Q5_0, Q5_1, Q8_0, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, IQ4_NL and IQ4_XS: every type
// the Q2_K..Q8_0, Q3_K_S/M/L, Q4_K_S/M, Q5_K_S/M, Q6_K and IQ4 files contain.
bool ggmlTypeSupported(uint32_t type);
// The supported types' names, for messages ("F32, F16, ...").
const char* ggmlSupportedTypeList();

// Elements per block (1 for F32/F16/BF16 and the integer types, 32 for the
// Q*_0/Q*_1 and IQ4_NL blocks, 256 for K-quants, IQ and TQ types); 0 for
// codes ggml does not define, so that any file of known types can be listed.
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
