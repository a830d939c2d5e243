// Token choice: greedy tie-breaking, and that sampling draws from the
// distribution the flags describe.
#include <gtest/gtest.h>

#include <cmath>
#include <map>

#include "core/Error.h"
#include "engine/model/Sampler.h"

namespace kvlens {
namespace {

at::Tensor logitsOf(std::vector<float> v) { return at::tensor(v); }

TEST(Sampler, GreedyTakesTheLowestIdAmongTies) {
    Sampler s(SamplingParams{});
    EXPECT_EQ(s.sample(logitsOf({1.0f, 3.0f, 3.0f, 0.0f})), 1);
    EXPECT_EQ(s.sample(logitsOf({-2.0f, -2.0f})), 0);
    EXPECT_EQ(s.sample(logitsOf({0.0f, 0.0f, 5.0f})), 2);
}

std::map<int32_t, int> draw(SamplingParams p, const std::vector<float>& logits, int n) {
    Sampler s(p);
    std::map<int32_t, int> counts;
    for (int i = 0; i < n; ++i) counts[s.sample(logitsOf(logits))]++;
    return counts;
}

TEST(Sampler, TemperatureSamplesTheSoftmax) {
    SamplingParams p;
    p.temperature = 2.0;
    p.seed = 3;
    const std::vector<float> logits = {0.0f, 2.0f, 4.0f};
    const int n = 20000;
    const auto counts = draw(p, logits, n);
    double z = 0.0;
    for (float l : logits) z += std::exp(l / 2.0);
    for (int32_t id = 0; id < 3; ++id) {
        const double expected = std::exp(logits[id] / 2.0) / z;
        const double got = double(counts.count(id) ? counts.at(id) : 0) / n;
        // 5 standard deviations of a binomial proportion.
        EXPECT_NEAR(got, expected, 5 * std::sqrt(expected * (1 - expected) / n)) << "id " << id;
    }
}

TEST(Sampler, TopKAndTopPCutTheTail) {
    SamplingParams p;
    p.temperature = 1.0;
    p.seed = 4;
    p.topK = 2;
    auto counts = draw(p, {3.0f, 0.0f, 2.9f, 1.0f}, 2000);
    EXPECT_EQ(counts.size(), 2u);
    EXPECT_GT(counts[0], 0);
    EXPECT_GT(counts[2], 0);

    p.topK = 0;
    p.topP = 0.5;  // the top token alone holds ~0.84 of the mass
    counts = draw(p, {4.0f, 2.0f, 1.0f, 0.0f}, 500);
    EXPECT_EQ(counts.size(), 1u);
    EXPECT_EQ(counts[0], 500);
}

TEST(Sampler, SameSeedSameDraws) {
    SamplingParams p;
    p.temperature = 1.0;
    p.seed = 9;
    EXPECT_EQ(draw(p, {0.1f, 0.2f, 0.3f, 0.4f}, 100), draw(p, {0.1f, 0.2f, 0.3f, 0.4f}, 100));
}

TEST(Sampler, RejectsBadParametersNamingTheFlag) {
    SamplingParams p;
    p.temperature = -1;
    EXPECT_THROW(Sampler{p}, Error);
    p = {};
    p.topP = 0.0;
    try {
        Sampler s(p);
        FAIL();
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("--top-p"), std::string::npos);
    }
}

}  // namespace
}  // namespace kvlens
