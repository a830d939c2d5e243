// A model file as the store records it: absolute path, size, mtime and
// SHA-256; and the check a reopened session makes against the file now.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "sessions/StoreRecords.h"

namespace kvlens::sessions {

class ModelFile {
public:
    struct Stat {
        bool exists = false;
        int64_t sizeBytes = 0;
        int64_t mtimeNs = 0;
    };
    static Stat stat(const std::string& path);
    static std::string absolutePath(const std::string& path);

    // Hashes the file in 4 MB chunks; `progress` gets the fraction done.
    // Throws kvlens::Error naming the file when it cannot be read.
    static std::string sha256(const std::string& path,
                              const std::function<void(double)>& progress = {});

    enum class Status { Unchanged, NotAFile, Missing, SizeChanged, ContentChanged };
    struct Check {
        Status status = Status::Unchanged;
        std::string message;  // one line for the user, empty when unchanged
    };
    // Compares the file at model.path with the record. The hash is recomputed
    // when the size matches but the mtime moved, or always with `rehash`.
    static Check check(const ModelRecord& model, bool rehash,
                       const std::function<void(double)>& progress = {});
};

}  // namespace kvlens::sessions
