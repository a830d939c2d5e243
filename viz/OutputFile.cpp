// Whole-file output with errors that name the file.
#include "viz/OutputFile.h"

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "core/Error.h"

namespace kvlens::viz {

void writeOutputFile(const std::string& path, const void* data, size_t n) {
    std::FILE* f = std::fopen(path.c_str(), "wb");
    if (!f) throw Error(path + ": cannot write: " + std::strerror(errno));
    size_t written = n ? std::fwrite(data, 1, n, f) : 0;
    int writeErr = written == n ? 0 : errno;
    if (std::fclose(f) != 0 && writeErr == 0) writeErr = errno ? errno : EIO;
    if (writeErr != 0) throw Error(path + ": cannot write: " + std::strerror(writeErr));
}

void writeOutputFile(const std::string& path, const std::string& content) {
    writeOutputFile(path, content.data(), content.size());
}

std::string csvPathBeside(const std::string& path) {
    size_t slash = path.find_last_of('/');
    size_t dot = path.find_last_of('.');
    if (dot == std::string::npos || (slash != std::string::npos && dot < slash) ||
        dot == (slash == std::string::npos ? 0 : slash + 1)) {
        return path + ".csv";
    }
    return path.substr(0, dot) + ".csv";
}

}  // namespace kvlens::viz
