// Every dequantiser against ggml's own values for real blocks written by
// llama-quantize: tests/data/gguf holds small files of each quant type (with
// llama.cpp's fallback types for rows that are not a multiple of 256) and what
// ggml's to_float made of each tensor (make.sh says how). A ggml built with
// -march=native may fuse q*d + m into one FMA where KV Lens rounds twice, so
// the test allows a few ulp and reports how many samples are bit-identical
// (all of them, against the llama.cpp build of ../shared/tools).
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "engine/gguf/Dequantize.h"
#include "engine/gguf/GgufFile.h"

namespace kvlens {
namespace {

std::string dataDir() { return std::string(KVLENS_SOURCE_DIR) + "/tests/data/gguf/"; }

class DequantizeFile : public ::testing::TestWithParam<const char*> {};

TEST_P(DequantizeFile, EveryTensorEqualsGgmlsValues) {
    const std::string stem = dataDir() + "tiny-" + GetParam();
    GgufFile file(stem + ".gguf");
    std::ifstream in(stem + ".ggml.json");
    ASSERT_TRUE(in.good()) << stem << ".ggml.json";
    const nlohmann::json ref = nlohmann::json::parse(in);
    ASSERT_EQ(ref["tensors"].size(), file.tensors().size());
    int64_t samples = 0, identical = 0;
    for (const nlohmann::json& t : ref["tensors"]) {
        const std::string name = t["name"];
        const GgufTensorInfo* info = file.findTensor(name);
        ASSERT_NE(info, nullptr) << name;
        std::string type = ggmlTypeName(info->type);
        std::string want = t["type"];
        for (char& c : want) c = char(std::toupper(static_cast<unsigned char>(c)));
        EXPECT_EQ(type, want) << name;
        const std::vector<float> values = file.dequantize(*info);
        ASSERT_EQ(int64_t(values.size()), t["n"].get<int64_t>()) << name;
        double largest = 0;
        for (const auto& s : t["samples"])
            largest = std::max(largest, std::fabs(s[1].get<double>()));
        for (const auto& s : t["samples"]) {
            const int64_t at = s[0];
            ASSERT_LT(at, int64_t(values.size())) << name << ": a sample outside the tensor";
            const float expected = s[1].get<float>();
            const float got = values[size_t(at)];
            ++samples;
            identical += got == expected;
            // A few ulp of the tensor's scale: FMA against two roundings.
            EXPECT_NEAR(got, expected, 4e-7 * largest + 1e-30)
                << name << " (" << type << ") element " << at;
        }
        double sum = 0;
        for (float v : values) sum += v;
        EXPECT_NEAR(sum, t["sum"].get<double>(),
                    1e-6 * std::max(1.0, std::fabs(t["sum"].get<double>())) + 1e-4)
            << name;
    }
    RecordProperty("bit_identical_samples",
                   std::to_string(identical) + "/" + std::to_string(samples));
    EXPECT_GT(samples, 0);
}

INSTANTIATE_TEST_SUITE_P(QuantTypes, DequantizeFile,
                         ::testing::Values("Q4_1", "Q5_0", "Q5_1", "Q2_K", "Q3_K_M", "Q5_K_M",
                                           "IQ4_NL", "IQ4_XS", "Q8_0", "Q6_K", "Q5_K_S", "Q4_K_S",
                                           "Q4_0", "Q3_K_L"));

}  // namespace
}  // namespace kvlens
