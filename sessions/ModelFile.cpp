// File facts and SHA-256 of model files.
#include "sessions/ModelFile.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <vector>

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "core/Error.h"
#include "sessions/Sha256.h"

namespace kvlens::sessions {

ModelFile::Stat ModelFile::stat(const std::string& path) {
    Stat s;
    struct stat st;
    if (::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return s;
    s.exists = true;
    s.sizeBytes = int64_t(st.st_size);
    s.mtimeNs = int64_t(st.st_mtim.tv_sec) * 1000000000 + int64_t(st.st_mtim.tv_nsec);
    return s;
}

bool ModelFile::isFolder(const std::string& path) {
    struct stat st;
    return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

std::vector<std::string> ModelFile::folderFiles(const std::string& dir) {
    const std::string index = dir + "/model.safetensors.index.json";
    std::vector<std::string> names;
    if (stat(index).exists) {
        std::ifstream in(index);
        nlohmann::json j;
        try {
            j = nlohmann::json::parse(in);
        } catch (const nlohmann::json::exception&) {
            throw Error(index + ": not valid JSON");
        }
        if (!j.is_object() || !j.contains("weight_map") || !j["weight_map"].is_object()) {
            throw Error(index + ": field 'weight_map' is missing or not an object");
        }
        for (const auto& [tensor, file] : j["weight_map"].items()) {
            if (!file.is_string()) throw Error(index + ": weight_map entry '" + tensor + "' is not a file name");
            const std::string name = file.get<std::string>();
            if (name.empty() || name.find('/') != std::string::npos || name == "." || name == "..") {
                throw Error(index + ": weight_map names a file outside the folder");
            }
            if (std::find(names.begin(), names.end(), name) == names.end()) names.push_back(name);
        }
        std::sort(names.begin(), names.end());
    } else if (stat(dir + "/model.safetensors").exists) {
        names.push_back("model.safetensors");
    }
    if (names.empty()) throw Error(dir + ": no weights (model.safetensors or model.safetensors.index.json) to hash");
    // What else decides the model's numbers: its shape, RoPE, EOS ids and tokenizer.
    for (const char* extra : {"config.json", "generation_config.json", "tokenizer.json", "tokenizer.model",
                              "tokenizer_config.json", "chat_template.jinja"}) {
        if (stat(dir + "/" + extra).exists) names.push_back(extra);
    }
    return names;
}

std::string ModelFile::folderSha256(const std::vector<FolderFileRecord>& files) {
    std::string lines;
    for (const FolderFileRecord& f : files) lines += f.sha256 + "  " + f.name + "\n";
    return Sha256::hex(lines);
}

std::string ModelFile::absolutePath(const std::string& path) {
    char resolved[PATH_MAX];
    if (::realpath(path.c_str(), resolved)) return resolved;
    if (!path.empty() && path[0] == '/') return path;
    char cwd[PATH_MAX];
    return ::getcwd(cwd, sizeof cwd) ? std::string(cwd) + "/" + path : path;
}

std::string ModelFile::sha256(const std::string& path,
                              const std::function<void(double)>& progress) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        throw Error(path + ": cannot read the model file to hash it: " + std::strerror(errno));
    struct stat st;
    const double total = ::fstat(fd, &st) == 0 && st.st_size > 0 ? double(st.st_size) : 1.0;
    std::vector<char> chunk(4 << 20);
    Sha256 hash;
    double done = 0;
    for (;;) {
        const ssize_t n = ::read(fd, chunk.data(), chunk.size());
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) {
            const std::string why = std::strerror(errno);
            ::close(fd);
            throw Error(path + ": cannot read the model file to hash it: " + why);
        }
        if (n == 0) break;
        hash.update(chunk.data(), size_t(n));
        done += double(n);
        if (progress) progress(done / total);
    }
    ::close(fd);
    return hash.finishHex();
}

ModelFile::Check ModelFile::check(const ModelRecord& model, bool rehash,
                                  const std::function<void(double)>& progress) {
    Check c;
    if (!model.isFile) {
        c.status = Status::NotAFile;
        return c;
    }
    if (!model.files.empty()) {
        // A folder: each of its files against its record.
        for (const FolderFileRecord& f : model.files) {
            const std::string path = model.path + "/" + f.name;
            const Stat now = stat(path);
            if (!now.exists) {
                c.status = Status::Missing;
                c.message = "model folder " + model.path + ": file " + f.name + " is missing";
                return c;
            }
            if (now.sizeBytes != f.sizeBytes) {
                c.status = Status::SizeChanged;
                c.message = "model folder " + model.path + " changed: " + f.name + " has " +
                            std::to_string(now.sizeBytes) + " bytes, saved with " + std::to_string(f.sizeBytes);
                return c;
            }
            if (rehash || now.mtimeNs != f.mtimeNs) {
                const std::string digest = sha256(path, progress);
                if (digest != f.sha256) {
                    c.status = Status::ContentChanged;
                    c.message = "model folder " + model.path + " changed: " + f.name + " SHA-256 " +
                                digest.substr(0, 12) + "..., saved with " + f.sha256.substr(0, 12) + "...";
                    return c;
                }
            }
        }
        return c;
    }
    const Stat now = stat(model.path);
    if (!now.exists) {
        c.status = Status::Missing;
        c.message = "model file " + model.path + " is missing";
        return c;
    }
    if (now.sizeBytes != model.sizeBytes) {
        c.status = Status::SizeChanged;
        c.message = "model file " + model.path + " changed: " + std::to_string(now.sizeBytes) +
                    " bytes, saved with " + std::to_string(model.sizeBytes);
        return c;
    }
    if (rehash || now.mtimeNs != model.mtimeNs) {
        const std::string digest = sha256(model.path, progress);
        if (digest != model.sha256) {
            c.status = Status::ContentChanged;
            c.message = "model file " + model.path + " changed: SHA-256 " + digest.substr(0, 12) +
                        "..., saved with " + model.sha256.substr(0, 12) + "...";
        }
    }
    return c;
}

}  // namespace kvlens::sessions
