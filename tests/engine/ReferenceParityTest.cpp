// stories260K against the reference outputs of an independent implementation
// (llama.cpp, f32): greedy token ids exactly, next-token logits within 1e-4.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "engine/model/Generator.h"
#include "engine/model/ModelLoader.h"

namespace kvlens {
namespace {

const std::string kModel = std::string(KVLENS_SHARED_DIR) + "/models/stories260K.gguf";
const std::string kReference =
    std::string(KVLENS_SHARED_DIR) + "/reference/stories260K_greedy_once_upon_a_time.json";

class ReferenceParity : public ::testing::Test {
protected:
    void SetUp() override {
        if (!std::ifstream(kModel) || !std::ifstream(kReference)) {
            GTEST_SKIP() << "needs " << kModel << " and " << kReference
                         << " (../shared beside the checkout)";
        }
        reference_ = nlohmann::json::parse(std::ifstream(kReference));
        loaded_ = loadModel(kModel, c10::Device(c10::kCPU), c10::kFloat);
    }
    nlohmann::json reference_;
    LoadedModel loaded_;
};

TEST_F(ReferenceParity, PromptTokensMatch) {
    const auto ids = loaded_.tokenizer->encode(reference_["prompt"].get<std::string>(), true);
    EXPECT_EQ(ids, reference_["prompt_token_ids"].get<std::vector<int32_t>>());
}

TEST_F(ReferenceParity, NextTokenLogitsWithin1e4) {
    const auto ids = reference_["prompt_token_ids"].get<std::vector<int32_t>>();
    const auto expected = reference_["next_token_logits_after_prompt"].get<std::vector<double>>();
    KvCache cache = loaded_.model->makeCache(16);
    at::Tensor logits = loaded_.model->forward(ids, cache);
    ASSERT_EQ(logits.numel(), int64_t(expected.size()));
    double worst = 0.0;
    for (size_t i = 0; i < expected.size(); ++i) {
        worst = std::max(worst, std::abs(double(logits[i].item<float>()) - expected[i]));
    }
    EXPECT_LE(worst, 1e-4);
    RecordProperty("max_abs_logit_error", std::to_string(worst));
}

TEST_F(ReferenceParity, GreedyGenerationReproducesAllTokenIds) {
    const auto ids = reference_["prompt_token_ids"].get<std::vector<int32_t>>();
    const auto expected = reference_["generated_token_ids"].get<std::vector<int32_t>>();
    Generator generator(*loaded_.model);
    GenerationOptions options;
    options.maxNewTokens = static_cast<int64_t>(expected.size());
    options.ignoreEos = true;  // the reference does not stop at end-of-sequence tokens
    options.stopIds = loaded_.tokenizer->endOfGeneration();
    const GenerationResult result = generator.generate(ids, options);
    EXPECT_EQ(result.tokens, expected);
    EXPECT_EQ(loaded_.tokenizer->decode(result.tokens), reference_["generated_text"].get<std::string>());
}

}  // namespace
}  // namespace kvlens
