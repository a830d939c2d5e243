// Writes a GGUF v3 file: metadata and F32/F16 tensors, laid out back to back at
// 32-byte alignment, as the reader (GgufFile) and llama.cpp expect. The file is
// written beside its path and renamed into place, so an interrupted write never
// leaves a truncated model under the name.
//
//   GgufWriter w;
//   w.addString("general.architecture", "llama");
//   w.addTensor("token_embd.weight", {E, V}, GgufWriter::F32, floats);  // ggml order
//   w.write(path);
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace kvlens {

class GgufWriter {
public:
    enum TensorType : uint32_t { F32 = 0, F16 = 1 };

    void addUInt32(const std::string& key, uint32_t v);
    void addFloat32(const std::string& key, float v);
    void addBool(const std::string& key, bool v);
    void addString(const std::string& key, const std::string& v);
    void addStringArray(const std::string& key, const std::vector<std::string>& v);
    void addFloat32Array(const std::string& key, const std::vector<float>& v);
    void addInt32Array(const std::string& key, const std::vector<int32_t>& v);

    // `shape` in ggml order (row length first); `values` row-major, shape's product
    // of them. F16 rounds to nearest even.
    void addTensor(const std::string& name, const std::vector<int64_t>& shape, TensorType type,
                   const std::vector<float>& values);

    // Throws kvlens::Error naming the path when it cannot be written.
    void write(const std::string& path) const;

private:
    struct Tensor {
        std::string name;
        std::vector<int64_t> shape;
        uint32_t type;
        std::vector<uint8_t> data;
    };
    void key(const std::string& k, uint32_t type);

    std::vector<uint8_t> meta_;
    uint64_t metaCount_ = 0;
    std::vector<Tensor> tensors_;
};

}  // namespace kvlens
