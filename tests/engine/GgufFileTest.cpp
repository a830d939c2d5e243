// The GGUF reader on files built by GgufBuilder (good ones, and ones broken in
// one chosen way) and, when present, on the shared stories260K model.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "engine/gguf/Dequantize.h"
#include "core/Error.h"
#include "engine/gguf/GgufFile.h"
#include "support/GgufBuilder.h"

using kvlens::Error;
using kvlens::GgufFile;
using kvlens::GgufValue;
using kvlens::GgufValueType;
using kvlens::test::GgufBuilder;

namespace {

std::string tempPath(const std::string& name) {
    return ::testing::TempDir() + "kvlens_gguf_" + std::to_string(::getpid()) + "_" + name;
}

// Removes the file when the test ends.
struct TempFile {
    explicit TempFile(const std::string& name) : path(tempPath(name)) {}
    ~TempFile() { std::remove(path.c_str()); }
    std::string path;
};

// The kvlens::Error message `fn` throws; a test failure when it throws nothing
// or something else, or when the message is not one line.
std::string errorOf(const std::function<void()>& fn) {
    try {
        fn();
    } catch (const Error& e) {
        const std::string msg = e.what();
        EXPECT_EQ(msg.find('\n'), std::string::npos) << "multi-line message: " << msg;
        return msg;
    } catch (const std::exception& e) {
        ADD_FAILURE() << "threw a non-kvlens exception: " << e.what();
        return "";
    }
    ADD_FAILURE() << "did not throw";
    return "";
}

std::string openError(const std::vector<uint8_t>& bytes, const std::string& name = "m.gguf") {
    return errorOf([&] { GgufFile f(bytes, name); });
}

#define EXPECT_HAS(msg, part)                      \
    EXPECT_NE((msg).find(part), std::string::npos) \
        << "message: " << (msg) << "\nexpected: " << (part)

std::vector<uint8_t> u64Bytes(uint64_t v) {
    std::vector<uint8_t> b(8);
    for (int i = 0; i < 8; ++i) b[i] = static_cast<uint8_t>(v >> (8 * i));
    return b;
}

std::vector<uint8_t> u32Bytes(uint32_t v) {
    std::vector<uint8_t> b(4);
    for (int i = 0; i < 4; ++i) b[i] = static_cast<uint8_t>(v >> (8 * i));
    return b;
}

void append(std::vector<uint8_t>& a, const std::vector<uint8_t>& b) {
    a.insert(a.end(), b.begin(), b.end());
}

std::vector<float> ramp(size_t n, float scale) {
    std::vector<float> v(n);
    for (size_t i = 0; i < n; ++i) v[i] = static_cast<float>(i) * scale - 1.0f;
    return v;
}

// A file with one value of every metadata type and a few tensors.
GgufBuilder everyTypeBuilder(uint32_t version) {
    GgufBuilder b;
    b.setVersion(version);
    b.addString("general.architecture", "llama")
        .addUInt8("t.u8", 255)
        .addInt8("t.i8", -128)
        .addUInt16("t.u16", 65535)
        .addInt16("t.i16", -32768)
        .addUInt32("t.u32", 0xFFFFFFFFu)
        .addInt32("t.i32", std::numeric_limits<int32_t>::min())
        .addUInt64("t.u64", std::numeric_limits<uint64_t>::max())
        .addInt64("t.i64", std::numeric_limits<int64_t>::min())
        .addFloat32("t.f32", 1.5f)
        .addFloat64("t.f64", -2.25e300)
        .addBool("t.true", true)
        .addBool("t.false", false)
        .addString("t.str", std::string("h\xC3\xA9llo\0world", 12))
        .addString("t.empty", "")
        .addStringArray("t.strings", {"<unk>", "", "\xE2\x96\x81the"})
        .addFloat32Array("t.floats", {0.5f, -1.25f})
        .addInt32Array("t.ints", {-1, 7})
        .addUInt32Array("t.uints", {});
    GgufValue nested;  // [[1, 2], [], [65535]] as uint16
    nested.type = GgufValueType::Array;
    nested.arrayType = GgufValueType::Array;
    for (const std::vector<int>& row : std::vector<std::vector<int>>{{1, 2}, {}, {65535}}) {
        GgufValue inner;
        inner.type = GgufValueType::Array;
        inner.arrayType = GgufValueType::UInt16;
        for (int x : row) {
            GgufValue e;
            e.type = GgufValueType::UInt16;
            e.i = x;
            inner.array.push_back(e);
        }
        nested.array.push_back(inner);
    }
    b.addValue("t.nested", nested);
    GgufValue bools;
    bools.type = GgufValueType::Array;
    bools.arrayType = GgufValueType::Bool;
    for (int x : {1, 0, 1}) {
        GgufValue e;
        e.type = GgufValueType::Bool;
        e.i = x;
        bools.array.push_back(e);
    }
    b.addValue("t.bools", bools);
    b.addTensorF32("a", {3, 2}, ramp(6, 0.5f));  // 24 bytes: the next one is padded
    b.addTensorF32("b.weight", {5}, {1, 2, 3, 4, 5});
    b.addTensorF16("c", {4}, {1.0f, -2.0f, 0.5f, 65504.0f});
    return b;
}

void checkEveryType(const GgufFile& f) {
    const auto& md = f.metadata();
    ASSERT_EQ(md.size(), 21u);
    EXPECT_EQ(md[0].first, "general.architecture");
    EXPECT_EQ(md[1].first, "t.u8");
    EXPECT_EQ(md[20].first, "t.bools");

    EXPECT_EQ(f.getString("general.architecture"), "llama");
    EXPECT_EQ(f.find("t.u8")->type, GgufValueType::UInt8);
    EXPECT_EQ(f.getUInt("t.u8"), 255u);
    EXPECT_EQ(f.find("t.i8")->i, -128);
    EXPECT_EQ(f.find("t.i8")->type, GgufValueType::Int8);
    EXPECT_EQ(f.getUInt("t.u16"), 65535u);
    EXPECT_EQ(f.find("t.i16")->i, -32768);
    EXPECT_EQ(f.getUInt("t.u32"), 0xFFFFFFFFu);
    EXPECT_EQ(f.find("t.i32")->i, std::numeric_limits<int32_t>::min());
    EXPECT_EQ(f.getUInt("t.u64"), std::numeric_limits<uint64_t>::max());
    EXPECT_EQ(f.find("t.u64")->type, GgufValueType::UInt64);
    EXPECT_EQ(f.find("t.i64")->i, std::numeric_limits<int64_t>::min());
    EXPECT_EQ(f.getFloat("t.f32"), 1.5);
    EXPECT_EQ(f.find("t.f32")->type, GgufValueType::Float32);
    EXPECT_EQ(f.getFloat("t.f64"), -2.25e300);
    EXPECT_EQ(f.getFloat("t.u32"), 4294967295.0);  // integers read as floats too
    EXPECT_EQ(f.getFloat("t.i16"), -32768.0);
    EXPECT_TRUE(f.getBool("t.true"));
    EXPECT_FALSE(f.getBool("t.false"));
    EXPECT_EQ(f.getString("t.str"), std::string("h\xC3\xA9llo\0world", 12));
    EXPECT_EQ(f.getString("t.empty"), "");
    EXPECT_EQ(f.getStringArray("t.strings"),
              (std::vector<std::string>{"<unk>", "", "\xE2\x96\x81the"}));
    EXPECT_EQ(f.getNumberArray("t.floats"), (std::vector<double>{0.5, -1.25}));
    EXPECT_EQ(f.getNumberArray("t.ints"), (std::vector<double>{-1, 7}));
    EXPECT_TRUE(f.getNumberArray("t.uints").empty());
    EXPECT_EQ(f.find("t.uints")->arrayType, GgufValueType::UInt32);

    const GgufValue* nested = f.find("t.nested");
    ASSERT_NE(nested, nullptr);
    EXPECT_EQ(nested->type, GgufValueType::Array);
    EXPECT_EQ(nested->arrayType, GgufValueType::Array);
    ASSERT_EQ(nested->array.size(), 3u);
    EXPECT_EQ(nested->array[0].arrayType, GgufValueType::UInt16);
    ASSERT_EQ(nested->array[0].array.size(), 2u);
    EXPECT_EQ(nested->array[0].array[1].i, 2);
    EXPECT_TRUE(nested->array[1].array.empty());
    EXPECT_EQ(nested->array[2].array[0].i, 65535);
    const GgufValue* bools = f.find("t.bools");
    ASSERT_EQ(bools->array.size(), 3u);
    EXPECT_EQ(bools->array[0].i, 1);
    EXPECT_EQ(bools->array[1].i, 0);

    // Fallbacks apply only to absent keys.
    EXPECT_EQ(f.getUIntOr("absent", 42), 42u);
    EXPECT_EQ(f.getUIntOr("t.u8", 42), 255u);
    EXPECT_EQ(f.getFloatOr("absent", 0.25), 0.25);
    EXPECT_TRUE(f.getBoolOr("absent", true));
    EXPECT_EQ(f.getStringOr("absent", "x"), "x");
    EXPECT_EQ(f.getStringOr("general.architecture", "x"), "llama");
    EXPECT_FALSE(f.has("absent"));
    EXPECT_EQ(f.find("absent"), nullptr);

    ASSERT_EQ(f.tensors().size(), 3u);
    const kvlens::GgufTensorInfo* a = f.findTensor("a");
    ASSERT_NE(a, nullptr);
    EXPECT_EQ(a->shape, (std::vector<int64_t>{3, 2}));
    EXPECT_EQ(a->numel(), 6);
    EXPECT_EQ(a->nbytes, 24u);
    EXPECT_EQ(a->offset, 0u);
    EXPECT_EQ(f.dequantize(*a), ramp(6, 0.5f));
    const kvlens::GgufTensorInfo* bw = f.findTensor("b.weight");
    ASSERT_NE(bw, nullptr);
    EXPECT_EQ(bw->offset, 32u);  // 24 bytes padded to the 32-byte alignment
    EXPECT_EQ(f.dequantize(*bw), (std::vector<float>{1, 2, 3, 4, 5}));
    const kvlens::GgufTensorInfo* c = f.findTensor("c");
    ASSERT_NE(c, nullptr);
    EXPECT_EQ(c->type, static_cast<uint32_t>(kvlens::GgmlType::F16));
    EXPECT_EQ(c->nbytes, 8u);
    EXPECT_EQ(f.dequantize(*c), (std::vector<float>{1.0f, -2.0f, 0.5f, 65504.0f}));
    EXPECT_EQ(f.findTensor("absent"), nullptr);
}

}  // namespace

TEST(GgufFileTest, RoundTripsEveryValueTypeInVersion3) {
    GgufFile f(everyTypeBuilder(3).build(), "mem.gguf");
    EXPECT_EQ(f.version(), 3u);
    EXPECT_EQ(f.alignment(), 32u);
    EXPECT_EQ(f.path(), "mem.gguf");
    checkEveryType(f);
}

TEST(GgufFileTest, RoundTripsEveryValueTypeInVersion2) {
    GgufFile f(everyTypeBuilder(2).build(), "mem.gguf");
    EXPECT_EQ(f.version(), 2u);
    checkEveryType(f);
}

TEST(GgufFileTest, MapsFileFromDisk) {
    TempFile tmp("every.gguf");
    const GgufBuilder b = everyTypeBuilder(3);
    b.writeFile(tmp.path);
    GgufFile f(tmp.path);
    EXPECT_EQ(f.path(), tmp.path);
    EXPECT_EQ(f.fileSize(), b.build().size());
    checkEveryType(f);
    for (const auto& t : f.tensors()) {
        // mmap returns a page-aligned base, so aligned offsets give aligned pointers.
        EXPECT_EQ(reinterpret_cast<uintptr_t>(f.tensorData(t)) % 32, 0u) << t.name;
    }
}

TEST(GgufFileTest, HonoursAlignmentOtherThan32) {
    for (uint64_t alignment : {1u, 8u, 64u, 256u}) {
        SCOPED_TRACE(alignment);
        GgufBuilder b;
        b.setAlignment(alignment);
        b.addString("general.architecture", "llama");
        b.addTensorF32("x", {3}, {1, 2, 3});
        b.addTensorF32("y", {2}, {4, 5});
        TempFile tmp("align.gguf");
        b.writeFile(tmp.path);
        GgufFile f(tmp.path);
        EXPECT_EQ(f.alignment(), alignment);
        EXPECT_EQ(f.getUInt("general.alignment"), alignment);
        const auto* y = f.findTensor("y");
        ASSERT_NE(y, nullptr);
        EXPECT_EQ(y->offset, (12 + alignment - 1) / alignment * alignment);  // after x's 12 bytes
        EXPECT_EQ(y->offset % alignment, 0u);
        EXPECT_EQ(reinterpret_cast<uintptr_t>(f.tensorData(*y)) % alignment, 0u);
        EXPECT_EQ(f.dequantize(*f.findTensor("x")), (std::vector<float>{1, 2, 3}));
        EXPECT_EQ(f.dequantize(*y), (std::vector<float>{4, 5}));
    }
}

TEST(GgufFileTest, FileWithoutTensorsOrMetadata) {
    GgufBuilder b;
    GgufFile f(b.build(), "empty-model.gguf");
    EXPECT_TRUE(f.metadata().empty());
    EXPECT_TRUE(f.tensors().empty());
}

// ------------------------------------------------------------------ errors

TEST(GgufFileErrorTest, MissingFile) {
    const std::string path = tempPath("does-not-exist.gguf");
    const std::string msg = errorOf([&] { GgufFile f(path); });
    EXPECT_EQ(msg, path + ": cannot open: No such file or directory");
}

TEST(GgufFileErrorTest, DirectoryIsRefused) {
    const std::string msg = errorOf([] { GgufFile f("/"); });
    EXPECT_HAS(msg, "/: cannot open");
}

TEST(GgufFileErrorTest, EmptyFile) {
    TempFile tmp("empty.gguf");
    { std::ofstream(tmp.path, std::ios::binary); }
    const std::string msg = errorOf([&] { GgufFile f(tmp.path); });
    EXPECT_HAS(msg, tmp.path + ": ");
    EXPECT_HAS(msg, "empty");
    EXPECT_HAS(openError({}), "m.gguf: empty file");
}

TEST(GgufFileErrorTest, NotGguf) {
    const std::vector<uint8_t> elf = {0x7f, 'E', 'L', 'F', 2, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0};
    EXPECT_EQ(openError(elf), "m.gguf: not a GGUF file (starts with bytes 7f 45 4c 46)");
    EXPECT_HAS(openError({'G', 'G'}), "m.gguf: not a GGUF file (starts with bytes 47 47)");
    TempFile tmp("elf.gguf");
    {
        std::ofstream out(tmp.path, std::ios::binary);
        out.write(reinterpret_cast<const char*>(elf.data()), elf.size());
    }
    EXPECT_EQ(errorOf([&] { GgufFile f(tmp.path); }),
              tmp.path + ": not a GGUF file (starts with bytes 7f 45 4c 46)");
}

TEST(GgufFileErrorTest, VersionOneIsRefused) {
    GgufBuilder b;
    b.setVersion(1);
    const std::string msg = openError(b.build());
    EXPECT_HAS(msg, "m.gguf: ");
    EXPECT_HAS(msg, "version 1");
    EXPECT_HAS(msg, "not supported");
}

TEST(GgufFileErrorTest, UnknownVersionIsRefused) {
    GgufBuilder b;
    b.setVersion(7);
    EXPECT_HAS(openError(b.build()), "m.gguf: unsupported GGUF version 7");
}

TEST(GgufFileErrorTest, BigEndianIsRefused) {
    for (uint32_t swapped : {0x02000000u, 0x03000000u}) {
        GgufBuilder b;
        b.setVersion(swapped);
        const std::string msg = openError(b.build());
        EXPECT_HAS(msg, "m.gguf: big-endian");
        EXPECT_HAS(msg, "not supported");
    }
}

TEST(GgufFileErrorTest, TruncatedHeaderAtEveryLength) {
    const std::vector<uint8_t> full = everyTypeBuilder(3).build();
    // The header ends where the first tensor's data begins.
    GgufFile ok(full, "m.gguf");
    // Tensor data: 24 + 20 + 8 bytes at offsets 0, 32, 64, padded to 96.
    ASSERT_EQ(ok.tensors()[2].offset, 64u);
    const uint64_t dataStart = full.size() - 96;
    for (size_t n = 1; n < dataStart; ++n) {
        std::vector<uint8_t> cut(full.begin(), full.begin() + static_cast<long>(n));
        const std::string msg = openError(cut);
        ASSERT_EQ(msg.rfind("m.gguf: ", 0), 0u) << msg;
        if (n < 4) {
            EXPECT_HAS(msg, "not a GGUF file");
        } else {
            ASSERT_NE(msg.find("truncated"), std::string::npos) << "length " << n << ": " << msg;
        }
    }
}

TEST(GgufFileErrorTest, TruncatedHeaderNamesWhatIsCut) {
    GgufBuilder b;
    b.addString("general.name", "a fairly long model name");
    std::vector<uint8_t> bytes = b.build();
    bytes.resize(bytes.size() - 5);  // inside the string value
    const std::string msg = openError(bytes);
    EXPECT_HAS(msg, "m.gguf: truncated");
    EXPECT_HAS(msg, "'general.name'");
}

TEST(GgufFileErrorTest, TruncatedTensorData) {
    GgufBuilder b;
    b.addString("general.architecture", "llama");
    b.addTensorF32("tok", {8}, ramp(8, 1.0f));
    b.addTensorF32("blk.0.attn_q.weight", {8, 8}, ramp(64, 0.25f));  // 256 bytes, last
    const std::vector<uint8_t> full = b.build();
    const uint64_t size = full.size();
    const uint64_t begin = size - 256;
    std::vector<uint8_t> cut(full.begin(), full.end() - 100);
    const std::string expected = "m.gguf: truncated: tensor 'blk.0.attn_q.weight' needs bytes " +
                                 std::to_string(begin) + ".." + std::to_string(size) +
                                 ", file has " + std::to_string(size - 100);
    EXPECT_EQ(openError(cut), expected);

    TempFile tmp("cut.gguf");
    {
        std::ofstream out(tmp.path, std::ios::binary);
        out.write(reinterpret_cast<const char*>(cut.data()), cut.size());
    }
    const std::string msg = errorOf([&] { GgufFile f(tmp.path); });
    EXPECT_HAS(msg, tmp.path + ": truncated: tensor 'blk.0.attn_q.weight' needs bytes");
}

TEST(GgufFileErrorTest, EditedBuilderTensorDisagreesWithItsBytes) {
    GgufBuilder b;
    b.addTensorF32("w", {4, 4}, ramp(16, 1.0f));
    b.addTensorF32("last", {8}, ramp(8, 1.0f));
    ASSERT_EQ(b.tensorCount(), 2u);
    ASSERT_NE(b.findTensor("last"), nullptr);
    EXPECT_EQ(b.findTensor("absent"), nullptr);
    b.findTensor("last")->shape = {8, 8};  // claims 256 bytes, holds 32
    EXPECT_HAS(openError(b.build()), "m.gguf: truncated: tensor 'last' needs bytes");
}

TEST(GgufFileErrorTest, TensorBytesShorterThanShape) {
    GgufBuilder b;
    b.addTensor("short", static_cast<uint32_t>(kvlens::GgmlType::F32), {64},
                std::vector<uint8_t>(16, 0));
    const std::string msg = openError(b.build());
    EXPECT_HAS(msg, "m.gguf: truncated: tensor 'short' needs bytes");
}

TEST(GgufFileErrorTest, UnknownTensorTypeCode) {
    GgufBuilder b;
    b.addTensor("x", 99, {32}, std::vector<uint8_t>(64, 0));
    const std::string msg = openError(b.build());
    EXPECT_HAS(msg, "m.gguf: tensor 'x' has unknown type code 99 (ggml defines no such type)");
}

TEST(GgufFileErrorTest, KnownButUnsupportedTypeOpensAndRefusesToDequantize) {
    // IQ2_XXS: 66 bytes per 256 elements, listed but not dequantised.
    GgufBuilder b;
    b.addTensor("x", static_cast<uint32_t>(kvlens::GgmlType::IQ2_XXS), {512},
                std::vector<uint8_t>(132, 0));
    GgufFile f(b.build(), "m.gguf");
    ASSERT_EQ(f.tensors().size(), 1u);
    EXPECT_EQ(f.tensors()[0].nbytes, 132u);
    EXPECT_EQ(errorOf([&] { f.dequantize(f.tensors()[0]); }),
              "m.gguf: tensor 'x' has unsupported type IQ2_XXS "
              "(supported: F32, F16, BF16, Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, IQ4_NL, "
              "IQ4_XS)");
}

TEST(GgufFileErrorTest, BadAlignment) {
    for (uint32_t bad : {0u, 3u, 48u}) {
        GgufBuilder b;
        b.addUInt32("general.alignment", bad);
        EXPECT_EQ(openError(b.build()), "m.gguf: metadata key 'general.alignment' is " +
                                            std::to_string(bad) +
                                            ", must be a nonzero power of two");
    }
    GgufBuilder s;
    s.addString("general.alignment", "32");
    EXPECT_EQ(openError(s.build()),
              "m.gguf: metadata key 'general.alignment' is string, expected an integer");
}

TEST(GgufFileErrorTest, DuplicateKeyAndTensorName) {
    GgufBuilder b;
    b.addUInt32("llama.block_count", 1).addUInt32("llama.block_count", 2);
    EXPECT_EQ(openError(b.build()), "m.gguf: duplicate metadata key 'llama.block_count'");
    GgufBuilder t;
    t.addTensorF32("w", {1}, {1});
    t.addTensorF32("w", {1}, {2});
    EXPECT_EQ(openError(t.build()), "m.gguf: duplicate tensor name 'w'");
}

TEST(GgufFileErrorTest, AbsurdCountsFailFast) {
    {
        GgufBuilder b;
        b.overrideTensorCount(uint64_t(1) << 60);
        const std::string msg = openError(b.build());
        EXPECT_HAS(msg, "m.gguf: truncated: header claims 1152921504606846976 tensors");
    }
    {
        GgufBuilder b;
        b.overrideKvCount(uint64_t(1) << 60);
        EXPECT_HAS(openError(b.build()),
                   "m.gguf: truncated: header claims 1152921504606846976 metadata entries");
    }
    {
        GgufBuilder b;
        b.overrideKvCount(std::numeric_limits<uint64_t>::max());
        b.overrideTensorCount(std::numeric_limits<uint64_t>::max());
        EXPECT_HAS(openError(b.build()), "truncated: header claims");
    }
    {  // a string claiming 2^62 bytes
        GgufBuilder b;
        b.addRawMetadata("big.string", static_cast<uint32_t>(GgufValueType::String),
                         u64Bytes(uint64_t(1) << 62));
        const std::string msg = openError(b.build());
        EXPECT_HAS(msg, "m.gguf: truncated: metadata key 'big.string'");
        EXPECT_HAS(msg, "4611686018427387904");
    }
    {  // an array claiming 2^60 uint8 elements
        GgufBuilder b;
        std::vector<uint8_t> payload = u32Bytes(static_cast<uint32_t>(GgufValueType::UInt8));
        append(payload, u64Bytes(uint64_t(1) << 60));
        b.addRawMetadata("big.array", static_cast<uint32_t>(GgufValueType::Array), payload);
        const std::string msg = openError(b.build());
        EXPECT_HAS(msg,
                   "m.gguf: truncated: metadata key 'big.array' is an array of "
                   "1152921504606846976 uint8 elements");
    }
    {  // a tensor name claiming 2^63 bytes
        GgufBuilder b;
        std::vector<uint8_t> bytes = b.build();
        bytes[8] = 1;  // one tensor
        append(bytes, u64Bytes(uint64_t(1) << 63));
        append(bytes, std::vector<uint8_t>(40, 0));
        EXPECT_HAS(openError(bytes), "m.gguf: truncated: name of tensor #0");
    }
}

TEST(GgufFileErrorTest, DeeplyNestedArraysAreRefused) {
    // 9 levels of one-element arrays around a uint8.
    std::vector<uint8_t> payload;
    for (int i = 0; i < 9; ++i) {
        append(payload, u32Bytes(static_cast<uint32_t>(GgufValueType::Array)));
        append(payload, u64Bytes(1));
    }
    payload.resize(payload.size() - 12);
    append(payload, u32Bytes(static_cast<uint32_t>(GgufValueType::UInt8)));
    append(payload, u64Bytes(1));
    payload.push_back(7);
    GgufBuilder b;
    b.addRawMetadata("deep", static_cast<uint32_t>(GgufValueType::Array), payload);
    const std::string msg = openError(b.build());
    EXPECT_HAS(msg, "m.gguf: metadata key 'deep' has arrays nested deeper than 8");

    // 8 levels are fine.
    std::vector<uint8_t> ok;
    for (int i = 0; i < 7; ++i) {
        append(ok, u32Bytes(static_cast<uint32_t>(GgufValueType::Array)));
        append(ok, u64Bytes(1));
    }
    append(ok, u32Bytes(static_cast<uint32_t>(GgufValueType::UInt8)));
    append(ok, u64Bytes(1));
    ok.push_back(7);
    GgufBuilder g;
    g.addRawMetadata("deep", static_cast<uint32_t>(GgufValueType::Array), ok);
    GgufFile f(g.build(), "m.gguf");
    const GgufValue* v = f.find("deep");
    for (int i = 0; i < 7; ++i) v = &v->array.at(0);
    EXPECT_EQ(v->array.at(0).i, 7);
}

TEST(GgufFileErrorTest, BadValueTypesAndBools) {
    GgufBuilder b;
    b.addRawMetadata("weird", 13, {0, 0, 0, 0});
    EXPECT_EQ(openError(b.build()), "m.gguf: metadata key 'weird' has unknown value type 13");
    GgufBuilder a;
    std::vector<uint8_t> payload = u32Bytes(42);
    append(payload, u64Bytes(0));
    a.addRawMetadata("arr", static_cast<uint32_t>(GgufValueType::Array), payload);
    EXPECT_EQ(openError(a.build()),
              "m.gguf: metadata key 'arr' is an array of unknown value type 42");
    GgufBuilder c;
    c.addRawMetadata("flag", static_cast<uint32_t>(GgufValueType::Bool), {2});
    EXPECT_HAS(openError(c.build()), "m.gguf: metadata key 'flag' has bool value 2");
}

TEST(GgufFileErrorTest, NamesFromTheFileAreEscapedIntoOneLine) {
    GgufBuilder b;
    b.addUInt32("bad\nkey", 1).addUInt32("bad\nkey", 2);
    EXPECT_EQ(openError(b.build()), "m.gguf: duplicate metadata key 'bad\\x0akey'");
    GgufBuilder t;
    t.addTensor(std::string(300, 'w'), 99, {1}, {0});
    const std::string msg = openError(t.build());
    EXPECT_HAS(msg, "m.gguf: tensor '" + std::string(120, 'w') + "...' has unknown type code 99");
}

TEST(GgufFileErrorTest, BadTensorShapes) {
    const uint32_t f32 = static_cast<uint32_t>(kvlens::GgmlType::F32);
    const uint32_t q80 = static_cast<uint32_t>(kvlens::GgmlType::Q8_0);
    struct Case {
        std::vector<int64_t> shape;
        uint32_t type;
        std::string expected;
    };
    const Case cases[] = {
        {{}, f32, "m.gguf: tensor 'x' has 0 dimensions (must be 1 to 4)"},
        {{1, 1, 1, 1, 1}, f32, "m.gguf: tensor 'x' has 5 dimensions (must be 1 to 4)"},
        {{4, 0}, f32, "m.gguf: tensor 'x' dimension 1 is 0 (must be >= 1)"},
        {{-4}, f32, "m.gguf: tensor 'x' dimension 0 is -4 (must be >= 1)"},
        {{int64_t(1) << 32, int64_t(1) << 32},
         f32,
         "m.gguf: tensor 'x' shape [4294967296, 4294967296] has more than 2^63-1 elements"},
        {{33}, q80, "m.gguf: tensor 'x' row length 33 is not a multiple of the Q8_0 block size 32"},
    };
    for (const Case& c : cases) {
        GgufBuilder b;
        b.addTensor("x", c.type, c.shape, std::vector<uint8_t>(64, 0));
        EXPECT_EQ(openError(b.build()), c.expected);
    }
    {  // element count fits, byte count does not
        GgufBuilder b;
        b.addTensor("x", f32, {int64_t(1) << 62, 1}, {});
        EXPECT_EQ(openError(b.build()),
                  "m.gguf: tensor 'x' shape [4611686018427387904, 1] of type F32 needs more "
                  "than 2^64 bytes");
    }
}

TEST(GgufFileErrorTest, BadTensorOffsets) {
    {
        GgufBuilder b;
        b.tensor(b.addTensorF32("x", {4}, {1, 2, 3, 4})).offset = 17;
        EXPECT_EQ(openError(b.build()),
                  "m.gguf: tensor 'x' offset 17 is not a multiple of the alignment 32");
    }
    {
        GgufBuilder b;
        b.tensor(b.addTensorF32("x", {4}, {1, 2, 3, 4})).offset = ~uint64_t(31);
        EXPECT_HAS(openError(b.build()),
                   "m.gguf: truncated: tensor 'x' offset 18446744073709551584 is beyond the end");
    }
    {
        GgufBuilder b;
        b.tensor(b.addTensorF32("x", {4}, {1, 2, 3, 4})).offset = uint64_t(1) << 63;
        EXPECT_HAS(openError(b.build()),
                   "m.gguf: truncated: tensor 'x' needs bytes 9223372036854775872..");
    }
}

TEST(GgufFileErrorTest, TypedGettersNameKeyAndProblem) {
    GgufBuilder b;
    b.addString("k", "text").addInt32("neg", -3).addFloat32Array("fa", {1.0f}).addUInt8("n", 1);
    GgufFile f(b.build(), "m.gguf");
    EXPECT_EQ(errorOf([&] { f.getUInt("llama.block_count"); }),
              "m.gguf: metadata key 'llama.block_count' is missing");
    EXPECT_EQ(errorOf([&] { f.getUInt("k"); }),
              "m.gguf: metadata key 'k' is string, expected an integer");
    EXPECT_EQ(errorOf([&] { f.getUIntOr("k", 1); }),
              "m.gguf: metadata key 'k' is string, expected an integer");
    EXPECT_EQ(errorOf([&] { f.getUInt("neg"); }),
              "m.gguf: metadata key 'neg' is -3, expected a non-negative integer");
    EXPECT_EQ(errorOf([&] { f.getFloat("k"); }),
              "m.gguf: metadata key 'k' is string, expected a number");
    EXPECT_EQ(errorOf([&] { f.getBool("n"); }),
              "m.gguf: metadata key 'n' is uint8, expected a bool");
    EXPECT_EQ(errorOf([&] { f.getString("n"); }),
              "m.gguf: metadata key 'n' is uint8, expected a string");
    EXPECT_EQ(errorOf([&] { f.getStringArray("fa"); }),
              "m.gguf: metadata key 'fa' is array of float32, expected an array of strings");
    EXPECT_EQ(errorOf([&] { f.getNumberArray("k"); }),
              "m.gguf: metadata key 'k' is string, expected an array of numbers");
    EXPECT_EQ(errorOf([&] { f.getStringArray("missing"); }),
              "m.gguf: metadata key 'missing' is missing");
}

// ------------------------------------------------------------------ real model

TEST(GgufFileTest, Stories260K) {
    const std::string path = KVLENS_SHARED_DIR "/models/stories260K.gguf";
    if (std::ifstream(path).fail()) GTEST_SKIP() << path << " is not present";
    GgufFile f(path);
    EXPECT_EQ(f.version(), 3u);
    EXPECT_EQ(f.alignment(), 32u);
    EXPECT_EQ(f.getString("general.architecture"), "llama");
    EXPECT_EQ(f.getUInt("llama.block_count"), 5u);
    EXPECT_EQ(f.getUInt("llama.attention.head_count"), 8u);
    EXPECT_EQ(f.getUInt("llama.attention.head_count_kv"), 4u);
    EXPECT_EQ(f.getUInt("llama.embedding_length"), 64u);
    EXPECT_EQ(f.getUInt("llama.feed_forward_length"), 172u);
    EXPECT_EQ(f.getUInt("llama.context_length"), 2048u);
    EXPECT_EQ(f.getUInt("llama.rope.dimension_count"), 8u);
    EXPECT_NEAR(f.getFloat("llama.attention.layer_norm_rms_epsilon"), 1e-5, 1e-12);
    EXPECT_EQ(f.getString("tokenizer.ggml.model"), "llama");
    EXPECT_EQ(f.getStringArray("tokenizer.ggml.tokens").size(), 512u);
    EXPECT_EQ(f.getNumberArray("tokenizer.ggml.scores").size(), 512u);
    EXPECT_EQ(f.getNumberArray("tokenizer.ggml.token_type").size(), 512u);
    EXPECT_EQ(f.getUInt("tokenizer.ggml.bos_token_id"), 1u);
    EXPECT_EQ(f.getUInt("tokenizer.ggml.eos_token_id"), 2u);

    EXPECT_EQ(f.tensors().size(), 3u + 5u * 9u);
    const auto* emb = f.findTensor("token_embd.weight");
    ASSERT_NE(emb, nullptr);
    EXPECT_EQ(emb->shape, (std::vector<int64_t>{64, 512}));
    ASSERT_NE(f.findTensor("blk.4.ffn_down.weight"), nullptr);
    EXPECT_EQ(f.findTensor("blk.4.ffn_down.weight")->shape, (std::vector<int64_t>{172, 64}));
    for (const auto& t : f.tensors()) {
        const std::vector<float> v = f.dequantize(t);
        ASSERT_EQ(static_cast<int64_t>(v.size()), t.numel()) << t.name;
        for (float x : v) ASSERT_TRUE(std::isfinite(x)) << t.name;
    }
}
