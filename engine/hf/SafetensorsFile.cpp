// The safetensors reader: bounds before trust, as for GGUF.
#include "engine/hf/SafetensorsFile.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <limits>
#include <nlohmann/json.hpp>

#include "core/Error.h"
#include "engine/hf/Quoted.h"

namespace kvlens {
namespace {

// The format's own limit on the header (safetensors' MAX_HEADER_SIZE).
constexpr uint64_t kMaxHeaderBytes = 100'000'000;
constexpr size_t kMaxDims = 8;

}  // namespace

int64_t SafetensorsTensor::numel() const {
    int64_t n = 1;
    for (int64_t d : shape) n *= d;  // checked against overflow when parsed
    return n;
}

int64_t SafetensorsFile::elementSize(const std::string& dtype) {
    static const std::map<std::string, int64_t> sizes = {
        {"F64", 8}, {"F32", 4},  {"F16", 2},  {"BF16", 2},    {"I64", 8},     {"I32", 4},    {"I16", 2},
        {"I8", 1},  {"U64", 8},  {"U32", 4},  {"U16", 2},     {"U8", 1},      {"BOOL", 1},   {"F8_E4M3", 1},
        {"F8_E5M2", 1}, {"F8_E8M0", 1}};
    const auto it = sizes.find(dtype);
    return it == sizes.end() ? 0 : it->second;
}

SafetensorsFile::SafetensorsFile(const std::string& path) : path_(path) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) throw Error(path + ": cannot open: " + std::strerror(errno));
    struct stat st;
    if (::fstat(fd, &st) != 0) {
        const int err = errno;
        ::close(fd);
        throw Error(path + ": cannot open: " + std::strerror(err));
    }
    if (!S_ISREG(st.st_mode)) {
        ::close(fd);
        throw Error(path + ": cannot open: " +
                    (S_ISDIR(st.st_mode) ? std::string(std::strerror(EISDIR)) : std::string("not a regular file")));
    }
    size_ = static_cast<uint64_t>(st.st_size);
    if (size_ < 8) {
        ::close(fd);
        throw Error(path + ": " + std::to_string(size_) + " bytes, too short for a safetensors file (8-byte header length)");
    }
    void* m = ::mmap(nullptr, static_cast<size_t>(size_), PROT_READ, MAP_PRIVATE, fd, 0);
    const int err = errno;
    ::close(fd);
    if (m == MAP_FAILED) throw Error(path + ": cannot map: " + std::strerror(err));
    map_ = m;
    data_ = static_cast<const uint8_t*>(m);
    try {
        parse();
    } catch (...) {
        ::munmap(map_, static_cast<size_t>(size_));
        map_ = nullptr;
        throw;
    }
}

SafetensorsFile::SafetensorsFile(std::vector<uint8_t> bytes, const std::string& name)
    : path_(name), owned_(std::move(bytes)) {
    data_ = owned_.data();
    size_ = owned_.size();
    if (size_ < 8) {
        throw Error(path_ + ": " + std::to_string(size_) + " bytes, too short for a safetensors file (8-byte header length)");
    }
    parse();
}

SafetensorsFile::~SafetensorsFile() {
    if (map_) ::munmap(map_, static_cast<size_t>(size_));
}

const SafetensorsTensor* SafetensorsFile::find(const std::string& name) const {
    const auto it = index_.find(name);
    return it == index_.end() ? nullptr : &tensors_[it->second];
}

void SafetensorsFile::parse() {
    auto fail = [this](const std::string& what) { throw Error(path_ + ": " + what); };
    uint64_t headerBytes = 0;
    for (int i = 7; i >= 0; --i) headerBytes = (headerBytes << 8) | data_[i];
    if (headerBytes > size_ - 8) {
        fail("the header length " + std::to_string(headerBytes) + " runs past the end of the file (" +
             std::to_string(size_) + " bytes); truncated, or not a safetensors file");
    }
    if (headerBytes > kMaxHeaderBytes) fail("the header length " + std::to_string(headerBytes) + " exceeds 100 MB");
    if (headerBytes < 2 || data_[8] != '{') fail("the header is not a JSON object; not a safetensors file");
    dataOffset_ = 8 + headerBytes;
    const uint64_t dataBytes = size_ - dataOffset_;

    nlohmann::json header;
    try {
        header = nlohmann::json::parse(data_ + 8, data_ + 8 + headerBytes);
    } catch (const nlohmann::json::exception& e) {
        // e.what() names the byte; its prefix ("[json.exception.parse_error.101]") is noise.
        std::string what = e.what();
        if (const size_t p = what.find("] "); p != std::string::npos) what = what.substr(p + 2);
        fail("the header is not valid JSON: " + what);
    }
    if (!header.is_object()) fail("the header is not a JSON object");

    for (auto it = header.begin(); it != header.end(); ++it) {
        const std::string& name = it.key();
        const nlohmann::json& entry = it.value();
        if (name == "__metadata__") {
            if (!entry.is_object()) fail("__metadata__ is not an object of strings");
            for (auto m = entry.begin(); m != entry.end(); ++m) {
                if (!m.value().is_string()) fail("__metadata__ " + quotedText(m.key()) + " is not a string");
                metadata_[m.key()] = m.value().get<std::string>();
            }
            continue;
        }
        const std::string what = "tensor " + quotedText(name);
        if (!entry.is_object()) fail(what + " is not an object with dtype, shape and data_offsets");
        const auto dtype = entry.find("dtype");
        const auto shape = entry.find("shape");
        const auto offsets = entry.find("data_offsets");
        if (dtype == entry.end() || !dtype->is_string()) fail(what + " has no dtype string");
        if (shape == entry.end() || !shape->is_array()) fail(what + " has no shape array");
        if (offsets == entry.end() || !offsets->is_array() || offsets->size() != 2) {
            fail(what + " has no data_offsets [begin, end]");
        }
        SafetensorsTensor t;
        t.name = name;
        t.dtype = dtype->get<std::string>();
        const int64_t elementBytes = elementSize(t.dtype);
        if (elementBytes == 0) fail(what + " has unknown dtype " + quotedText(t.dtype));
        if (shape->size() > kMaxDims) fail(what + " has " + std::to_string(shape->size()) + " dimensions");
        uint64_t numel = 1;
        for (const nlohmann::json& d : *shape) {
            if (!d.is_number_unsigned()) fail(what + " has a shape entry that is not a non-negative integer");
            const uint64_t v = d.get<uint64_t>();
            if (v != 0 && numel > (uint64_t(1) << 62) / v) fail(what + " has a shape whose size overflows");
            numel *= v;
            t.shape.push_back(static_cast<int64_t>(v));
        }
        for (const nlohmann::json& o : *offsets) {
            if (!o.is_number_unsigned()) fail(what + " has data_offsets that are not non-negative integers");
        }
        t.begin = (*offsets)[0].get<uint64_t>();
        t.end = (*offsets)[1].get<uint64_t>();
        if (t.begin > t.end || t.end > dataBytes) {
            fail(what + " has data_offsets [" + std::to_string(t.begin) + ", " + std::to_string(t.end) +
                 "] outside the data section of " + std::to_string(dataBytes) + " bytes");
        }
        const uint64_t bytes = t.end - t.begin, unit = static_cast<uint64_t>(elementBytes);
        if (bytes % unit != 0 || bytes / unit != numel) {
            // Compared by division: numel x element size may not fit in 64 bits.
            fail(what + " holds " + std::to_string(bytes) + " bytes but its shape and dtype " + t.dtype + " need " +
                 (numel <= UINT64_MAX / unit ? std::to_string(numel * unit) : std::string("more than 2^64")));
        }
        index_[name] = tensors_.size();
        tensors_.push_back(std::move(t));
    }
    // Ranges must not overlap (the format lays tensors back to back).
    std::vector<const SafetensorsTensor*> byStart;
    for (const SafetensorsTensor& t : tensors_) byStart.push_back(&t);
    std::sort(byStart.begin(), byStart.end(), [](const SafetensorsTensor* a, const SafetensorsTensor* b) {
        return a->begin != b->begin ? a->begin < b->begin : a->end < b->end;
    });
    for (size_t i = 1; i < byStart.size(); ++i) {
        if (byStart[i]->begin < byStart[i - 1]->end) {
            fail("tensors " + quotedText(byStart[i - 1]->name) + " and " + quotedText(byStart[i]->name) + " overlap in the data section");
        }
    }
}

}  // namespace kvlens
