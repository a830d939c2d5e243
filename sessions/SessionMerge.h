// Joins stores into one: `kvlens sessions merge A.db B.db ... --into C.db`, e.g. the
// shards of a sweep (`kvlens niah --shard i/n --save`), each written to its own store.
// Sessions of the same name become one; every prompt and run of every source is
// copied once (new ids), and a needle-in-a-haystack run the target already holds (the
// same sample, method and settings: NiahRunRecord::key) is not copied twice. Every
// source is opened read-only before the target is touched, so a source of a newer
// schema, or damaged, fails the merge with both left as they were; the copy is one
// transaction.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace kvlens::sessions {

class SessionMerge {
public:
    struct Result {
        int64_t sessions = 0;        // in the target that received anything
        int64_t runs = 0;
        int64_t niahRuns = 0;
        int64_t niahDuplicates = 0;  // already there, not copied
        int64_t evalRuns = 0;
        int64_t evalDuplicates = 0;  // already there, not copied
    };
    // Throws kvlens::Error for no sources, a source given twice, the target among
    // the sources, or a source that cannot be read.
    static Result merge(const std::vector<std::string>& sources, const std::string& into);
};

}  // namespace kvlens::sessions
