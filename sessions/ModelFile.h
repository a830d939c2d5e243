// A model file as the store records it: absolute path, size, mtime and
// SHA-256; and the check a reopened session makes against the file now.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

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
    static bool isFolder(const std::string& path);

    // The files of a Hugging Face folder that make its model, by name: the weights as
    // its loader reads them (the shards model.safetensors.index.json lists, sorted by
    // name, else model.safetensors), then config.json, generation_config.json and the
    // tokenizer files that are there. (The engine's HfFolder opens them; the store, beside the
    // engine rather than above it, only needs their names to hash them.) Throws
    // kvlens::Error naming the folder when there are none or the index is unreadable.
    static std::vector<std::string> folderFiles(const std::string& dir);
    // The folder digest: SHA-256 of "<sha256>  <name>\n" for each file in order.
    static std::string folderSha256(const std::vector<FolderFileRecord>& files);

    // Hashes the file in 4 MB chunks; `progress` gets the fraction done.
    // Throws kvlens::Error naming the file when it cannot be read.
    static std::string sha256(const std::string& path,
                              const std::function<void(double)>& progress = {});

    enum class Status { Unchanged, NotAFile, Missing, SizeChanged, ContentChanged };
    struct Check {
        Status status = Status::Unchanged;
        std::string message;  // one line for the user, empty when unchanged
    };
    // Compares the file at model.path (each of a folder's files) with the record. The hash is recomputed
    // when the size matches but the mtime moved, or always with `rehash`.
    static Check check(const ModelRecord& model, bool rehash,
                       const std::function<void(double)>& progress = {});
};

}  // namespace kvlens::sessions
