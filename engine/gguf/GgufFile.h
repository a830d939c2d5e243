// A GGUF model file (versions 2 and 3), memory-mapped: metadata, tensor table,
// and tensor data. Every malformed input throws kvlens::Error naming the file
// and what is wrong; nothing is trusted before it is bounds-checked.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "engine/gguf/GgufTensorInfo.h"
#include "engine/gguf/GgufValue.h"

namespace kvlens {

class GgufFile {
public:
    // Maps and parses `path`. Throws kvlens::Error ("<path>: <what is wrong>").
    explicit GgufFile(const std::string& path);
    // Parses an in-memory image (for tests and fuzzing); `name` stands for the path in messages.
    GgufFile(std::vector<uint8_t> bytes, const std::string& name);
    ~GgufFile();
    GgufFile(const GgufFile&) = delete;
    GgufFile& operator=(const GgufFile&) = delete;

    const std::string& path() const { return path_; }
    uint32_t version() const { return version_; }
    uint64_t alignment() const { return alignment_; }
    uint64_t fileSize() const { return size_; }

    // Metadata in file order.
    const std::vector<std::pair<std::string, GgufValue>>& metadata() const { return metadata_; }
    const GgufValue* find(const std::string& key) const;  // nullptr if absent
    bool has(const std::string& key) const { return find(key) != nullptr; }

    // Typed getters; throw kvlens::Error naming the file and key when the key is
    // missing or holds another type.
    std::string getString(const std::string& key) const;
    uint64_t getUInt(const std::string& key) const;  // any non-negative integer type
    double getFloat(const std::string& key) const;   // float or integer types
    bool getBool(const std::string& key) const;
    uint64_t getUIntOr(const std::string& key, uint64_t fallback) const;
    double getFloatOr(const std::string& key, double fallback) const;
    bool getBoolOr(const std::string& key, bool fallback) const;
    std::string getStringOr(const std::string& key, const std::string& fallback) const;
    // Arrays: element strings / numbers; throw when missing or of another element type.
    std::vector<std::string> getStringArray(const std::string& key) const;
    std::vector<double> getNumberArray(const std::string& key) const;

    const std::vector<GgufTensorInfo>& tensors() const { return tensors_; }
    const GgufTensorInfo* findTensor(const std::string& name) const;  // nullptr if absent
    const uint8_t* tensorData(const GgufTensorInfo& t) const;

    // Replaces the file's mapping with a copy in anonymous memory that the kernel may
    // back with transparent huge pages (madvise MADV_HUGEPAGE): decode streams every
    // weight once per token, and with 4 KB pages it misses the TLB and loses the
    // hardware prefetcher at every page (measured: decode 10-20% faster, the RSS the
    // same as a fully touched mapping). Call it before any tensorData() pointer is
    // taken. `progress` hears the fraction read. Throws kvlens::Error naming the file.
    void loadIntoMemory(const std::function<void(double)>& progress = {});

    // All elements of `t` as float, in ggml order. Throws kvlens::Error naming the
    // tensor and its type when the type is not supported.
    std::vector<float> dequantize(const GgufTensorInfo& t) const;

private:
    void parse();

    std::string path_;
    std::vector<uint8_t> owned_;  // in-memory image, when not mapped
    const uint8_t* data_ = nullptr;
    uint64_t size_ = 0;
    void* map_ = nullptr;
    size_t mapBytes_ = 0;  // of map_: the file's size, or the copy's
    uint32_t version_ = 0;
    uint64_t alignment_ = 32;
    uint64_t dataOffset_ = 0;
    std::vector<std::pair<std::string, GgufValue>> metadata_;
    std::map<std::string, size_t> metadataIndex_;
    std::vector<GgufTensorInfo> tensors_;
    std::map<std::string, size_t> tensorIndex_;
};

}  // namespace kvlens
