// Fresh paths under the build folder for the session store tests, and the
// file helpers they share (bytes of a file, removing a store and its WAL).
#pragma once

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <sstream>
#include <string>

namespace kvlens::sessions::test {

inline void removeStore(const std::string& path) {
    for (const char* suffix : {"", "-wal", "-shm", "-journal"}) ::unlink((path + suffix).c_str());
}

// A path unique to the running test (and process): `name` plus the test's name.
inline std::string storePath(const std::string& name) {
    const std::string base = KVLENS_SESSIONS_TEST_DIR;
    std::string partial;
    for (size_t at = 1; at != std::string::npos;) {
        at = base.find('/', at + 1);
        ::mkdir(base.substr(0, at).c_str(), 0755);
    }
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    const std::string test =
        info ? std::string(info->test_suite_name()) + "." + info->name() : "none";
    const std::string path = base + "/" + test + "." + std::to_string(::getpid()) + "." + name;
    removeStore(path);
    return path;
}

inline std::string fileBytes(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
}

inline void writeFile(const std::string& path, const std::string& bytes) {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out << bytes;
}

}  // namespace kvlens::sessions::test
