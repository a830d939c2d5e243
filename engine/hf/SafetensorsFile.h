// A safetensors weight file, memory-mapped: an 8-byte little-endian header
// length, a JSON header naming each tensor's dtype, shape and byte range in the
// data section, then the data. The header is hostile until checked: its length
// against the file, each entry's fields and types, each range inside the data
// section, its bytes equal to shape x dtype size, and no two ranges overlapping.
// Every failure throws kvlens::Error with one line naming the file (and tensor).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace kvlens {

struct SafetensorsTensor {
    std::string name;
    std::string dtype;  // as the header spells it: F32, F16, BF16, I64, F8_E4M3, ...
    std::vector<int64_t> shape;
    uint64_t begin = 0, end = 0;  // byte range in the data section

    int64_t numel() const;
};

class SafetensorsFile {
public:
    // Maps and parses `path`. Throws kvlens::Error ("<path>: <what is wrong>").
    explicit SafetensorsFile(const std::string& path);
    // Parses an in-memory image (tests and fuzzing); `name` stands for the path.
    SafetensorsFile(std::vector<uint8_t> bytes, const std::string& name);
    ~SafetensorsFile();
    SafetensorsFile(const SafetensorsFile&) = delete;
    SafetensorsFile& operator=(const SafetensorsFile&) = delete;

    const std::string& path() const { return path_; }
    uint64_t fileSize() const { return size_; }
    const std::vector<SafetensorsTensor>& tensors() const { return tensors_; }
    const SafetensorsTensor* find(const std::string& name) const;  // nullptr if absent
    const uint8_t* data(const SafetensorsTensor& t) const { return data_ + dataOffset_ + t.begin; }
    // The header's __metadata__ strings (e.g. {"format": "pt"}).
    const std::map<std::string, std::string>& metadata() const { return metadata_; }

    // Bytes per element of a safetensors dtype; 0 for a name the format does not define.
    static int64_t elementSize(const std::string& dtype);

private:
    void parse();

    std::string path_;
    std::vector<uint8_t> owned_;
    const uint8_t* data_ = nullptr;
    uint64_t size_ = 0;
    void* map_ = nullptr;
    uint64_t dataOffset_ = 0;
    std::vector<SafetensorsTensor> tensors_;
    std::map<std::string, size_t> index_;
    std::map<std::string, std::string> metadata_;
};

}  // namespace kvlens
