// A SQLite VFS for crash tests: it counts every step that changes a file
// (write, truncate, sync, delete) and every sessions::CrashPoint the store
// reaches, and SIGKILLs the process just before step number `killAt`, so a
// test can kill a writer at each step of an operation in turn, without timing.
// Installed as the default VFS in a forked child only.
#pragma once

#include <signal.h>
#include <sqlite3.h>

#include <cstdlib>

#include "sessions/CrashPoint.h"

namespace kvlens::sessions::test {

class CrashVfs {
public:
    // Makes this process die at step `killAt` (1-based) of what follows.
    static void install(long killAt) {
        killAt_ = killAt;
        steps_ = 0;
        if (!installed_) {
            sqlite3_initialize();
            real_ = sqlite3_vfs_find(nullptr);
            vfs_ = *real_;
            vfs_.zName = "kvlens-crash";
            vfs_.szOsFile = int(sizeof(File)) + real_->szOsFile;
            vfs_.xOpen = open;
            vfs_.xDelete = remove;
            vfs_.pNext = nullptr;
            sqlite3_vfs_register(&vfs_, 1);
            io_ = {};
            io_.iVersion = 2;  // with shared memory (WAL), without mmap
            io_.xClose = [](sqlite3_file* f) {
                const int rc = real(f)->pMethods->xClose(real(f));
                f->pMethods = nullptr;
                return rc;
            };
            io_.xRead = [](sqlite3_file* f, void* b, int n, sqlite3_int64 o) {
                return real(f)->pMethods->xRead(real(f), b, n, o);
            };
            io_.xWrite = [](sqlite3_file* f, const void* b, int n, sqlite3_int64 o) {
                step();
                return real(f)->pMethods->xWrite(real(f), b, n, o);
            };
            io_.xTruncate = [](sqlite3_file* f, sqlite3_int64 size) {
                step();
                return real(f)->pMethods->xTruncate(real(f), size);
            };
            io_.xSync = [](sqlite3_file* f, int flags) {
                step();
                return real(f)->pMethods->xSync(real(f), flags);
            };
            io_.xFileSize = [](sqlite3_file* f, sqlite3_int64* size) {
                return real(f)->pMethods->xFileSize(real(f), size);
            };
            io_.xLock = [](sqlite3_file* f, int l) { return real(f)->pMethods->xLock(real(f), l); };
            io_.xUnlock = [](sqlite3_file* f, int l) {
                return real(f)->pMethods->xUnlock(real(f), l);
            };
            io_.xCheckReservedLock = [](sqlite3_file* f, int* out) {
                return real(f)->pMethods->xCheckReservedLock(real(f), out);
            };
            io_.xFileControl = [](sqlite3_file* f, int op, void* arg) {
                return real(f)->pMethods->xFileControl(real(f), op, arg);
            };
            io_.xSectorSize = [](sqlite3_file* f) {
                return real(f)->pMethods->xSectorSize(real(f));
            };
            io_.xDeviceCharacteristics = [](sqlite3_file* f) {
                return real(f)->pMethods->xDeviceCharacteristics(real(f));
            };
            io_.xShmMap = [](sqlite3_file* f, int page, int size, int extend, void volatile** p) {
                return real(f)->pMethods->xShmMap(real(f), page, size, extend, p);
            };
            io_.xShmLock = [](sqlite3_file* f, int offset, int n, int flags) {
                return real(f)->pMethods->xShmLock(real(f), offset, n, flags);
            };
            io_.xShmBarrier = [](sqlite3_file* f) { real(f)->pMethods->xShmBarrier(real(f)); };
            io_.xShmUnmap = [](sqlite3_file* f, int del) {
                return real(f)->pMethods->xShmUnmap(real(f), del);
            };
            CrashPoint::setHook([](const char*) { step(); });
            installed_ = true;
        }
    }
    static long steps() { return steps_; }

private:
    struct File {
        sqlite3_file base;
    };
    static sqlite3_file* real(sqlite3_file* f) {
        return reinterpret_cast<sqlite3_file*>(reinterpret_cast<File*>(f) + 1);
    }
    static void step() {
        if (++steps_ == killAt_) ::raise(SIGKILL);
    }
    static int open(sqlite3_vfs*, const char* name, sqlite3_file* f, int flags, int* outFlags) {
        sqlite3_file* r = real(f);
        const int rc = real_->xOpen(real_, name, r, flags, outFlags);
        f->pMethods = r->pMethods ? &io_ : nullptr;
        return rc;
    }
    static int remove(sqlite3_vfs*, const char* name, int syncDir) {
        step();
        return real_->xDelete(real_, name, syncDir);
    }

    static inline sqlite3_vfs* real_ = nullptr;
    static inline sqlite3_vfs vfs_{};
    static inline sqlite3_io_methods io_{};
    static inline bool installed_ = false;
    static inline long killAt_ = 0;
    static inline long steps_ = 0;
};

}  // namespace kvlens::sessions::test
