// New stores: built under "<path>.creating-<pid>", fsynced, moved into place
// without replacing a store another process made meanwhile, and the folder
// fsynced so that the move survives a power cut.
#include "sessions/StoreCreator.h"

#include <fcntl.h>
#include <sqlite3.h>
#include <stdio.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "core/Error.h"
#include "sessions/CrashPoint.h"
#include "sessions/Database.h"
#include "sessions/StoreFile.h"
#include "sessions/TemporaryFiles.h"

namespace kvlens::sessions {

namespace {

// Holds an exclusive flock on a folder while stores are created in it.
class FolderLock {
public:
    explicit FolderLock(const std::string& dir) {
        fd_ = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd_ < 0) return;
        // A file system without flock (some network mounts) runs unlocked:
        // the move below still never replaces a store that is there.
        while (::flock(fd_, LOCK_EX) != 0 && errno == EINTR) {
        }
    }
    ~FolderLock() {
        if (fd_ >= 0) ::close(fd_);  // releases the lock
    }
    void sync() const {
        if (fd_ >= 0) ::fsync(fd_);
    }

private:
    int fd_ = -1;
};

int64_t fileSize(const std::string& path) {
    struct stat st;
    return ::stat(path.c_str(), &st) == 0 ? int64_t(st.st_size) : -1;
}

void syncFile(const std::string& path) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) throw Error(path + ": cannot reopen the new store: " + std::strerror(errno));
    const int rc = ::fsync(fd);
    const int err = errno;
    ::close(fd);
    if (rc != 0) throw Error(path + ": cannot write the new store to disk: " + std::strerror(err));
}

// rename() that refuses to replace an existing file: renameat2's NOREPLACE,
// or link + unlink where the file system has no renameat2.
bool moveWithoutReplacing(const std::string& from, const std::string& to) {
#ifdef SYS_renameat2
    if (::syscall(SYS_renameat2, AT_FDCWD, from.c_str(), AT_FDCWD, to.c_str(), 1u /*NOREPLACE*/) ==
        0)
        return true;
    if (errno == EEXIST) return false;
    if (errno != EINVAL && errno != ENOSYS && errno != ENOTSUP)
        throw Error(to + ": cannot move the new store into place: " + std::strerror(errno));
#endif
    if (::link(from.c_str(), to.c_str()) == 0) {
        ::unlink(from.c_str());
        return true;
    }
    if (errno == EEXIST) return false;
    throw Error(to + ": cannot move the new store into place: " + std::strerror(errno));
}

}  // namespace

void StoreCreator::ensure(const std::string& path, const std::function<void(Database&)>& build) {
    FolderLock lock(StoreFile::directoryOf(path));
    // Under the lock: another process may have made the store meanwhile.
    const int64_t size = fileSize(path);
    if (size > 0) return;
    const int64_t walSize = fileSize(path + "-wal");
    if (walSize > 0) {
        throw Error(path + (size == 0 ? ": is empty but " : ": is missing but ") + path +
                    "-wal beside it holds " + std::to_string(walSize) +
                    " bytes (a store's last writes?); left unchanged: move both away, or recover "
                    "them with sqlite3");
    }
    const std::string temporary = TemporaryFiles::nameFor(path, temporaryTag());
    TemporaryFiles::remove(temporary);
    try {
        {
            Database db(path, temporary, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE);
            db.exec("PRAGMA synchronous = FULL", "set synchronous writes");
            build(db);
            // WAL already: the store in place never switches journal modes (a
            // switch is one more write that a crash could interrupt). Closing the
            // only connection checkpoints the WAL into the file and removes it.
            db.exec("PRAGMA journal_mode = WAL", "switch the new store to WAL");
        }
        if (StoreFile::exists(temporary + "-wal"))
            throw Error(path + ": the new store's WAL was not checkpointed into it");
        syncFile(temporary);
        CrashPoint::reach("create: temporary complete");
        // A rollback journal of a missing or empty store can only restore
        // emptiness: left there, SQLite would roll it back into the new file.
        for (const char* suffix : {"-journal", "-wal"}) ::unlink((path + suffix).c_str());
        bool moved = false;
        if (size < 0) {
            moved = moveWithoutReplacing(temporary, path);
        } else if (fileSize(path) == 0) {
            // An empty file (made by hand, or by an older KV Lens killed while
            // creating it) holds nothing: replace it.
            if (::rename(temporary.c_str(), path.c_str()) != 0) {
                throw Error(path + ": cannot replace the empty file with a new store: " +
                            std::strerror(errno));
            }
            moved = true;
        }
        CrashPoint::reach("create: moved into place");
        lock.sync();
        if (!moved) TemporaryFiles::remove(temporary);  // another process's store is there
    } catch (...) {
        TemporaryFiles::remove(temporary);
        throw;
    }
}

}  // namespace kvlens::sessions
