// Files of every common quant type (tests/data/gguf, made by llama-quantize;
// make.sh), and of real architectures with byte-level BPE vocabularies (a
// Llama-3-style llama with rope_freqs in Q4_K_M, a qwen2 with biases in Q8_0),
// against llama.cpp's own run of them (llamacpp-reference, kept as
// JSON beside each file): the prompt's token ids are identical, and KV Lens's
// greedy tokens equal llama.cpp's up to the first near-tie, where the two
// best logits are closer than rounding differences between the two
// implementations may move them.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "engine/model/Generator.h"
#include "engine/model/ModelLoader.h"

namespace kvlens {
namespace {

constexpr char kPrompt[] =
    "Once upon a time, there was a little girl named Lily. She loved to play";
// Below this gap between llama.cpp's top two logits a step may go either way.
constexpr double kNearTie = 1e-3;

class QuantParity : public ::testing::TestWithParam<const char*> {};

TEST_P(QuantParity, PromptIdsAndGreedyTokensEqualLlamaCpps) {
    const std::string stem = std::string(KVLENS_SOURCE_DIR) + "/tests/data/gguf/tiny-" + GetParam();
    std::ifstream in(stem + ".llamacpp.json");
    ASSERT_TRUE(in.good()) << stem << ".llamacpp.json";
    const nlohmann::json ref = nlohmann::json::parse(in, nullptr, true, true);
    LoadedModel loaded = loadModel(stem + ".gguf", c10::Device(c10::kCPU), c10::kFloat);
    const std::vector<int32_t> ids = loaded.tokenizer->encode(kPrompt, loaded.tokenizer->addBosByDefault());
    ASSERT_EQ(ids, ref["prompt_token_ids"].get<std::vector<int32_t>>());
    const auto expected = ref["generated_token_ids"].get<std::vector<int32_t>>();
    const auto top1 = ref["step_top1_logit"].get<std::vector<double>>();
    const auto top2 = ref["step_top2_logit"].get<std::vector<double>>();
    Generator generator(*loaded.model);
    GenerationOptions options;
    options.maxNewTokens = int64_t(expected.size());
    options.ignoreEos = true;
    options.stopIds = loaded.tokenizer->endOfGeneration();
    const GenerationResult result = generator.generate(ids, options);
    ASSERT_EQ(result.tokens.size(), expected.size());
    size_t agreed = 0;
    for (; agreed < expected.size(); ++agreed) {
        if (top1[agreed] - top2[agreed] < kNearTie) break;  // a near-tie: later steps may differ
        ASSERT_EQ(result.tokens[agreed], expected[agreed]) << GetParam() << " step " << agreed;
    }
    RecordProperty("steps_compared",
                   std::to_string(agreed) + "/" + std::to_string(expected.size()));
    EXPECT_GE(agreed, 4u) << "too few steps before a near-tie to say anything";
}

INSTANTIATE_TEST_SUITE_P(QuantTypes, QuantParity,
                         ::testing::Values("Q4_1", "Q5_0", "Q5_1", "Q2_K", "Q3_K_M", "Q5_K_M",
                                           "IQ4_NL", "IQ4_XS", "llama3-Q4_K_M", "qwen2-Q8_0"));

}  // namespace
}  // namespace kvlens
