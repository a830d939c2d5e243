#include "support/GgufBuilder.h"

#include <cstring>
#include <fstream>
#include <stdexcept>

namespace kvlens::test {

namespace {

template <typename T>
void put(std::vector<uint8_t>& out, T v) {
    uint8_t b[sizeof(T)];
    std::memcpy(b, &v, sizeof(T));  // little-endian host assumed, as GGUF is
    out.insert(out.end(), b, b + sizeof(T));
}

void putString(std::vector<uint8_t>& out, const std::string& s) {
    put<uint64_t>(out, s.size());
    out.insert(out.end(), s.begin(), s.end());
}

void putValue(std::vector<uint8_t>& out, GgufValueType type, const GgufValue& v) {
    switch (type) {
        case GgufValueType::UInt8:
            put<uint8_t>(out, static_cast<uint8_t>(v.i));
            break;
        case GgufValueType::Int8:
            put<int8_t>(out, static_cast<int8_t>(v.i));
            break;
        case GgufValueType::UInt16:
            put<uint16_t>(out, static_cast<uint16_t>(v.i));
            break;
        case GgufValueType::Int16:
            put<int16_t>(out, static_cast<int16_t>(v.i));
            break;
        case GgufValueType::UInt32:
            put<uint32_t>(out, static_cast<uint32_t>(v.i));
            break;
        case GgufValueType::Int32:
            put<int32_t>(out, static_cast<int32_t>(v.i));
            break;
        case GgufValueType::UInt64:
            put<uint64_t>(out, static_cast<uint64_t>(v.i));
            break;
        case GgufValueType::Int64:
            put<int64_t>(out, v.i);
            break;
        case GgufValueType::Float32:
            put<float>(out, static_cast<float>(v.f));
            break;
        case GgufValueType::Float64:
            put<double>(out, v.f);
            break;
        case GgufValueType::Bool:
            put<uint8_t>(out, v.i ? 1 : 0);
            break;
        case GgufValueType::String:
            putString(out, v.s);
            break;
        case GgufValueType::Array:
            put<uint32_t>(out, static_cast<uint32_t>(v.arrayType));
            put<uint64_t>(out, v.array.size());
            for (const GgufValue& e : v.array) putValue(out, v.arrayType, e);
            break;
    }
}

// Data of a tensor pinned further out than this is not written (tests pin such
// offsets to check that the reader refuses them, not to build gigabyte files).
constexpr uint64_t kMaxPinnedOffset = uint64_t(1) << 30;

uint64_t alignUp(uint64_t v, uint64_t a) {
    if (a == 0) return v;
    const uint64_t rem = v % a;
    return rem ? v + (a - rem) : v;
}

std::vector<uint8_t> halfBytes(const std::vector<float>& values, uint16_t (*conv)(float)) {
    std::vector<uint8_t> out;
    out.reserve(values.size() * 2);
    for (float f : values) put<uint16_t>(out, conv(f));
    return out;
}

}  // namespace

uint16_t floatToHalf(float f) {
    uint32_t x;
    std::memcpy(&x, &f, 4);
    const uint16_t sign = static_cast<uint16_t>((x >> 16) & 0x8000u);
    const uint32_t absx = x & 0x7FFFFFFFu;
    if (absx >= 0x7F800000u) {  // inf or NaN
        return static_cast<uint16_t>(sign | 0x7C00u | (absx > 0x7F800000u ? 0x200u : 0u));
    }
    if (absx >= 0x477FF000u) return static_cast<uint16_t>(sign | 0x7C00u);  // rounds to inf
    if (absx < 0x38800000u) {  // below the smallest normal half: subnormal or zero
        // Value in units of 2^-24, rounded to nearest even.
        float a;
        std::memcpy(&a, &absx, 4);
        const float scaled = a * 16777216.0f;  // exact: power-of-two scaling
        uint32_t q = static_cast<uint32_t>(scaled);
        const float frac = scaled - static_cast<float>(q);
        if (frac > 0.5f || (frac == 0.5f && (q & 1u))) ++q;
        return static_cast<uint16_t>(sign | q);  // q == 0x400 becomes the smallest normal
    }
    const uint32_t mant = absx & 0x7FFFFFu;
    uint32_t h = ((absx >> 23) - 112u) << 10 | (mant >> 13);
    const uint32_t rest = mant & 0x1FFFu;
    if (rest > 0x1000u || (rest == 0x1000u && (h & 1u))) ++h;  // may carry into the exponent
    return static_cast<uint16_t>(sign | h);
}

uint16_t floatToBf16(float f) {
    uint32_t x;
    std::memcpy(&x, &f, 4);
    if ((x & 0x7FFFFFFFu) > 0x7F800000u) return static_cast<uint16_t>((x >> 16) | 0x40u);
    const uint32_t rounding = 0x7FFFu + ((x >> 16) & 1u);
    return static_cast<uint16_t>((x + rounding) >> 16);
}

GgufBuilder& GgufBuilder::setVersion(uint32_t version) {
    version_ = version;
    return *this;
}

GgufBuilder& GgufBuilder::setMagic(const std::string& fourBytes) {
    magic_ = fourBytes;
    return *this;
}

GgufBuilder& GgufBuilder::overrideTensorCount(uint64_t n) {
    tensorCount_ = n;
    return *this;
}

GgufBuilder& GgufBuilder::overrideKvCount(uint64_t n) {
    kvCount_ = n;
    return *this;
}

GgufBuilder& GgufBuilder::setAlignment(uint64_t alignment, bool writeKey) {
    alignment_ = alignment;
    writeAlignmentKey_ = writeKey;
    return *this;
}

GgufBuilder& GgufBuilder::addEncoded(const std::string& key, uint32_t typeCode,
                                     const std::vector<uint8_t>& payload) {
    std::vector<uint8_t> e;
    putString(e, key);
    put<uint32_t>(e, typeCode);
    e.insert(e.end(), payload.begin(), payload.end());
    metadata_.push_back(std::move(e));
    return *this;
}

GgufBuilder& GgufBuilder::addValue(const std::string& key, const GgufValue& v) {
    std::vector<uint8_t> payload;
    putValue(payload, v.type, v);
    return addEncoded(key, static_cast<uint32_t>(v.type), payload);
}

GgufBuilder& GgufBuilder::addRawMetadata(const std::string& key, uint32_t typeCode,
                                         const std::vector<uint8_t>& payload) {
    return addEncoded(key, typeCode, payload);
}

namespace {

GgufValue intValue(GgufValueType t, int64_t i) {
    GgufValue v;
    v.type = t;
    v.i = i;
    return v;
}

GgufValue floatValue(GgufValueType t, double f) {
    GgufValue v;
    v.type = t;
    v.f = f;
    return v;
}

template <typename T, typename Make>
GgufValue arrayValue(GgufValueType elem, const std::vector<T>& items, Make make) {
    GgufValue v;
    v.type = GgufValueType::Array;
    v.arrayType = elem;
    v.array.reserve(items.size());
    for (const T& x : items) v.array.push_back(make(x));
    return v;
}

}  // namespace

GgufBuilder& GgufBuilder::addUInt8(const std::string& k, uint8_t v) {
    return addValue(k, intValue(GgufValueType::UInt8, v));
}
GgufBuilder& GgufBuilder::addInt8(const std::string& k, int8_t v) {
    return addValue(k, intValue(GgufValueType::Int8, v));
}
GgufBuilder& GgufBuilder::addUInt16(const std::string& k, uint16_t v) {
    return addValue(k, intValue(GgufValueType::UInt16, v));
}
GgufBuilder& GgufBuilder::addInt16(const std::string& k, int16_t v) {
    return addValue(k, intValue(GgufValueType::Int16, v));
}
GgufBuilder& GgufBuilder::addUInt32(const std::string& k, uint32_t v) {
    return addValue(k, intValue(GgufValueType::UInt32, v));
}
GgufBuilder& GgufBuilder::addInt32(const std::string& k, int32_t v) {
    return addValue(k, intValue(GgufValueType::Int32, v));
}
GgufBuilder& GgufBuilder::addUInt64(const std::string& k, uint64_t v) {
    return addValue(k, intValue(GgufValueType::UInt64, static_cast<int64_t>(v)));
}
GgufBuilder& GgufBuilder::addInt64(const std::string& k, int64_t v) {
    return addValue(k, intValue(GgufValueType::Int64, v));
}
GgufBuilder& GgufBuilder::addFloat32(const std::string& k, float v) {
    return addValue(k, floatValue(GgufValueType::Float32, v));
}
GgufBuilder& GgufBuilder::addFloat64(const std::string& k, double v) {
    return addValue(k, floatValue(GgufValueType::Float64, v));
}
GgufBuilder& GgufBuilder::addBool(const std::string& k, bool v) {
    return addValue(k, intValue(GgufValueType::Bool, v ? 1 : 0));
}
GgufBuilder& GgufBuilder::addString(const std::string& k, const std::string& v) {
    GgufValue s;
    s.type = GgufValueType::String;
    s.s = v;
    return addValue(k, s);
}

GgufBuilder& GgufBuilder::addStringArray(const std::string& k, const std::vector<std::string>& v) {
    return addValue(k, arrayValue(GgufValueType::String, v, [](const std::string& x) {
                        GgufValue e;
                        e.type = GgufValueType::String;
                        e.s = x;
                        return e;
                    }));
}

GgufBuilder& GgufBuilder::addFloat32Array(const std::string& k, const std::vector<float>& v) {
    return addValue(k, arrayValue(GgufValueType::Float32, v,
                                  [](float x) { return floatValue(GgufValueType::Float32, x); }));
}

GgufBuilder& GgufBuilder::addInt32Array(const std::string& k, const std::vector<int32_t>& v) {
    return addValue(k, arrayValue(GgufValueType::Int32, v,
                                  [](int32_t x) { return intValue(GgufValueType::Int32, x); }));
}

GgufBuilder& GgufBuilder::addUInt32Array(const std::string& k, const std::vector<uint32_t>& v) {
    return addValue(k, arrayValue(GgufValueType::UInt32, v,
                                  [](uint32_t x) { return intValue(GgufValueType::UInt32, x); }));
}

size_t GgufBuilder::addTensor(const std::string& name, uint32_t type,
                              const std::vector<int64_t>& shape, const std::vector<uint8_t>& data) {
    Tensor t;
    t.name = name;
    t.type = type;
    t.shape = shape;
    t.data = data;
    tensors_.push_back(std::move(t));
    return tensors_.size() - 1;
}

size_t GgufBuilder::addTensorF32(const std::string& name, const std::vector<int64_t>& shape,
                                 const std::vector<float>& values) {
    std::vector<uint8_t> bytes(values.size() * 4);
    if (!values.empty()) std::memcpy(bytes.data(), values.data(), bytes.size());
    return addTensor(name, 0 /* F32 */, shape, bytes);
}

size_t GgufBuilder::addTensorF16(const std::string& name, const std::vector<int64_t>& shape,
                                 const std::vector<float>& values) {
    return addTensor(name, 1 /* F16 */, shape, halfBytes(values, floatToHalf));
}

size_t GgufBuilder::addTensorBF16(const std::string& name, const std::vector<int64_t>& shape,
                                  const std::vector<float>& values) {
    return addTensor(name, 30 /* BF16 */, shape, halfBytes(values, floatToBf16));
}

GgufBuilder::Tensor* GgufBuilder::findTensor(const std::string& name) {
    for (Tensor& t : tensors_) {
        if (t.name == name) return &t;
    }
    return nullptr;
}

std::vector<uint8_t> GgufBuilder::build() const {
    std::vector<uint8_t> out;
    out.insert(out.end(), magic_.begin(), magic_.end());
    put<uint32_t>(out, version_);
    put<uint64_t>(out, tensorCount_ ? *tensorCount_ : tensors_.size());
    const uint64_t nKv = metadata_.size() + (writeAlignmentKey_ ? 1 : 0);
    put<uint64_t>(out, kvCount_ ? *kvCount_ : nKv);
    for (const auto& e : metadata_) out.insert(out.end(), e.begin(), e.end());
    if (writeAlignmentKey_) {
        putString(out, "general.alignment");
        put<uint32_t>(out, static_cast<uint32_t>(GgufValueType::UInt32));
        put<uint32_t>(out, static_cast<uint32_t>(alignment_));
    }

    std::vector<uint64_t> offsets;
    uint64_t next = 0;
    for (const Tensor& t : tensors_) {
        const uint64_t off = t.offset ? *t.offset : next;
        offsets.push_back(off);
        if (off <= kMaxPinnedOffset) next = alignUp(off + t.data.size(), alignment_);
        putString(out, t.name);
        put<uint32_t>(out, static_cast<uint32_t>(t.shape.size()));
        for (int64_t d : t.shape) put<int64_t>(out, d);
        put<uint32_t>(out, t.type);
        put<uint64_t>(out, off);
    }
    if (tensors_.empty()) return out;

    const uint64_t dataStart = alignUp(out.size(), alignment_);
    for (size_t i = 0; i < tensors_.size(); ++i) {
        const uint64_t at = dataStart + offsets[i];
        const std::vector<uint8_t>& d = tensors_[i].data;
        if (offsets[i] > kMaxPinnedOffset) continue;  // a lie about where the data is
        if (out.size() < at + d.size()) out.resize(static_cast<size_t>(at + d.size()), 0);
        if (!d.empty()) std::memcpy(out.data() + at, d.data(), d.size());
    }
    out.resize(static_cast<size_t>(alignUp(out.size(), alignment_)), 0);
    return out;
}

void GgufBuilder::writeFile(const std::string& path) const {
    const std::vector<uint8_t> bytes = build();
    std::ofstream f(path, std::ios::binary | std::ios::trunc);
    if (!f) throw std::runtime_error(path + ": cannot open for writing");
    f.write(reinterpret_cast<const char*>(bytes.data()),
            static_cast<std::streamsize>(bytes.size()));
    if (!f) throw std::runtime_error(path + ": write failed");
}

}  // namespace kvlens::test
