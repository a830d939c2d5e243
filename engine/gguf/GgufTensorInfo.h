// Where one tensor of a GGUF file lives and what it holds. `shape` is in
// ggml order: shape[0] is the fastest-varying (row length).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace kvlens {

struct GgufTensorInfo {
    std::string name;
    std::vector<int64_t> shape;  // ggml order, 1..4 dims
    uint32_t type = 0;           // GgmlType code
    uint64_t offset = 0;         // relative to the start of the data section
    uint64_t nbytes = 0;         // bytes of data, from type and shape

    int64_t numel() const {
        int64_t n = 1;
        for (int64_t d : shape) n *= d;
        return n;
    }
};

}  // namespace kvlens
