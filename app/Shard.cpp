#include "app/Shard.h"

#include <cerrno>
#include <cstdlib>

#include "core/Error.h"

namespace kvlens {

int64_t Shard::of(int64_t first, int64_t total) const {
    // Indices first .. first + total - 1 congruent to index - 1 modulo count.
    int64_t n = 0;
    const int64_t r = index - 1;
    int64_t i = first + ((r - first % count) % count + count) % count;
    if (i < first + total) n = (first + total - 1 - i) / count + 1;
    return n;
}

Shard Shard::parse(const std::string& t, const std::string& flag) {
    Shard s;
    char* end = nullptr;
    errno = 0;
    s.index = std::strtoll(t.c_str(), &end, 10);
    if (end == t.c_str() || *end != '/' || (s.count = std::strtoll(end + 1, &end, 10)) < 1 || *end != '\0' ||
        errno != 0 || s.index < 1 || s.index > s.count)
        throw Error(flag + ": '" + t + "' is not I/N with 1 <= I <= N");
    return s;
}

}  // namespace kvlens
