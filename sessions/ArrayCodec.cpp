// Little-endian fixed-width arrays and LEB128 varints for BLOB columns.
#include "sessions/ArrayCodec.h"

#include <cstring>

#include "core/Error.h"

namespace kvlens::sessions {

namespace {

template <typename Bits>
void appendLittleEndian(std::string& out, Bits bits) {
    for (size_t i = 0; i < sizeof(Bits); ++i) out += char(uint8_t(bits >> (8 * i)));
}

template <typename Bits>
Bits readLittleEndian(const std::string& in, size_t pos) {
    Bits bits = 0;
    for (size_t i = 0; i < sizeof(Bits); ++i) bits |= Bits(uint8_t(in[pos + i])) << (8 * i);
    return bits;
}

template <typename Value, typename Bits>
std::string encodeFixed(const std::vector<Value>& values) {
    std::string out;
    out.reserve(values.size() * sizeof(Bits));
    for (const Value& v : values) {
        Bits bits;
        std::memcpy(&bits, &v, sizeof(Bits));
        appendLittleEndian(out, bits);
    }
    return out;
}

template <typename Value, typename Bits>
std::vector<Value> decodeFixed(const std::string& blob, const std::string& what) {
    if (blob.size() % sizeof(Bits) != 0) {
        throw Error(what + ": corrupt array (" + std::to_string(blob.size()) +
                    " bytes is not a whole number of " + std::to_string(sizeof(Bits)) +
                    "-byte values)");
    }
    std::vector<Value> values(blob.size() / sizeof(Bits));
    for (size_t i = 0; i < values.size(); ++i) {
        const Bits bits = readLittleEndian<Bits>(blob, i * sizeof(Bits));
        std::memcpy(&values[i], &bits, sizeof(Bits));
    }
    return values;
}

}  // namespace

std::string ArrayCodec::encode(const std::vector<double>& values) {
    return encodeFixed<double, uint64_t>(values);
}
std::string ArrayCodec::encode(const std::vector<int64_t>& values) {
    return encodeFixed<int64_t, uint64_t>(values);
}
std::string ArrayCodec::encode(const std::vector<int32_t>& values) {
    return encodeFixed<int32_t, uint32_t>(values);
}

std::vector<double> ArrayCodec::decodeDoubles(const std::string& blob, const std::string& what) {
    return decodeFixed<double, uint64_t>(blob, what);
}
std::vector<int64_t> ArrayCodec::decodeInt64s(const std::string& blob, const std::string& what) {
    return decodeFixed<int64_t, uint64_t>(blob, what);
}
std::vector<int32_t> ArrayCodec::decodeInt32s(const std::string& blob, const std::string& what) {
    return decodeFixed<int32_t, uint32_t>(blob, what);
}

std::string ArrayCodec::encodeRows(const std::vector<std::vector<int64_t>>& rows) {
    std::string out;
    appendVarint(out, rows.size());
    for (const auto& row : rows) {
        appendVarint(out, row.size());
        out += encode(row);
    }
    return out;
}

std::vector<std::vector<int64_t>> ArrayCodec::decodeRows(const std::string& blob,
                                                         const std::string& what) {
    size_t pos = 0;
    uint64_t count = 0;
    const std::string corrupt = what + ": corrupt array of rows";
    if (!readVarint(blob, pos, count) || count > blob.size()) throw Error(corrupt);
    std::vector<std::vector<int64_t>> rows(count);
    for (auto& row : rows) {
        uint64_t length = 0;
        if (!readVarint(blob, pos, length) || length > (blob.size() - pos) / 8)
            throw Error(corrupt);
        row = decodeInt64s(blob.substr(pos, length * 8), what);
        pos += length * 8;
    }
    if (pos != blob.size()) throw Error(corrupt);
    return rows;
}

void ArrayCodec::appendVarint(std::string& out, uint64_t value) {
    while (value >= 0x80) {
        out += char(uint8_t(value) | 0x80);
        value >>= 7;
    }
    out += char(uint8_t(value));
}

bool ArrayCodec::readVarint(const std::string& in, size_t& pos, uint64_t& value) {
    value = 0;
    for (int shift = 0; shift < 64; shift += 7) {
        if (pos >= in.size()) return false;
        const uint8_t byte = uint8_t(in[pos++]);
        if (shift == 63 && byte > 1) return false;
        value |= uint64_t(byte & 0x7f) << shift;
        if (!(byte & 0x80)) return true;
    }
    return false;
}

}  // namespace kvlens::sessions
