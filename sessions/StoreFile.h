// Checks a store path before SQLite touches it: reads the 100-byte SQLite
// header itself, so that a file that is not ours (another format, another
// program's database, a truncated copy, a newer schema) is refused with one
// line and never opened for writing.
#pragma once

#include <cstdint>
#include <string>

namespace kvlens::sessions {

class StoreFile {
public:
    struct Header {
        bool exists = false;
        int64_t fileSize = 0;
        uint32_t pageSize = 0;
        uint32_t userVersion = 0;  // may lag a WAL that holds a later migration
        uint32_t applicationId = 0;
    };

    // Throws kvlens::Error naming `path` when it is a directory, unreadable,
    // not a SQLite file, truncated, another program's SQLite database
    // (application_id not `applicationId`), or of a schema above `maxVersion`.
    // An empty file passes with fileSize 0: it holds nothing, so a writer may
    // make it a store (StoreCreator) and a reader says there is none yet.
    static Header inspect(const std::string& path, uint32_t applicationId, uint32_t maxVersion);

    // Throws kvlens::Error when the store (or, for a new one, its folder)
    // cannot be written: a read-only file, folder or file system. Creates the
    // missing folders of a new store.
    static void requireWritable(const std::string& path, bool exists);

    static std::string directoryOf(const std::string& path);
    static bool exists(const std::string& path);
};

}  // namespace kvlens::sessions
