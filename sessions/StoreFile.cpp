// SQLite header checks and write-permission checks made before opening.
#include "sessions/StoreFile.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>

#include "core/Error.h"

namespace kvlens::sessions {

namespace {

uint32_t bigEndian32(const unsigned char* p) {
    return uint32_t(p[0]) << 24 | uint32_t(p[1]) << 16 | uint32_t(p[2]) << 8 | uint32_t(p[3]);
}

bool readOnlyFileSystem(const std::string& path) {
    struct statvfs fs;
    return ::statvfs(path.c_str(), &fs) == 0 && (fs.f_flag & ST_RDONLY);
}

}  // namespace

std::string StoreFile::directoryOf(const std::string& path) {
    const size_t slash = path.find_last_of('/');
    if (slash == std::string::npos) return ".";
    if (slash == 0) return "/";
    return path.substr(0, slash);
}

bool StoreFile::exists(const std::string& path) {
    struct stat st;
    return ::stat(path.c_str(), &st) == 0;
}

StoreFile::Header StoreFile::inspect(const std::string& path, uint32_t applicationId,
                                     uint32_t maxVersion) {
    Header h;
    struct stat st;
    if (::stat(path.c_str(), &st) != 0) {
        if (errno == ENOENT) return h;
        throw Error(path + ": cannot read: " + std::strerror(errno));
    }
    h.exists = true;
    if (S_ISDIR(st.st_mode)) throw Error(path + ": is a directory, not a session store file");
    if (!S_ISREG(st.st_mode)) throw Error(path + ": is not a regular file");
    h.fileSize = int64_t(st.st_size);
    if (h.fileSize == 0) return h;  // holds nothing: the caller refuses it or makes it a store
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) throw Error(path + ": cannot read: " + std::strerror(errno));
    unsigned char header[100] = {};
    ssize_t got = 0;
    while (got < 100) {
        const ssize_t n = ::read(fd, header + got, size_t(100 - got));
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        got += n;
    }
    ::close(fd);
    static const char kMagic[16] = "SQLite format 3";  // 15 characters and the NUL
    const size_t compared = std::min<size_t>(size_t(got), 16);
    if (compared < 16 && std::memcmp(header, kMagic, compared) == 0 && got == h.fileSize) {
        throw Error(path + ": is truncated (" + std::to_string(got) +
                    " bytes, less than a SQLite header)");
    }
    if (got < 16 || std::memcmp(header, kMagic, 16) != 0) {
        throw Error(path + ": not a KV Lens session store (not a SQLite file)");
    }
    if (got < 100) {
        throw Error(path + ": is truncated (" + std::to_string(got) +
                    " bytes, less than a SQLite header)");
    }
    const uint32_t rawPageSize = uint32_t(header[16]) << 8 | header[17];
    h.pageSize = rawPageSize == 1 ? 65536u : rawPageSize;
    if (h.pageSize < 512 || (h.pageSize & (h.pageSize - 1)) != 0) {
        throw Error(path + ": the store is damaged (bad page size in its header)");
    }
    const uint32_t changeCounter = bigEndian32(header + 24);
    const uint32_t pages = bigEndian32(header + 28);
    const uint32_t validFor = bigEndian32(header + 92);
    h.userVersion = bigEndian32(header + 60);
    h.applicationId = bigEndian32(header + 68);
    // After a crash mid-checkpoint the file may be short of what its header says
    // while the WAL beside it still holds every page: SQLite recovers that.
    struct stat wal;
    const bool walHasData = ::stat((path + "-wal").c_str(), &wal) == 0 && wal.st_size > 0;
    if (!walHasData) {
        const int64_t expected = int64_t(pages) * h.pageSize;
        if (h.fileSize % h.pageSize != 0 ||
            (validFor == changeCounter && pages > 0 && h.fileSize < expected)) {
            throw Error(path + ": is truncated (" + std::to_string(h.fileSize) +
                        " bytes; its header says " + std::to_string(expected) + ")");
        }
    }
    if (h.applicationId != applicationId) {
        throw Error(path +
                    ": not a KV Lens session store (it is a SQLite database of another program)");
    }
    if (h.userVersion > maxVersion) {
        throw Error(path + ": written by a newer KV Lens (store schema " +
                    std::to_string(h.userVersion) + ", this build reads up to " +
                    std::to_string(maxVersion) + "); left unchanged: update kvlens to open it");
    }
    return h;
}

void StoreFile::requireWritable(const std::string& path, bool exists) {
    const std::string dir = directoryOf(path);
    if (!exists) {
        // Create the missing folders, one level at a time.
        std::string partial;
        size_t from = 0;
        while (from != std::string::npos) {
            const size_t slash = dir.find('/', from);
            partial = dir.substr(0, slash);
            from = slash == std::string::npos ? slash : slash + 1;
            if (partial.empty() || partial == ".") continue;
            if (::mkdir(partial.c_str(), 0755) != 0 && errno != EEXIST) {
                throw Error(path + ": cannot create the folder " + partial + ": " +
                            std::strerror(errno));
            }
        }
        struct stat st;
        if (::stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
            throw Error(path + ": " + dir + " is not a folder");
        }
    }
    const bool readOnlyFs = readOnlyFileSystem(dir);
    if (readOnlyFs || ::access(dir.c_str(), W_OK) != 0) {
        throw Error(path + ": cannot write to the folder " + dir +
                    (readOnlyFs ? " (read-only file system)" : " (permission denied)") +
                    "; the store needs it for its journal: choose another --store");
    }
    if (exists && ::access(path.c_str(), W_OK) != 0) {
        throw Error(path + ": the store file is read-only (" + std::strerror(errno) +
                    "); make it writable or choose another --store");
    }
}

}  // namespace kvlens::sessions
