// Named points inside the store's multi-step file operations (a new store
// moved into place, an export renamed), where a test can kill the process to
// prove that a crash there loses nothing. SQLite's own writes are reached
// through a test VFS instead; these are the steps outside SQLite.
#pragma once

namespace kvlens::sessions {

class CrashPoint {
public:
    using Hook = void (*)(const char* point);
    // Tests only: `hook` runs at every point reached (nullptr: none, the default).
    static void setHook(Hook hook);
    static void reach(const char* point);
};

}  // namespace kvlens::sessions
