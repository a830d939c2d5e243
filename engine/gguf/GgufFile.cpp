// GGUF v2/v3 reader. The file is hostile until proven otherwise: every count is
// checked against the bytes that remain before anything is allocated, all reads
// go through memcpy (GGUF fields are unaligned), and nested arrays are capped.
#include "engine/gguf/GgufFile.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <algorithm>
#include <limits>
#include <utility>

#include "engine/gguf/Dequantize.h"
#include "core/Error.h"

namespace kvlens {

// ---------------------------------------------------------------- GgufValue

const char* ggufValueTypeName(GgufValueType type) {
    switch (type) {
        case GgufValueType::UInt8:
            return "uint8";
        case GgufValueType::Int8:
            return "int8";
        case GgufValueType::UInt16:
            return "uint16";
        case GgufValueType::Int16:
            return "int16";
        case GgufValueType::UInt32:
            return "uint32";
        case GgufValueType::Int32:
            return "int32";
        case GgufValueType::Float32:
            return "float32";
        case GgufValueType::Bool:
            return "bool";
        case GgufValueType::String:
            return "string";
        case GgufValueType::Array:
            return "array";
        case GgufValueType::UInt64:
            return "uint64";
        case GgufValueType::Int64:
            return "int64";
        case GgufValueType::Float64:
            return "float64";
    }
    return "unknown";
}

bool GgufValue::isInteger() const {
    switch (type) {
        case GgufValueType::UInt8:
        case GgufValueType::Int8:
        case GgufValueType::UInt16:
        case GgufValueType::Int16:
        case GgufValueType::UInt32:
        case GgufValueType::Int32:
        case GgufValueType::UInt64:
        case GgufValueType::Int64:
        case GgufValueType::Bool:
            return true;
        default:
            return false;
    }
}

bool GgufValue::isFloat() const {
    return type == GgufValueType::Float32 || type == GgufValueType::Float64;
}

namespace {

// Arrays inside arrays: the format allows it, no model needs more than one level.
constexpr int kMaxArrayDepth = 8;
// Array elements in all of the metadata. Each costs a GgufValue (~100 bytes) in
// memory although it may take 1 byte on disk; the largest real vocabularies
// (~260k tokens, with scores, types and merges) stay far below this.
constexpr uint64_t kMaxArrayElements = uint64_t(1) << 23;
// Least bytes one metadata entry / tensor info can take on disk.
constexpr uint64_t kMinKvBytes = 8 + 4 + 1;  // key length, type, 1-byte value
constexpr uint64_t kMinTensorInfoBytes =
    8 + 4 + 8 + 4 + 8;  // name len, n_dims, 1 dim, type, offset

// A name from the file, quoted for a one-line message: control bytes escaped,
// very long names cut.
std::string quoteName(const std::string& name) {
    constexpr size_t kMax = 120;
    std::string out = "'";
    for (size_t i = 0; i < name.size() && i < kMax; ++i) {
        const unsigned char c = static_cast<unsigned char>(name[i]);
        if (c < 0x20 || c == 0x7F || c == '\\' || c == '\'') {
            char buf[8];
            std::snprintf(buf, sizeof buf, "\\x%02x", c);
            out += buf;
        } else {
            out += static_cast<char>(c);
        }
    }
    if (name.size() > kMax) out += "...";
    return out + "'";
}

bool knownValueType(uint32_t t) { return t <= static_cast<uint32_t>(GgufValueType::Float64); }

// Least bytes one element of `t` takes on disk.
uint64_t minValueBytes(GgufValueType t) {
    switch (t) {
        case GgufValueType::UInt8:
        case GgufValueType::Int8:
        case GgufValueType::Bool:
            return 1;
        case GgufValueType::UInt16:
        case GgufValueType::Int16:
            return 2;
        case GgufValueType::UInt32:
        case GgufValueType::Int32:
        case GgufValueType::Float32:
            return 4;
        case GgufValueType::String:  // length
        case GgufValueType::UInt64:
        case GgufValueType::Int64:
        case GgufValueType::Float64:
            return 8;
        case GgufValueType::Array:
            return 4 + 8;  // element type, count
    }
    return 1;
}

std::string describeValue(const GgufValue& v) {
    if (v.type == GgufValueType::Array) {
        return std::string("array of ") + ggufValueTypeName(v.arrayType);
    }
    return ggufValueTypeName(v.type);
}

bool isSignedType(GgufValueType t) {
    return t == GgufValueType::Int8 || t == GgufValueType::Int16 || t == GgufValueType::Int32 ||
           t == GgufValueType::Int64;
}

bool isNumberType(GgufValueType t) {
    return t != GgufValueType::Bool && t != GgufValueType::String && t != GgufValueType::Array;
}

double numberOf(const GgufValue& v) {
    if (v.isFloat()) return v.f;
    if (v.type == GgufValueType::UInt64) return static_cast<double>(static_cast<uint64_t>(v.i));
    return static_cast<double>(v.i);
}

// Reads little-endian fields from a byte range; every read is bounds-checked and
// failures name `context` (what is being read) and the file.
class Reader {
public:
    Reader(const uint8_t* data, uint64_t size, const std::string& path)
        : data_(data), size_(size), path_(path) {}

    uint64_t pos() const { return pos_; }
    uint64_t remaining() const { return size_ - pos_; }
    std::string context;

    [[noreturn]] void fail(const std::string& what) const { throw Error(path_ + ": " + what); }

    void need(uint64_t n) const {
        if (n > remaining()) {
            fail("truncated: " + context + " needs " + std::to_string(n) + " bytes at offset " +
                 std::to_string(pos_) + ", file has " + std::to_string(size_) + " bytes");
        }
    }

    template <typename T>
    T read() {
        need(sizeof(T));
        T v;
        std::memcpy(&v, data_ + pos_, sizeof(T));
        pos_ += sizeof(T);
        return v;
    }

    std::string readString() {
        const uint64_t len = read<uint64_t>();
        if (len > remaining()) {
            fail("truncated: " + context + " is a string of " + std::to_string(len) +
                 " bytes at offset " + std::to_string(pos_) + ", file has " +
                 std::to_string(size_) + " bytes");
        }
        std::string s(reinterpret_cast<const char*>(data_ + pos_), static_cast<size_t>(len));
        pos_ += len;
        return s;
    }

private:
    const uint8_t* data_;
    uint64_t size_;
    uint64_t pos_ = 0;
    const std::string& path_;
};

// Parses metadata values; holds the running array-element budget.
class ValueParser {
public:
    ValueParser(Reader& r, const std::string& key) : r_(r), key_(key) {}

    GgufValue parse(GgufValueType type, int depth, uint64_t& elementBudget) {
        GgufValue v;
        v.type = type;
        switch (type) {
            case GgufValueType::UInt8:
                v.i = r_.read<uint8_t>();
                break;
            case GgufValueType::Int8:
                v.i = r_.read<int8_t>();
                break;
            case GgufValueType::UInt16:
                v.i = r_.read<uint16_t>();
                break;
            case GgufValueType::Int16:
                v.i = r_.read<int16_t>();
                break;
            case GgufValueType::UInt32:
                v.i = r_.read<uint32_t>();
                break;
            case GgufValueType::Int32:
                v.i = r_.read<int32_t>();
                break;
            case GgufValueType::UInt64:
                v.i = static_cast<int64_t>(r_.read<uint64_t>());
                break;
            case GgufValueType::Int64:
                v.i = r_.read<int64_t>();
                break;
            case GgufValueType::Float32:
                v.f = r_.read<float>();
                break;
            case GgufValueType::Float64:
                v.f = r_.read<double>();
                break;
            case GgufValueType::Bool: {
                const uint8_t b = r_.read<uint8_t>();
                if (b > 1) {
                    r_.fail("metadata key " + quoteName(key_) + " has bool value " +
                            std::to_string(b) + " (must be 0 or 1)");
                }
                v.i = b;
                break;
            }
            case GgufValueType::String:
                v.s = r_.readString();
                break;
            case GgufValueType::Array:
                parseArray(v, depth, elementBudget);
                break;
        }
        return v;
    }

private:
    void parseArray(GgufValue& v, int depth, uint64_t& elementBudget) {
        if (depth >= kMaxArrayDepth) {
            r_.fail("metadata key " + quoteName(key_) + " has arrays nested deeper than " +
                    std::to_string(kMaxArrayDepth) + " levels");
        }
        const uint32_t elemType = r_.read<uint32_t>();
        if (!knownValueType(elemType)) {
            r_.fail("metadata key " + quoteName(key_) + " is an array of unknown value type " +
                    std::to_string(elemType));
        }
        v.arrayType = static_cast<GgufValueType>(elemType);
        const uint64_t count = r_.read<uint64_t>();
        const uint64_t minBytes = minValueBytes(v.arrayType);
        if (count > r_.remaining() / minBytes) {
            r_.fail("truncated: metadata key " + quoteName(key_) + " is an array of " +
                    std::to_string(count) + " " + ggufValueTypeName(v.arrayType) +
                    " elements (at least " + std::to_string(minBytes) + " bytes each) but only " +
                    std::to_string(r_.remaining()) + " bytes follow at offset " +
                    std::to_string(r_.pos()));
        }
        if (count > elementBudget) {
            r_.fail("metadata key " + quoteName(key_) + " is an array of " + std::to_string(count) +
                    " elements, more than the " + std::to_string(kMaxArrayElements) +
                    " array elements allowed in all the metadata");
        }
        elementBudget -= count;
        v.array.reserve(static_cast<size_t>(count));
        for (uint64_t k = 0; k < count; ++k) {
            v.array.push_back(parse(v.arrayType, depth + 1, elementBudget));
        }
    }

    Reader& r_;
    const std::string& key_;
};

std::string shapeString(const std::vector<int64_t>& shape) {
    std::string s = "[";
    for (size_t i = 0; i < shape.size(); ++i) {
        if (i) s += ", ";
        s += std::to_string(shape[i]);
    }
    return s + "]";
}

std::string hexBytes(const uint8_t* p, size_t n) {
    std::string s;
    char buf[4];
    for (size_t i = 0; i < n; ++i) {
        std::snprintf(buf, sizeof buf, "%02x", p[i]);
        if (i) s += ' ';
        s += buf;
    }
    return s;
}

uint32_t byteSwap32(uint32_t v) {
    return (v >> 24) | ((v >> 8) & 0xFF00u) | ((v << 8) & 0xFF0000u) | (v << 24);
}

// Rounds `v` up to a multiple of `alignment` (a power of two); false on overflow.
bool alignUp(uint64_t v, uint64_t alignment, uint64_t& out) {
    const uint64_t rem = v & (alignment - 1);
    if (rem == 0) {
        out = v;
        return true;
    }
    const uint64_t add = alignment - rem;
    if (v > std::numeric_limits<uint64_t>::max() - add) return false;
    out = v + add;
    return true;
}

}  // namespace

// ---------------------------------------------------------------- GgufFile

GgufFile::GgufFile(const std::string& path) : path_(path) {
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
                    (S_ISDIR(st.st_mode) ? std::string(std::strerror(EISDIR))
                                         : std::string("not a regular file")));
    }
    size_ = static_cast<uint64_t>(st.st_size);
    if (size_ == 0) {
        ::close(fd);
        throw Error(path + ": empty file (0 bytes), not a GGUF file");
    }
    void* m = ::mmap(nullptr, static_cast<size_t>(size_), PROT_READ, MAP_PRIVATE, fd, 0);
    const int err = errno;
    ::close(fd);
    if (m == MAP_FAILED) throw Error(path + ": cannot map: " + std::strerror(err));
    map_ = m;
    mapBytes_ = static_cast<size_t>(size_);
    data_ = static_cast<const uint8_t*>(m);
    try {
        parse();
    } catch (...) {
        ::munmap(map_, mapBytes_);
        map_ = nullptr;
        throw;
    }
}

GgufFile::GgufFile(std::vector<uint8_t> bytes, const std::string& name)
    : path_(name), owned_(std::move(bytes)) {
    data_ = owned_.data();
    size_ = owned_.size();
    parse();
}

void GgufFile::loadIntoMemory(const std::function<void(double)>& progress) {
    if (map_ == nullptr) return;  // an in-memory image already
    const size_t bytes = static_cast<size_t>(size_);
    void* copy = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (copy == MAP_FAILED) throw Error(path_ + ": cannot allocate " + std::to_string(bytes) + " bytes for the weights");
#ifdef MADV_HUGEPAGE
    ::madvise(copy, bytes, MADV_HUGEPAGE);  // a hint: no huge pages is no error
#endif
    const int fd = ::open(path_.c_str(), O_RDONLY | O_CLOEXEC);
    size_t done = 0;
    constexpr size_t kChunk = 64u << 20;
    while (fd >= 0 && done < bytes) {
        const ssize_t n = ::pread(fd, static_cast<char*>(copy) + done, std::min(kChunk, bytes - done),
                                  static_cast<off_t>(done));
        if (n <= 0) break;
        done += static_cast<size_t>(n);
        if (progress) progress(double(done) / double(bytes));
    }
    const int err = errno;
    if (fd >= 0) ::close(fd);
    if (done < bytes) {
        ::munmap(copy, bytes);
        throw Error(path_ + ": cannot read: " + (fd < 0 || err != 0 ? std::strerror(err) : "the file shrank"));
    }
    ::mprotect(copy, bytes, PROT_READ);
    ::munmap(map_, mapBytes_);
    map_ = copy;
    mapBytes_ = bytes;
    data_ = static_cast<const uint8_t*>(copy);
}

GgufFile::~GgufFile() {
    if (map_) ::munmap(map_, mapBytes_);
}

void GgufFile::parse() {
    auto fail = [this](const std::string& what) -> void { throw Error(path_ + ": " + what); };

    if (size_ == 0) fail("empty file (0 bytes), not a GGUF file");
    if (size_ < 4 || std::memcmp(data_, "GGUF", 4) != 0) {
        const size_t n = size_ < 4 ? static_cast<size_t>(size_) : 4;
        fail("not a GGUF file (starts with bytes " + hexBytes(data_, n) + ")");
    }

    Reader r(data_, size_, path_);
    r.context = "header";
    r.read<uint32_t>();  // magic
    const uint32_t version = r.read<uint32_t>();
    if (version != 2 && version != 3) {
        const uint32_t swapped = byteSwap32(version);
        if (swapped >= 1 && swapped <= 3) {
            fail("big-endian GGUF file (version field reads 0x" + [&] {
                char buf[16];
                std::snprintf(buf, sizeof buf, "%08x", version);
                return std::string(buf);
            }() + ") is not supported; only little-endian files are");
        }
        if (version == 1) fail("GGUF version 1 is not supported (supported: 2, 3)");
        fail("unsupported GGUF version " + std::to_string(version) + " (supported: 2, 3)");
    }
    version_ = version;
    const uint64_t nTensors = r.read<uint64_t>();
    const uint64_t nKv = r.read<uint64_t>();
    if (nKv > r.remaining() / kMinKvBytes) {
        fail("truncated: header claims " + std::to_string(nKv) + " metadata entries but only " +
             std::to_string(r.remaining()) + " bytes follow (each entry takes at least " +
             std::to_string(kMinKvBytes) + ")");
    }
    if (nTensors > r.remaining() / kMinTensorInfoBytes ||
        nKv * kMinKvBytes + nTensors * kMinTensorInfoBytes > r.remaining()) {
        fail("truncated: header claims " + std::to_string(nTensors) + " tensors and " +
             std::to_string(nKv) + " metadata entries but only " + std::to_string(r.remaining()) +
             " bytes follow (each tensor takes at least " + std::to_string(kMinTensorInfoBytes) +
             ")");
    }

    // Metadata.
    uint64_t elementBudget = kMaxArrayElements;
    metadata_.reserve(static_cast<size_t>(nKv));
    for (uint64_t i = 0; i < nKv; ++i) {
        r.context = "key of metadata entry #" + std::to_string(i);
        std::string key = r.readString();
        if (metadataIndex_.count(key)) fail("duplicate metadata key " + quoteName(key));
        r.context = "metadata key " + quoteName(key);
        const uint32_t type = r.read<uint32_t>();
        if (!knownValueType(type)) {
            fail("metadata key " + quoteName(key) + " has unknown value type " + std::to_string(type));
        }
        ValueParser vp(r, key);
        GgufValue value = vp.parse(static_cast<GgufValueType>(type), 0, elementBudget);
        metadataIndex_.emplace(key, metadata_.size());
        metadata_.emplace_back(std::move(key), std::move(value));
    }

    alignment_ = 32;
    if (const GgufValue* a = find("general.alignment")) {
        if (!a->isInteger() || a->type == GgufValueType::Bool) {
            fail("metadata key 'general.alignment' is " + describeValue(*a) +
                 ", expected an integer");
        }
        const bool negative = isSignedType(a->type) && a->i < 0;
        const uint64_t al = static_cast<uint64_t>(a->i);
        if (negative || al == 0 || (al & (al - 1)) != 0) {
            fail("metadata key 'general.alignment' is " + std::to_string(a->i) +
                 ", must be a nonzero power of two");
        }
        alignment_ = al;
    }

    // Tensor infos.
    tensors_.reserve(static_cast<size_t>(nTensors));
    for (uint64_t i = 0; i < nTensors; ++i) {
        r.context = "name of tensor #" + std::to_string(i);
        GgufTensorInfo t;
        t.name = r.readString();
        if (tensorIndex_.count(t.name)) fail("duplicate tensor name " + quoteName(t.name));
        const std::string tn = "tensor " + quoteName(t.name);
        r.context = tn + " info";
        const uint32_t nDims = r.read<uint32_t>();
        if (nDims < 1 || nDims > 4) {
            fail(tn + " has " + std::to_string(nDims) + " dimensions (must be 1 to 4)");
        }
        t.shape.resize(nDims);
        uint64_t numel = 1;
        bool overflow = false;
        for (uint32_t d = 0; d < nDims; ++d) {
            const int64_t dim = r.read<int64_t>();
            if (dim < 1) {
                fail(tn + " dimension " + std::to_string(d) + " is " + std::to_string(dim) +
                     " (must be >= 1)");
            }
            t.shape[d] = dim;
            if (numel > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) /
                            static_cast<uint64_t>(dim)) {
                overflow = true;
            } else {
                numel *= static_cast<uint64_t>(dim);
            }
        }
        if (overflow) {
            fail(tn + " shape " + shapeString(t.shape) + " has more than 2^63-1 elements");
        }
        t.type = r.read<uint32_t>();
        const int64_t blockSize = ggmlBlockSize(t.type);
        const uint64_t blockBytes = ggmlBlockBytes(t.type);
        if (blockSize == 0 || blockBytes == 0) {
            fail(tn + " has unknown type code " + std::to_string(t.type) + " (ggml defines no such type)");
        }
        if (t.shape[0] % blockSize != 0) {
            fail(tn + " row length " + std::to_string(t.shape[0]) + " is not a multiple of the " +
                 ggmlTypeName(t.type) + " block size " + std::to_string(blockSize));
        }
        const uint64_t blocks = numel / static_cast<uint64_t>(blockSize);
        if (blocks > std::numeric_limits<uint64_t>::max() / blockBytes) {
            fail(tn + " shape " + shapeString(t.shape) + " of type " + ggmlTypeName(t.type) +
                 " needs more than 2^64 bytes");
        }
        t.nbytes = blocks * blockBytes;
        t.offset = r.read<uint64_t>();
        if ((t.offset & (alignment_ - 1)) != 0) {
            fail(tn + " offset " + std::to_string(t.offset) +
                 " is not a multiple of the alignment " + std::to_string(alignment_));
        }
        tensorIndex_.emplace(t.name, tensors_.size());
        tensors_.push_back(std::move(t));
    }

    // Data section: at the aligned end of the header.
    if (!alignUp(r.pos(), alignment_, dataOffset_)) {
        fail("alignment " + std::to_string(alignment_) + " puts the data section beyond 2^64");
    }
    for (const GgufTensorInfo& t : tensors_) {
        const uint64_t max = std::numeric_limits<uint64_t>::max();
        if (t.offset > max - dataOffset_ || t.nbytes > max - dataOffset_ - t.offset) {
            fail("truncated: tensor " + quoteName(t.name) + " offset " + std::to_string(t.offset) +
                 " is beyond the end of the file (" + std::to_string(size_) + " bytes)");
        }
        const uint64_t begin = dataOffset_ + t.offset;
        const uint64_t end = begin + t.nbytes;
        if (end > size_) {
            fail("truncated: tensor " + quoteName(t.name) + " needs bytes " + std::to_string(begin) +
                 ".." + std::to_string(end) + ", file has " + std::to_string(size_));
        }
    }
}

const GgufValue* GgufFile::find(const std::string& key) const {
    auto it = metadataIndex_.find(key);
    return it == metadataIndex_.end() ? nullptr : &metadata_[it->second].second;
}

namespace {

[[noreturn]] void throwMissing(const std::string& path, const std::string& key) {
    throw Error(path + ": metadata key " + quoteName(key) + " is missing");
}

[[noreturn]] void throwWrongType(const std::string& path, const std::string& key,
                                 const GgufValue& v, const char* expected) {
    throw Error(path + ": metadata key " + quoteName(key) + " is " + describeValue(v) + ", expected " +
                expected);
}

uint64_t uintOf(const std::string& path, const std::string& key, const GgufValue& v) {
    if (!v.isInteger() || v.type == GgufValueType::Bool) {
        throwWrongType(path, key, v, "an integer");
    }
    if (isSignedType(v.type) && v.i < 0) {
        throw Error(path + ": metadata key " + quoteName(key) + " is " + std::to_string(v.i) +
                    ", expected a non-negative integer");
    }
    return static_cast<uint64_t>(v.i);
}

double floatOf(const std::string& path, const std::string& key, const GgufValue& v) {
    if (!isNumberType(v.type)) throwWrongType(path, key, v, "a number");
    return numberOf(v);
}

bool boolOf(const std::string& path, const std::string& key, const GgufValue& v) {
    if (v.type != GgufValueType::Bool) throwWrongType(path, key, v, "a bool");
    return v.i != 0;
}

std::string stringOf(const std::string& path, const std::string& key, const GgufValue& v) {
    if (v.type != GgufValueType::String) throwWrongType(path, key, v, "a string");
    return v.s;
}

}  // namespace

std::string GgufFile::getString(const std::string& key) const {
    const GgufValue* v = find(key);
    if (!v) throwMissing(path_, key);
    return stringOf(path_, key, *v);
}

uint64_t GgufFile::getUInt(const std::string& key) const {
    const GgufValue* v = find(key);
    if (!v) throwMissing(path_, key);
    return uintOf(path_, key, *v);
}

double GgufFile::getFloat(const std::string& key) const {
    const GgufValue* v = find(key);
    if (!v) throwMissing(path_, key);
    return floatOf(path_, key, *v);
}

bool GgufFile::getBool(const std::string& key) const {
    const GgufValue* v = find(key);
    if (!v) throwMissing(path_, key);
    return boolOf(path_, key, *v);
}

uint64_t GgufFile::getUIntOr(const std::string& key, uint64_t fallback) const {
    const GgufValue* v = find(key);
    return v ? uintOf(path_, key, *v) : fallback;
}

double GgufFile::getFloatOr(const std::string& key, double fallback) const {
    const GgufValue* v = find(key);
    return v ? floatOf(path_, key, *v) : fallback;
}

bool GgufFile::getBoolOr(const std::string& key, bool fallback) const {
    const GgufValue* v = find(key);
    return v ? boolOf(path_, key, *v) : fallback;
}

std::string GgufFile::getStringOr(const std::string& key, const std::string& fallback) const {
    const GgufValue* v = find(key);
    return v ? stringOf(path_, key, *v) : fallback;
}

std::vector<std::string> GgufFile::getStringArray(const std::string& key) const {
    const GgufValue* v = find(key);
    if (!v) throwMissing(path_, key);
    if (v->type != GgufValueType::Array || v->arrayType != GgufValueType::String) {
        throwWrongType(path_, key, *v, "an array of strings");
    }
    std::vector<std::string> out;
    out.reserve(v->array.size());
    for (const GgufValue& e : v->array) out.push_back(e.s);
    return out;
}

std::vector<double> GgufFile::getNumberArray(const std::string& key) const {
    const GgufValue* v = find(key);
    if (!v) throwMissing(path_, key);
    if (v->type != GgufValueType::Array || !isNumberType(v->arrayType)) {
        throwWrongType(path_, key, *v, "an array of numbers");
    }
    std::vector<double> out;
    out.reserve(v->array.size());
    for (const GgufValue& e : v->array) out.push_back(numberOf(e));
    return out;
}

const GgufTensorInfo* GgufFile::findTensor(const std::string& name) const {
    auto it = tensorIndex_.find(name);
    return it == tensorIndex_.end() ? nullptr : &tensors_[it->second];
}

const uint8_t* GgufFile::tensorData(const GgufTensorInfo& t) const {
    return data_ + dataOffset_ + t.offset;
}

std::vector<float> GgufFile::dequantize(const GgufTensorInfo& t) const {
    if (!ggmlTypeSupported(t.type)) {
        throw Error(path_ + ": tensor " + quoteName(t.name) + " has unsupported type " +
                    ggmlTypeName(t.type) + " (supported: " + ggmlSupportedTypeList() + ")");
    }
    // `t` normally comes from tensors(); a hand-made one is checked like a parsed one.
    const GgufTensorInfo* own = findTensor(t.name);
    if (!own || own->offset != t.offset || own->nbytes != t.nbytes || own->shape != t.shape ||
        own->type != t.type) {
        throw Error(path_ + ": tensor " + quoteName(t.name) +
                    " does not describe a tensor of this file");
    }
    const int64_t n = t.numel();
    std::vector<float> out(static_cast<size_t>(n));
    kvlens::dequantize(t.type, tensorData(t), out.data(), n);
    return out;
}

}  // namespace kvlens
