// Naming and sweeping the temporaries of store creation and export.
#include "sessions/TemporaryFiles.h"

#include <dirent.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <vector>

#include "sessions/StoreFile.h"

namespace kvlens::sessions {

std::string TemporaryFiles::nameFor(const std::string& target, const std::string& tag) {
    return target + tag + std::to_string(::getpid());
}

void TemporaryFiles::remove(const std::string& name) {
    for (const char* suffix : {"", "-journal", "-wal", "-shm"}) ::unlink((name + suffix).c_str());
}

void TemporaryFiles::removeStale(const std::string& target, const std::string& tag) {
    const std::string dir = StoreFile::directoryOf(target);
    const size_t slash = target.find_last_of('/');
    const std::string prefix =
        (slash == std::string::npos ? target : target.substr(slash + 1)) + tag;
    DIR* d = ::opendir(dir.c_str());
    if (d == nullptr) return;
    std::vector<std::string> stale;
    while (const dirent* e = ::readdir(d)) {
        const std::string name = e->d_name;
        if (name.compare(0, prefix.size(), prefix) != 0) continue;
        const char* digits = name.c_str() + prefix.size();
        char* end = nullptr;
        const long pid = std::strtol(digits, &end, 10);
        if (end == digits || pid <= 0) continue;
        if (pid == long(::getpid())) continue;
        if (::kill(pid_t(pid), 0) == 0 || errno != ESRCH) continue;  // alive, or not ours to judge
        stale.push_back(dir + "/" + name);
    }
    ::closedir(d);
    for (const std::string& path : stale) ::unlink(path.c_str());
}

}  // namespace kvlens::sessions
