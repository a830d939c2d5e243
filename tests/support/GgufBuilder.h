// Builds GGUF images in memory or on disk for tests: valid models (tiny Llamas,
// every metadata type) and files that are wrong in exactly the way a test asks.
//
// Why it writes whatever it is told: reader tests need inconsistent files (a
// tensor whose bytes disagree with its shape, an unknown type code, a bad
// version or count, an unaligned offset), so nothing here validates. Metadata
// and tensors are written in the order they were added; tensor data is laid
// out back to back, each tensor padded to the alignment, unless a test pins an
// offset. Truncation is just `bytes.resize(n)` on what build() returns.
//
//   GgufBuilder b;
//   b.addString("general.architecture", "llama").addUInt32("llama.block_count", 1);
//   b.addTensorF32("token_embd.weight", {4, 3}, values);  // ggml order: row length first
//   b.writeFile(path);
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "engine/gguf/GgufValue.h"

namespace kvlens::test {

// float -> IEEE half / bfloat16, rounding to nearest even (NaN stays NaN).
uint16_t floatToHalf(float f);
uint16_t floatToBf16(float f);

class GgufBuilder {
public:
    // One tensor as it will be written; fields may be edited through tensor(i)
    // after adding, e.g. to give it an offset the layout would not.
    struct Tensor {
        std::string name;
        uint32_t type = 0;               // ggml type code, written verbatim
        std::vector<int64_t> shape;      // ggml order, written verbatim (any count)
        std::vector<uint8_t> data;       // written verbatim, whatever the shape says
        std::optional<uint64_t> offset;  // data-section offset to write instead of the
                                         // layout's (data past 1 GiB is not written)
    };

    // Header. The defaults make a valid v3 file; the setters write anything,
    // so tests can produce v1, big-endian-looking versions or absurd counts.
    GgufBuilder& setVersion(uint32_t version);
    GgufBuilder& setMagic(const std::string& fourBytes);
    GgufBuilder& overrideTensorCount(uint64_t n);
    GgufBuilder& overrideKvCount(uint64_t n);
    // Pads the header and tensor data to `alignment` and, when `writeKey`, adds
    // `general.alignment` (uint32) at the end of the metadata. A test that wants a
    // bad key value adds it itself with addUInt32 and keeps the layout's padding.
    GgufBuilder& setAlignment(uint64_t alignment, bool writeKey = true);

    // Metadata, one call per GGUF value type.
    GgufBuilder& addUInt8(const std::string& key, uint8_t v);
    GgufBuilder& addInt8(const std::string& key, int8_t v);
    GgufBuilder& addUInt16(const std::string& key, uint16_t v);
    GgufBuilder& addInt16(const std::string& key, int16_t v);
    GgufBuilder& addUInt32(const std::string& key, uint32_t v);
    GgufBuilder& addInt32(const std::string& key, int32_t v);
    GgufBuilder& addUInt64(const std::string& key, uint64_t v);
    GgufBuilder& addInt64(const std::string& key, int64_t v);
    GgufBuilder& addFloat32(const std::string& key, float v);
    GgufBuilder& addFloat64(const std::string& key, double v);
    GgufBuilder& addBool(const std::string& key, bool v);
    GgufBuilder& addString(const std::string& key, const std::string& v);
    // The arrays a tokenizer needs; any other (nested ones included) via addValue.
    GgufBuilder& addStringArray(const std::string& key, const std::vector<std::string>& v);
    GgufBuilder& addFloat32Array(const std::string& key, const std::vector<float>& v);
    GgufBuilder& addInt32Array(const std::string& key, const std::vector<int32_t>& v);
    GgufBuilder& addUInt32Array(const std::string& key, const std::vector<uint32_t>& v);
    // Any value, serialised from its `type` (and `arrayType`/`array` for arrays).
    GgufBuilder& addValue(const std::string& key, const GgufValue& v);
    // A key with any type code followed by raw payload bytes (unknown types, lies).
    GgufBuilder& addRawMetadata(const std::string& key, uint32_t typeCode,
                                const std::vector<uint8_t>& payload);

    // Tensors. Returns the index for tensor(i).
    size_t addTensor(const std::string& name, uint32_t type, const std::vector<int64_t>& shape,
                     const std::vector<uint8_t>& data);
    size_t addTensorF32(const std::string& name, const std::vector<int64_t>& shape,
                        const std::vector<float>& values);
    size_t addTensorF16(const std::string& name, const std::vector<int64_t>& shape,
                        const std::vector<float>& values);
    size_t addTensorBF16(const std::string& name, const std::vector<int64_t>& shape,
                         const std::vector<float>& values);
    Tensor& tensor(size_t index) { return tensors_.at(index); }
    size_t tensorCount() const { return tensors_.size(); }
    Tensor* findTensor(const std::string& name);  // first with that name, or nullptr

    std::vector<uint8_t> build() const;
    // Writes build() to `path`; throws std::runtime_error when it cannot.
    void writeFile(const std::string& path) const;

private:
    GgufBuilder& addEncoded(const std::string& key, uint32_t typeCode,
                            const std::vector<uint8_t>& payload);

    uint32_t version_ = 3;
    std::string magic_ = "GGUF";
    std::optional<uint64_t> tensorCount_;
    std::optional<uint64_t> kvCount_;
    uint64_t alignment_ = 32;
    bool writeAlignmentKey_ = false;
    std::vector<std::vector<uint8_t>> metadata_;  // encoded key/type/value entries
    std::vector<Tensor> tensors_;
};

}  // namespace kvlens::test
