// The temporary files a store operation writes beside its target
// ("<target><tag><pid>", with SQLite's -journal/-wal/-shm): named after the
// writing process, so that files left by a killed one are found and removed
// by the next operation, while a live writer's are left alone.
#pragma once

#include <string>

namespace kvlens::sessions {

class TemporaryFiles {
public:
    // "<target><tag><this process id>".
    static std::string nameFor(const std::string& target, const std::string& tag);
    // Removes "<target><tag><pid>..." of processes that no longer run.
    static void removeStale(const std::string& target, const std::string& tag);
    // Removes "<name>" and its -journal, -wal and -shm.
    static void remove(const std::string& name);
};

}  // namespace kvlens::sessions
