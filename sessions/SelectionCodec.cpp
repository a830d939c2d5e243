// Delta + zigzag + varint + zlib coding of kept positions.
#include "sessions/SelectionCodec.h"

#include <zlib.h>

#include "core/Error.h"
#include "sessions/ArrayCodec.h"

namespace kvlens::sessions {

namespace {

constexpr uint8_t kRawVarints = 1;
constexpr uint8_t kZlibVarints = 2;

uint64_t zigzag(int64_t v) { return (uint64_t(v) << 1) ^ uint64_t(v >> 63); }
int64_t unzigzag(uint64_t u) { return int64_t(u >> 1) ^ -int64_t(u & 1); }

}  // namespace

std::string SelectionCodec::encode(const std::vector<int32_t>& positions) {
    std::string varints;
    varints.reserve(positions.size() * 2);
    int64_t previous = 0;
    for (int32_t p : positions) {
        ArrayCodec::appendVarint(varints, zigzag(int64_t(p) - previous));
        previous = p;
    }
    std::string out(1, char(kRawVarints));
    ArrayCodec::appendVarint(out, positions.size());
    if (varints.size() >= 64) {
        uLongf bound = compressBound(uLong(varints.size()));
        std::string packed(bound, '\0');
        if (compress2(reinterpret_cast<Bytef*>(&packed[0]), &bound,
                      reinterpret_cast<const Bytef*>(varints.data()), uLong(varints.size()),
                      Z_BEST_COMPRESSION) == Z_OK &&
            bound + 10 < varints.size()) {
            packed.resize(bound);
            out[0] = char(kZlibVarints);
            ArrayCodec::appendVarint(out, varints.size());
            return out + packed;
        }
    }
    return out + varints;
}

std::vector<int32_t> SelectionCodec::decode(const std::string& blob, const std::string& what) {
    const std::string corrupt = what + ": corrupt selection blob";
    if (blob.empty()) throw Error(corrupt + " (empty)");
    const uint8_t format = uint8_t(blob[0]);
    size_t pos = 1;
    uint64_t count = 0;
    if (!ArrayCodec::readVarint(blob, pos, count)) throw Error(corrupt + " (no count)");
    std::string varints;
    if (format == kRawVarints) {
        varints = blob.substr(pos);
    } else if (format == kZlibVarints) {
        uint64_t length = 0;
        if (!ArrayCodec::readVarint(blob, pos, length)) throw Error(corrupt + " (no length)");
        // zlib expands at most ~1032:1; a larger claim is corruption, not data.
        if (length > (blob.size() - pos) * 1100 + 64) throw Error(corrupt + " (bad length)");
        varints.resize(length);
        uLongf size = uLongf(length);
        if (uncompress(reinterpret_cast<Bytef*>(&varints[0]), &size,
                       reinterpret_cast<const Bytef*>(blob.data() + pos),
                       uLong(blob.size() - pos)) != Z_OK ||
            size != length) {
            throw Error(corrupt + " (zlib)");
        }
    } else {
        throw Error(corrupt + " (unknown format " + std::to_string(format) + ")");
    }
    if (count > varints.size()) throw Error(corrupt + " (count)");
    std::vector<int32_t> positions;
    positions.reserve(count);
    size_t at = 0;
    int64_t previous = 0;
    for (uint64_t i = 0; i < count; ++i) {
        uint64_t delta = 0;
        if (!ArrayCodec::readVarint(varints, at, delta)) throw Error(corrupt + " (truncated)");
        const int64_t p = int64_t(uint64_t(previous) + uint64_t(unzigzag(delta)));
        if (p < INT32_MIN || p > INT32_MAX) throw Error(corrupt + " (position out of range)");
        positions.push_back(int32_t(p));
        previous = p;
    }
    if (at != varints.size()) throw Error(corrupt + " (trailing bytes)");
    return positions;
}

}  // namespace kvlens::sessions
