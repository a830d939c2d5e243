// The kept positions of one (layer, head) as a compact BLOB: deltas between
// successive positions (zigzag, so any order round-trips), LEB128 varints,
// then zlib when that is smaller. Bit-exact for every int32 sequence.
//
// Layout: byte 0 = 1 (raw varints) or 2 (zlib); varint position count;
// format 2 adds the varint length of the varint stream, then the zlib stream.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace kvlens::sessions {

class SelectionCodec {
public:
    static std::string encode(const std::vector<int32_t>& positions);
    // Throws kvlens::Error naming `what` (e.g. "run 3 layer 2 head 1") on a
    // blob that is not one this codec wrote.
    static std::vector<int32_t> decode(const std::string& blob, const std::string& what);
};

}  // namespace kvlens::sessions
