// The safetensors reader on images built by HfFolderWriter: a good file read
// back exactly, and headers broken one way at a time, each refused in one line
// naming the file and what is wrong.
#include <gtest/gtest.h>

#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "core/Error.h"
#include "support/OneLineError.h"
#include "engine/hf/SafetensorsFile.h"
#include "support/HfFolderWriter.h"
#include "support/TinyModelFile.h"

namespace kvlens {
namespace {

using test::buildSafetensors;
using test::encodeValues;
using test::SafetensorsEntry;

using test::errorOf;

// An image whose header is `header` verbatim, followed by `data` bytes.
std::vector<uint8_t> withHeader(const std::string& header, size_t data) {
    std::vector<uint8_t> out(8);
    for (int i = 0; i < 8; ++i) out[size_t(i)] = static_cast<uint8_t>(uint64_t(header.size()) >> (8 * i));
    out.insert(out.end(), header.begin(), header.end());
    out.resize(out.size() + data, 0);
    return out;
}

std::string parseError(const std::vector<uint8_t>& bytes) {
    return errorOf([&] { SafetensorsFile f(bytes, "w.safetensors"); });
}

TEST(SafetensorsFile, ReadsWhatTheWriterWrote) {
    const std::vector<float> a = {1.0f, -2.5f, 3.25f, 0.0f, 1e-3f, 7.0f};
    const std::vector<SafetensorsEntry> entries = {{"a", "F32", {2, 3}, encodeValues(a, "F32")},
                                                   {"b", "BF16", {3}, encodeValues({1.0f, 2.0f, -4.0f}, "BF16")},
                                                   {"c", "F16", {1, 2}, encodeValues({0.5f, -0.25f}, "F16")},
                                                   {"scalar", "I64", {}, std::vector<uint8_t>(8, 0)}};
    const auto bytes = buildSafetensors(entries, R"({"format": "pt"})");
    const std::string path = test::testOutputPath("safetensors_good.safetensors");
    test::writeBytes(path, bytes);
    SafetensorsFile f(path);
    EXPECT_EQ(f.fileSize(), bytes.size());
    ASSERT_EQ(f.tensors().size(), 4u);
    EXPECT_EQ(f.metadata().at("format"), "pt");
    const SafetensorsTensor* t = f.find("a");
    ASSERT_NE(t, nullptr);
    EXPECT_EQ(t->dtype, "F32");
    EXPECT_EQ(t->shape, (std::vector<int64_t>{2, 3}));
    EXPECT_EQ(t->numel(), 6);
    std::vector<float> back(6);
    std::memcpy(back.data(), f.data(*t), 24);
    EXPECT_EQ(back, a);
    const SafetensorsTensor* b = f.find("b");
    ASSERT_NE(b, nullptr);
    uint16_t first = 0;
    std::memcpy(&first, f.data(*b), 2);
    EXPECT_EQ(first, 0x3F80);  // bf16 1.0
    EXPECT_EQ(f.find("scalar")->numel(), 1);
    EXPECT_EQ(f.find("missing"), nullptr);
}

TEST(SafetensorsFile, BrokenHeadersAreOneLineEach) {
    const std::string entry = R"({"t": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}})";
    EXPECT_EQ(parseError({1, 2, 3}), "w.safetensors: 3 bytes, too short for a safetensors file (8-byte header length)");
    auto big = withHeader(entry, 8);
    big[0] = 0xFF;
    big[5] = 0x01;
    EXPECT_NE(parseError(big).find("w.safetensors: the header length"), std::string::npos);
    EXPECT_NE(parseError(big).find("runs past the end of the file"), std::string::npos);
    EXPECT_EQ(parseError(withHeader("[1, 2]", 0)), "w.safetensors: the header is not a JSON object; not a safetensors file");
    EXPECT_NE(parseError(withHeader("{\"t\": {\"dtype\": ", 0)).find("w.safetensors: the header is not valid JSON: "),
              std::string::npos);
    EXPECT_EQ(parseError(withHeader(R"({"t": 3})", 0)),
              "w.safetensors: tensor 't' is not an object with dtype, shape and data_offsets");
    EXPECT_EQ(parseError(withHeader(R"({"t": {"shape": [2], "data_offsets": [0, 8]}})", 8)),
              "w.safetensors: tensor 't' has no dtype string");
    EXPECT_EQ(parseError(withHeader(R"({"t": {"dtype": "F32", "data_offsets": [0, 8]}})", 8)),
              "w.safetensors: tensor 't' has no shape array");
    EXPECT_EQ(parseError(withHeader(R"({"t": {"dtype": "F32", "shape": [2], "data_offsets": [0]}})", 8)),
              "w.safetensors: tensor 't' has no data_offsets [begin, end]");
    EXPECT_EQ(parseError(withHeader(R"({"t": {"dtype": "Q4", "shape": [2], "data_offsets": [0, 8]}})", 8)),
              "w.safetensors: tensor 't' has unknown dtype 'Q4'");
    EXPECT_EQ(parseError(withHeader(R"({"t": {"dtype": "F32", "shape": [-2], "data_offsets": [0, 8]}})", 8)),
              "w.safetensors: tensor 't' has a shape entry that is not a non-negative integer");
    EXPECT_EQ(parseError(withHeader(R"({"t": {"dtype": "F32", "shape": [2], "data_offsets": [0, 80]}})", 8)),
              "w.safetensors: tensor 't' has data_offsets [0, 80] outside the data section of 8 bytes");
    EXPECT_EQ(parseError(withHeader(R"({"t": {"dtype": "F32", "shape": [3], "data_offsets": [0, 8]}})", 8)),
              "w.safetensors: tensor 't' holds 8 bytes but its shape and dtype F32 need 12");
    EXPECT_EQ(parseError(withHeader(R"({"t": {"dtype": "F32", "shape": [4294967296, 4294967296], "data_offsets": [0, 8]}})", 8)),
              "w.safetensors: tensor 't' has a shape whose size overflows");
    // 2^62 elements pass the shape check, but 4 bytes each is 2^64: compared by division.
    EXPECT_EQ(parseError(withHeader(R"({"t": {"dtype": "F32", "shape": [2147483648, 2147483648], "data_offsets": [0, 0]}})", 0)),
              "w.safetensors: tensor 't' holds 0 bytes but its shape and dtype F32 need more than 2^64");
    EXPECT_EQ(parseError(withHeader(
                  R"({"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}, "b": {"dtype": "F32", "shape": [2], "data_offsets": [4, 12]}})",
                  12)),
              "w.safetensors: tensors 'a' and 'b' overlap in the data section");
    EXPECT_EQ(parseError(withHeader(R"({"__metadata__": {"format": 1}})", 0)),
              "w.safetensors: __metadata__ 'format' is not a string");
    // A truncated file: the data section ends before the tensor does.
    auto whole = buildSafetensors({{"t", "F32", {4}, encodeValues({1, 2, 3, 4}, "F32")}});
    whole.resize(whole.size() - 4);
    EXPECT_EQ(parseError(whole), "w.safetensors: tensor 't' has data_offsets [0, 16] outside the data section of 12 bytes");
}

TEST(SafetensorsFile, FilesThatCannotBeOpenedNameThemselves) {
    EXPECT_EQ(errorOf([] { SafetensorsFile f("/nonexistent/model.safetensors"); }),
              "/nonexistent/model.safetensors: cannot open: No such file or directory");
    EXPECT_EQ(errorOf([] { SafetensorsFile f("/"); }), "/: cannot open: Is a directory");
    const std::string empty = test::testOutputPath("safetensors_empty.safetensors");
    test::writeBytes(empty, {});
    EXPECT_EQ(errorOf([&] { SafetensorsFile f(empty); }),
              empty + ": 0 bytes, too short for a safetensors file (8-byte header length)");
}

}  // namespace
}  // namespace kvlens
