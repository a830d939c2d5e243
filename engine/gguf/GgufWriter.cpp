#include "engine/gguf/GgufWriter.h"

#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>

#include "core/Error.h"

namespace kvlens {
namespace {

constexpr uint64_t kAlignment = 32;
// gguf_type codes
constexpr uint32_t kUInt32 = 4, kInt32 = 5, kFloat32 = 6, kBool = 7, kString = 8, kArray = 9;

template <typename T>
void put(std::vector<uint8_t>& out, T v) {
    const size_t at = out.size();
    out.resize(at + sizeof(T));
    std::memcpy(out.data() + at, &v, sizeof(T));
}

void putString(std::vector<uint8_t>& out, const std::string& s) {
    put<uint64_t>(out, s.size());
    out.insert(out.end(), s.begin(), s.end());
}

// IEEE half, round to nearest even (inf and NaN kept).
uint16_t toHalf(float f) {
    uint32_t x;
    std::memcpy(&x, &f, 4);
    const uint32_t sign = (x >> 16) & 0x8000u, a = x & 0x7FFFFFFFu;
    if (a >= 0x7F800000u) return static_cast<uint16_t>(sign | 0x7C00u | (a > 0x7F800000u ? 0x200u : 0u));
    if (a >= 0x477FF000u) return static_cast<uint16_t>(sign | 0x7C00u);
    if (a < 0x38800000u) {  // subnormal half: units of 2^-24
        float af;
        std::memcpy(&af, &a, 4);
        return static_cast<uint16_t>(sign | static_cast<uint32_t>(std::nearbyint(af * 16777216.0f)));
    }
    const uint32_t rounded = a + 0xFFFu + ((a >> 13) & 1u);
    return static_cast<uint16_t>(sign | ((rounded - 0x38000000u) >> 13));
}

}  // namespace

void GgufWriter::key(const std::string& k, uint32_t type) {
    putString(meta_, k);
    put<uint32_t>(meta_, type);
    ++metaCount_;
}

void GgufWriter::addUInt32(const std::string& k, uint32_t v) {
    key(k, kUInt32);
    put(meta_, v);
}

void GgufWriter::addFloat32(const std::string& k, float v) {
    key(k, kFloat32);
    put(meta_, v);
}

void GgufWriter::addBool(const std::string& k, bool v) {
    key(k, kBool);
    put<uint8_t>(meta_, v ? 1 : 0);
}

void GgufWriter::addString(const std::string& k, const std::string& v) {
    key(k, kString);
    putString(meta_, v);
}

void GgufWriter::addStringArray(const std::string& k, const std::vector<std::string>& v) {
    key(k, kArray);
    put<uint32_t>(meta_, kString);
    put<uint64_t>(meta_, v.size());
    for (const std::string& s : v) putString(meta_, s);
}

void GgufWriter::addFloat32Array(const std::string& k, const std::vector<float>& v) {
    key(k, kArray);
    put<uint32_t>(meta_, kFloat32);
    put<uint64_t>(meta_, v.size());
    for (float f : v) put(meta_, f);
}

void GgufWriter::addInt32Array(const std::string& k, const std::vector<int32_t>& v) {
    key(k, kArray);
    put<uint32_t>(meta_, kInt32);
    put<uint64_t>(meta_, v.size());
    for (int32_t i : v) put(meta_, i);
}

void GgufWriter::addTensor(const std::string& name, const std::vector<int64_t>& shape, TensorType type,
                           const std::vector<float>& values) {
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    if (n != static_cast<int64_t>(values.size())) {
        throw Error("GGUF writer: tensor '" + name + "' has " + std::to_string(values.size()) +
                    " values for a shape of " + std::to_string(n));
    }
    Tensor t{name, shape, type, {}};
    if (type == F32) {
        t.data.resize(values.size() * 4);
        std::memcpy(t.data.data(), values.data(), t.data.size());
    } else {
        for (float f : values) put(t.data, toHalf(f));
    }
    tensors_.push_back(std::move(t));
}

void GgufWriter::write(const std::string& path) const {
    std::vector<uint8_t> out;
    out.insert(out.end(), {'G', 'G', 'U', 'F'});
    put<uint32_t>(out, 3);
    put<uint64_t>(out, tensors_.size());
    put<uint64_t>(out, metaCount_);
    out.insert(out.end(), meta_.begin(), meta_.end());
    auto padded = [](uint64_t n) { return (n + kAlignment - 1) / kAlignment * kAlignment; };
    uint64_t offset = 0;
    for (const Tensor& t : tensors_) {
        putString(out, t.name);
        put<uint32_t>(out, static_cast<uint32_t>(t.shape.size()));
        for (int64_t d : t.shape) put<uint64_t>(out, static_cast<uint64_t>(d));
        put<uint32_t>(out, t.type);
        put<uint64_t>(out, offset);
        offset = padded(offset + t.data.size());
    }
    out.resize(padded(out.size()), 0);
    for (const Tensor& t : tensors_) {
        out.insert(out.end(), t.data.begin(), t.data.end());
        out.resize(padded(out.size()), 0);
    }
    const std::string tmp = path + ".part";
    {
        std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
        if (!f) throw Error(path + ": cannot write (" + std::strerror(errno) + ")");
        f.write(reinterpret_cast<const char*>(out.data()), static_cast<std::streamsize>(out.size()));
        if (!f) throw Error(path + ": write failed (" + std::strerror(errno) + ")");
    }
    if (std::rename(tmp.c_str(), path.c_str()) != 0) {
        std::remove(tmp.c_str());
        throw Error(path + ": cannot write (" + std::strerror(errno) + ")");
    }
}

}  // namespace kvlens
