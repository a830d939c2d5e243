// Numeric arrays as BLOB columns: fixed-width little-endian on every host, so
// doubles come back bit-exact (NaN payloads included) and the file is portable.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace kvlens::sessions {

class ArrayCodec {
public:
    static std::string encode(const std::vector<double>& values);
    static std::string encode(const std::vector<int64_t>& values);
    static std::string encode(const std::vector<int32_t>& values);
    // Rows of different lengths: varint row count, then per row a varint
    // length and its values as int64.
    static std::string encodeRows(const std::vector<std::vector<int64_t>>& rows);

    // Each throws kvlens::Error naming `what` (table.column of a run) when the
    // blob is not a whole number of values or is malformed.
    static std::vector<double> decodeDoubles(const std::string& blob, const std::string& what);
    static std::vector<int64_t> decodeInt64s(const std::string& blob, const std::string& what);
    static std::vector<int32_t> decodeInt32s(const std::string& blob, const std::string& what);
    static std::vector<std::vector<int64_t>> decodeRows(const std::string& blob,
                                                        const std::string& what);

    // Unsigned LEB128 varints, shared with SelectionCodec.
    static void appendVarint(std::string& out, uint64_t value);
    // Reads one varint at `pos` and advances it; false when the data ends first
    // or the varint is longer than 64 bits.
    static bool readVarint(const std::string& in, size_t& pos, uint64_t& value);
};

}  // namespace kvlens::sessions
