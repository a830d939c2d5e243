// A shard of a sweep (`--shard I/N`): which of the sweep's samples one process runs.
#pragma once

#include <cstdint>
#include <string>

namespace kvlens {

// A shard of a sweep: the samples whose index (counted over the whole sweep, from 0) is
// shard - 1 modulo shards.
struct Shard {
    int64_t index = 1, count = 1;
    bool holds(int64_t sample) const { return sample % count == index - 1; }
    // How many of `total` samples, counted from `first`, the shard holds.
    int64_t of(int64_t first, int64_t total) const;
    // "I/N" with 1 <= I <= N; throws kvlens::Error naming `flag`.
    static Shard parse(const std::string& text, const std::string& flag);
};

}  // namespace kvlens
