// RoPE scaling. RopeFrequencies against a double-precision reference written from
// YaRN's published definition (Peng et al. 2023, as Hugging Face's
// _compute_yarn_parameters and the authors' LlamaYaRNScaledRotaryEmbedding write it),
// for linear scaling and for Llama 3.1's frequency factors; and a YaRN file
// (tests/data/gguf/tiny-yarn-F32.gguf, a qwen2 with rope.scaling.type yarn, factor 4,
// original context 64, attn_factor 1.1; make.sh) against llama.cpp's own run of it:
// the first step's logits and the greedy tokens up to the first near-tie.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>

#include "core/Error.h"
#include "engine/model/Generator.h"
#include "engine/model/ModelConfig.h"
#include "engine/model/ModelLoader.h"
#include "engine/model/RopeFrequencies.h"
#include "support/TinyModelFile.h"

namespace kvlens {
namespace {

struct Reference {
    std::vector<double> inverse;
    double magnitude = 1.0;
};

// YaRN in double precision, from its definition.
Reference yarnReference(int64_t dim, double base, double factor, int64_t originalContext, double attnFactor) {
    const double betaFast = 32, betaSlow = 1;
    auto correctionDim = [&](double rotations) {
        return dim * std::log(double(originalContext) / (rotations * 2 * M_PI)) / (2 * std::log(base));
    };
    const double low = std::max(0.0, std::floor(correctionDim(betaFast)));
    double high = std::min(double(dim - 1), std::ceil(correctionDim(betaSlow)));
    if (low == high) high += 0.001;
    Reference r;
    for (int64_t i = 0; i < dim / 2; ++i) {
        const double extrapolated = 1.0 / std::pow(base, double(2 * i) / double(dim));
        const double interpolated = extrapolated / factor;
        const double ramp = std::clamp((double(i) - low) / (high - low), 0.0, 1.0);
        const double extrapolationShare = 1.0 - ramp;
        r.inverse.push_back(interpolated * (1 - extrapolationShare) + extrapolated * extrapolationShare);
    }
    r.magnitude = attnFactor * (0.1 * std::log(factor) + 1.0);
    return r;
}

void expectClose(const RopeFrequencies& got, const Reference& want, const std::string& what) {
    ASSERT_EQ(got.inverse.size(), want.inverse.size()) << what;
    for (size_t i = 0; i < want.inverse.size(); ++i)
        EXPECT_NEAR(got.inverse[i], want.inverse[i], 4e-7 * want.inverse[i]) << what << " pair " << i;
    EXPECT_NEAR(got.magnitude, want.magnitude, 1e-6) << what;
}

ModelConfig config(int64_t ropeDim, double base) {
    ModelConfig c;
    c.ropeDim = ropeDim;
    c.ropeTheta = base;
    c.contextLength = 131072;
    return c;
}

TEST(RopeScaling, YarnFrequenciesEqualTheDefinition) {
    struct Case { int64_t dim; double base, factor; int64_t original; double attn; };
    for (const Case& k : {Case{64, 1e4, 4, 64, 1.1}, Case{128, 1e6, 4, 32768, 1.0}, Case{128, 5e5, 8, 8192, 1.0},
                          Case{64, 1e4, 16, 2048, 0.9}, Case{128, 1e4, 2, 4096, 1.0}}) {
        ModelConfig c = config(k.dim, k.base);
        c.ropeScaling = RopeScaling::Yarn;
        c.ropeScaleFactor = k.factor;
        c.ropeOriginalContext = k.original;
        c.ropeAttnFactor = k.attn;
        const std::string what = "dim " + std::to_string(k.dim) + " base " + std::to_string(k.base) +
                                 " factor " + std::to_string(k.factor) + " original " + std::to_string(k.original);
        expectClose(RopeFrequencies::of(c, {}), yarnReference(k.dim, k.base, k.factor, k.original, k.attn), what);
    }
}

TEST(RopeScaling, LinearScalingAndFrequencyFactorsDivideTheFrequencies) {
    ModelConfig c = config(8, 1e4);
    const RopeFrequencies plain = RopeFrequencies::of(c, {});
    EXPECT_EQ(plain.magnitude, 1.0f);
    const std::vector<float> factors = {1, 2, 4, 8};
    const RopeFrequencies llama3 = RopeFrequencies::of(c, factors);
    c.ropeScaling = RopeScaling::Linear;
    c.ropeScaleFactor = 4;
    const RopeFrequencies linear = RopeFrequencies::of(c, {});
    EXPECT_EQ(linear.magnitude, 1.0f);
    for (int i = 0; i < 4; ++i) {
        const double want = 1.0 / std::pow(1e4, 2.0 * i / 8);
        EXPECT_NEAR(plain.inverse[i], want, 1e-7 * want);
        EXPECT_NEAR(llama3.inverse[i], want / factors[i], 1e-7 * want);
        EXPECT_NEAR(linear.inverse[i], want / 4, 1e-7 * want);
    }
}

TEST(RopeScaling, YarnFileAgreesWithLlamaCpp) {
    const std::string stem = std::string(KVLENS_SOURCE_DIR) + "/tests/data/gguf/tiny-yarn-F32";
    std::ifstream in(stem + ".llamacpp.json");
    ASSERT_TRUE(in.good()) << stem << ".llamacpp.json";
    const nlohmann::json ref = nlohmann::json::parse(in);
    LoadedModel loaded = loadModel(stem + ".gguf", c10::Device(c10::kCPU), c10::kFloat);
    const ModelConfig& c = loaded.model->config();
    EXPECT_EQ(c.ropeScaling, RopeScaling::Yarn);
    EXPECT_EQ(c.ropeScaleFactor, 4.0);
    EXPECT_EQ(c.ropeOriginalContext, 64);
    EXPECT_NEAR(c.ropeAttnFactor, 1.1, 1e-6);

    const std::vector<int32_t> ids =
        loaded.tokenizer->encode("Once upon a time, there was a little girl named Lily. She loved to play", true);
    ASSERT_EQ(ids, ref["prompt_token_ids"].get<std::vector<int32_t>>());
    // The first step's eight best logits, as llama.cpp computed them.
    KvCache cache = loaded.model->makeCache(int64_t(ids.size()));
    const at::Tensor logits = loaded.model->forward(ids, cache);
    for (const auto& pair : ref["first_step_top8"]) {
        const int32_t id = pair[0].get<int32_t>();
        EXPECT_NEAR(logits[id].item<double>(), pair[1].get<double>(), 1e-3) << "token " << id;
    }
    const auto expected = ref["generated_token_ids"].get<std::vector<int32_t>>();
    const auto top1 = ref["step_top1_logit"].get<std::vector<double>>();
    const auto top2 = ref["step_top2_logit"].get<std::vector<double>>();
    Generator generator(*loaded.model);
    GenerationOptions options;
    options.maxNewTokens = int64_t(expected.size());
    options.ignoreEos = true;
    const GenerationResult result = generator.generate(ids, options);
    ASSERT_EQ(result.tokens.size(), expected.size());
    size_t agreed = 0;
    for (; agreed < expected.size(); ++agreed) {
        if (top1[agreed] - top2[agreed] < 1e-3) break;
        ASSERT_EQ(result.tokens[agreed], expected[agreed]) << "step " << agreed;
    }
    EXPECT_GE(agreed, 8u);
}

TEST(RopeScaling, BadScalingValuesAreOneLineNamingTheKey) {
    auto loadError = [](test::TinyModelFile& m, const std::string& name) -> std::string {
        const std::string path = test::testOutputPath(name);
        m.builder.writeFile(path);
        try {
            loadModel(path, c10::Device(c10::kCPU), c10::kFloat);
        } catch (const Error& e) {
            return e.what();
        }
        return "no error";
    };
    test::TinyModelFile small = test::makeTinyModelFile({});
    small.builder.addString("llama.rope.scaling.type", "yarn").addFloat32("llama.rope.scaling.factor", 0.5f);
    EXPECT_EQ(loadError(small, "yarn_factor.gguf"),
              test::testOutputPath("yarn_factor.gguf") + ": llama.rope.scaling.factor must be at least 1 for yarn scaling");
    test::TinyModelFile attn = test::makeTinyModelFile({});
    attn.builder.addString("llama.rope.scaling.type", "yarn").addFloat32("llama.rope.scaling.attn_factor", -1.0f);
    EXPECT_EQ(loadError(attn, "yarn_attn.gguf"),
              test::testOutputPath("yarn_attn.gguf") + ": llama.rope.scaling.attn_factor must be positive");
}

}  // namespace
}  // namespace kvlens
