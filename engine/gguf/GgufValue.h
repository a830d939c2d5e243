// One metadata value of a GGUF file: a scalar, a string, or an array of them
// (arrays may nest). Keeps the on-disk type so `info` can show it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace kvlens {

// On-disk value type codes of the GGUF format (gguf_type).
enum class GgufValueType : uint32_t {
    UInt8 = 0,
    Int8 = 1,
    UInt16 = 2,
    Int16 = 3,
    UInt32 = 4,
    Int32 = 5,
    Float32 = 6,
    Bool = 7,
    String = 8,
    Array = 9,
    UInt64 = 10,
    Int64 = 11,
    Float64 = 12,
};

const char* ggufValueTypeName(GgufValueType type);

struct GgufValue {
    GgufValueType type = GgufValueType::UInt8;
    // Integers and bools live in `i` (signed types sign-extended, uint64 bit-cast),
    // floats in `f`, strings in `s`, arrays in `array` with `arrayType` their element type.
    int64_t i = 0;
    double f = 0.0;
    std::string s;
    GgufValueType arrayType = GgufValueType::UInt8;
    std::vector<GgufValue> array;

    bool isInteger() const;  // any integer type or bool
    bool isFloat() const;    // Float32 or Float64
};

}  // namespace kvlens
