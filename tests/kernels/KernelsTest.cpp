// Each CPU kernel body against LibTorch's composite ops on the same inputs.
#include <ATen/CPUGeneratorImpl.h>
#include <ATen/Parallel.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <utility>

#include "kernels/CausalAttention.h"
#include "kernels/CpuFeatures.h"
#include "kernels/CpuMath.h"
#include "kernels/GeluMul.h"
#include "kernels/Linear.h"
#include "kernels/RmsNorm.h"
#include "kernels/Rope.h"
#include "kernels/SiluMul.h"

namespace kvlens::kernels {
namespace {

at::Tensor randn(std::vector<int64_t> shape, uint64_t seed) {
    at::Generator gen = at::detail::createCPUGenerator(seed);
    return at::randn(shape, gen);
}

double maxAbs(const at::Tensor& a) { return a.abs().max().item<double>(); }

TEST(CpuMath, Bf16RoundsToNearestEvenLikeLibTorch) {
    at::Tensor x = randn({4096}, 1) * 100;
    at::Tensor ours = at::empty({4096}, at::kBFloat16);
    auto* o = reinterpret_cast<uint16_t*>(ours.data_ptr<at::BFloat16>());
    for (int64_t i = 0; i < 4096; ++i) o[i] = floatToBf16(x[i].item<float>());
    EXPECT_TRUE(at::equal(ours, x.to(at::kBFloat16)));
    EXPECT_EQ(bf16ToFloat(0x3f80), 1.0f);
}

class LinearRows : public ::testing::TestWithParam<int64_t> {};

TEST_P(LinearRows, Bf16KernelMatchesFp32ProductOfTheSameBf16Values) {
    if (!CpuFeatures::detect().avx512bf16) GTEST_SKIP() << "this CPU has no AVX512-BF16: the composite path runs instead";
    const int64_t M = GetParam();
    for (int64_t in : {64, 100, 2048}) {  // 100: a tail of 4 after three full blocks of 32
        at::Tensor x = randn({M, in}, 2).to(at::kBFloat16), w = randn({37, in}, 3).to(at::kBFloat16);
        at::Tensor b = randn({37}, 4);
        at::Tensor expected = at::linear(x.to(at::kFloat), w.to(at::kFloat), b);
        at::Tensor got = kernels::linear(x, w, b, at::kFloat);
        ASSERT_EQ(got.sizes(), expected.sizes());
        EXPECT_LT(maxAbs(got - expected), 1e-3 * std::sqrt(double(in))) << "M=" << M << " in=" << in;
        EXPECT_EQ(kernels::linear(x, w).scalar_type(), at::kBFloat16);
    }
}

INSTANTIATE_TEST_SUITE_P(Rows, LinearRows, ::testing::Values(1, 2, 3, 4));

TEST(Linear, ManyRowsAndFp32UseLibTorch) {
    at::Tensor x = randn({9, 16}, 5), w = randn({8, 16}, 6);
    EXPECT_TRUE(at::allclose(kernels::linear(x, w), at::linear(x, w)));
    EXPECT_TRUE(at::allclose(kernels::linear(x.to(at::kBFloat16), w.to(at::kBFloat16), {}, at::kFloat),
                             at::linear(x.to(at::kBFloat16), w.to(at::kBFloat16)).to(at::kFloat)));
}

TEST(RmsNorm, MatchesComposite) {
    at::Tensor x = randn({5, 48}, 7) * 3, w = randn({48}, 8);
    at::Tensor expected = x * at::rsqrt(x.pow(2).mean(-1, true) + 1e-5) * w;
    EXPECT_LT(maxAbs(rmsNorm(x, w, 1e-5, at::kFloat) - expected), 1e-5);
    EXPECT_TRUE(at::equal(rmsNorm(x, w, 1e-5, at::kBFloat16),
                          rmsNorm(x, w, 1e-5, at::kFloat).to(at::kBFloat16)));
}

TEST(SiluMul, MatchesComposite) {
    at::Tensor gu = randn({3, 40}, 9) * 4;
    at::Tensor g = gu.narrow(1, 0, 20), u = gu.narrow(1, 20, 20);
    EXPECT_LT(maxAbs(siluMul(gu) - at::silu(g) * u), 1e-5);
    // bf16 in and out: equal to the fp32 result rounded to bf16, give or take one unit
    // in the last place (2^-8 relative).
    at::Tensor b = gu.to(at::kBFloat16);
    at::Tensor exact = at::silu(b.narrow(1, 0, 20).to(at::kFloat)) * b.narrow(1, 20, 20).to(at::kFloat);
    at::Tensor diff = (siluMul(b).to(at::kFloat) - exact).abs();
    EXPECT_TRUE((diff <= exact.abs() / 256 + 1e-6).all().item<bool>()) << maxAbs(diff);
}

// A decode step's one row and rows whose split between the threads falls inside a
// row: the same values as the composite, and bit for bit those of one thread.
TEST(SiluMul, SplitsRowsAcrossThreadsWithoutChangingThem) {
    const int threadsBefore = at::get_num_threads();
    for (const auto& [T, F] : {std::pair<int64_t, int64_t>{1, 5632}, {3, 3000}, {2, 4097}}) {
        const at::Tensor gu = randn({T, 2 * F}, 12) * 4;
        for (const at::ScalarType type : {at::kFloat, at::kBFloat16}) {
            const at::Tensor in = gu.to(type);
            at::set_num_threads(1);
            const at::Tensor one = siluMul(in);
            at::set_num_threads(std::max(2, threadsBefore));
            const at::Tensor many = siluMul(in);
            at::set_num_threads(threadsBefore);
            EXPECT_TRUE(at::equal(one, many)) << T << " x " << F << " " << c10::toString(type);
            const at::Tensor g = in.narrow(1, 0, F).to(at::kFloat), u = in.narrow(1, F, F).to(at::kFloat);
            const at::Tensor exact = at::silu(g) * u;
            EXPECT_TRUE(((many.to(at::kFloat) - exact).abs() <= exact.abs() / 128 + 1e-5).all().item<bool>())
                << T << " x " << F << " " << c10::toString(type) << ": " << maxAbs(many.to(at::kFloat) - exact);
        }
    }
}

// GeGLU against GELU's tanh form written out in fp64 (Gemma's gelu_pytorch_tanh).
TEST(GeluMul, MatchesTheTanhFormula) {
    at::Tensor gu = randn({3, 40}, 11) * 4;
    const at::Tensor g = gu.narrow(1, 0, 20).to(at::kDouble), u = gu.narrow(1, 20, 20).to(at::kDouble);
    const at::Tensor exact = 0.5 * g * (1.0 + at::tanh(std::sqrt(2.0 / M_PI) * (g + 0.044715 * g.pow(3)))) * u;
    EXPECT_LT(maxAbs(geluMul(gu).to(at::kDouble) - exact), 1e-5);
    const at::Tensor b = geluMul(gu.to(at::kBFloat16));
    EXPECT_EQ(b.scalar_type(), at::kBFloat16);
    // bf16's rounded inputs and output: a few units in its last place (2^-8 relative).
    EXPECT_TRUE(((b.to(at::kDouble) - exact).abs() <= exact.abs() / 32 + 1e-2).all().item<bool>());
}

// Reference rotation from the definition, one element pair at a time.
at::Tensor ropeReference(at::Tensor x, int64_t p0, double theta, int64_t R, bool halves) {
    x = x.to(at::kDouble).clone();
    const int64_t T = x.size(0), H = x.size(1);
    for (int64_t t = 0; t < T; ++t)
        for (int64_t h = 0; h < H; ++h)
            for (int64_t i = 0; i < R / 2; ++i) {
                const double a = double(p0 + t) * std::pow(theta, -2.0 * double(i) / double(R));
                const int64_t i0 = halves ? i : 2 * i, i1 = halves ? i + R / 2 : 2 * i + 1;
                const double x0 = x[t][h][i0].item<double>(), x1 = x[t][h][i1].item<double>();
                x[t][h][i0] = x0 * std::cos(a) - x1 * std::sin(a);
                x[t][h][i1] = x0 * std::sin(a) + x1 * std::cos(a);
            }
    return x;
}

TEST(Rope, BothStylesPartialDimsAndStridedViewsMatchTheDefinition) {
    for (bool halves : {false, true}) {
        for (int64_t R : {16, 8}) {
            const int64_t T = 3, Hq = 4, Hk = 2, D = 16, p0 = 41;
            std::vector<float> inv(R / 2);
            for (int64_t i = 0; i < R / 2; ++i) inv[i] = float(std::pow(10000.0, -2.0 * double(i) / double(R)));
            const at::Tensor invFreq = at::tensor(inv);
            // q and k as views into one fused row, as the model has them.
            at::Tensor fused = randn({T, (Hq + Hk) * D}, 10);
            const at::Tensor original = fused.clone();
            at::Tensor q = fused.narrow(1, 0, Hq * D).view({T, Hq, D});
            at::Tensor k = fused.narrow(1, Hq * D, Hk * D).view({T, Hk, D});
            rope(q, k, p0, invFreq, R, halves);
            const at::Tensor qRef = ropeReference(original.narrow(1, 0, Hq * D).view({T, Hq, D}), p0, 10000.0, R, halves);
            const at::Tensor kRef = ropeReference(original.narrow(1, Hq * D, Hk * D).view({T, Hk, D}), p0, 10000.0, R, halves);
            EXPECT_LT(maxAbs(q.to(at::kDouble) - qRef), 1e-4) << "halves=" << halves << " R=" << R;
            EXPECT_LT(maxAbs(k.to(at::kDouble) - kRef), 1e-4) << "halves=" << halves << " R=" << R;
        }
    }
}

// Attention from the definition with LibTorch ops: repeat KV heads, mask, softmax.
at::Tensor attentionReference(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, int64_t p0) {
    const int64_t T = q.size(0), H = q.size(1), D = q.size(2), G = H / k.size(0), S = k.size(1);
    at::Tensor kk = k.to(at::kDouble).repeat_interleave(G, 0), vv = v.to(at::kDouble).repeat_interleave(G, 0);
    at::Tensor qq = q.to(at::kDouble).permute({1, 0, 2});
    at::Tensor scores = at::matmul(qq, kk.transpose(1, 2)) / std::sqrt(double(D));
    at::Tensor mask = at::arange(S).unsqueeze(0) > (at::arange(T) + p0).unsqueeze(1);
    scores.masked_fill_(mask, -INFINITY);
    return at::matmul(at::softmax(scores, -1), vv).permute({1, 0, 2}).reshape({T, H * D});
}

TEST(CausalAttention, MatchesDefinitionForEachHeadDimension) {
    for (int64_t D : {8, 12, 64, 128}) {  // 12 takes the generic path; 64, 128 the GQA group kernel
        for (int64_t T : {1, 3}) {
            const int64_t H = 6, KV = 2, p0 = 29, S = p0 + T;
            at::Tensor q = randn({T, H, D}, 11), k = randn({KV, S, D}, 12), v = randn({KV, S, D}, 13);
            ASSERT_TRUE(useFusedAttention(q, k));
            const at::Tensor expected = attentionReference(q, k, v, p0);
            EXPECT_LT(maxAbs(causalAttention(q, k, v, p0).to(at::kDouble) - expected), 1e-5)
                << "D=" << D << " T=" << T;
            const at::Tensor b = causalAttention(q.to(at::kBFloat16), k.to(at::kBFloat16),
                                                 v.to(at::kBFloat16), p0);
            EXPECT_LT(maxAbs(b.to(at::kDouble) - expected), 5e-2) << "bf16 D=" << D << " T=" << T;
        }
    }
}

TEST(CausalAttention, ReadsCacheViewsWithCapacityStride) {
    // The cache hands out narrow()ed views of [KV, capacity, D] buffers.
    at::Tensor kBuf = randn({2, 50, 8}, 14), vBuf = randn({2, 50, 8}, 15);
    at::Tensor k = kBuf.narrow(1, 0, 20), v = vBuf.narrow(1, 0, 20), q = randn({1, 4, 8}, 16);
    EXPECT_LT(maxAbs(causalAttention(q, k, v, 19).to(at::kDouble) -
                     attentionReference(q, k.contiguous(), v.contiguous(), 19)),
              1e-5);
}

// The hit rate's logits: every query head against its KV head's keys, read in
// place (a capacity-strided cache view, bf16 or f32), equal to the double product.
TEST(QueryKeyScores, EqualTheProductOfEachHeadWithItsGroupsKeys) {
    for (int64_t D : {12, 64, 128}) {  // 12: the LibTorch path; 64, 128: the group kernel
        const int64_t H = 8, KV = 2, S = 37;
        const at::Tensor q = randn({H, D}, 21), buf = randn({KV, 50, D}, 22);
        for (at::ScalarType type : {at::kFloat, at::kBFloat16}) {
            const at::Tensor k = buf.to(type).narrow(1, 0, S);  // rows 50 apart
            const at::Tensor want =
                at::bmm(q.to(at::kDouble).view({KV, H / KV, D}), k.to(at::kDouble).transpose(1, 2)).view({H, S});
            const at::Tensor got = queryKeyScores(q, k);
            ASSERT_EQ(got.scalar_type(), at::kFloat);
            ASSERT_EQ(got.sizes(), want.sizes());
            EXPECT_LT(maxAbs(got.to(at::kDouble) - want), 1e-4 * std::sqrt(double(D)))
                << "D=" << D << " " << c10::toString(type);
            // Keys go by blocks of the vector width, their horizontal sums shared; a
            // key's score is the same bits in a block as alone (the tail's own sum).
            for (int64_t j = 0; D != 12 && j < S; ++j) {
                EXPECT_TRUE(at::equal(got.narrow(1, j, 1), queryKeyScores(q, k.narrow(1, j, 1))))
                    << "key " << j << " D=" << D << " " << c10::toString(type);
            }
        }
    }
}

// Long contexts cross the kernels' blocks (16 keys of scores, 16 KB of values): a
// context of 300 with 1 and 3 queries, fp32 and bf16 caches.
TEST(CausalAttention, LongContextsMatchTheDefinitionAcrossBlocks) {
    for (int64_t D : {64, 128}) {
        for (int64_t T : {1, 3}) {
            const int64_t H = 8, KV = 2, p0 = 297, S = p0 + T;
            at::Tensor q = randn({T, H, D}, 61), k = randn({KV, S, D}, 62), v = randn({KV, S, D}, 63);
            const at::Tensor expected = attentionReference(q, k, v, p0);
            EXPECT_LT(maxAbs(causalAttention(q, k, v, p0).to(at::kDouble) - expected), 1e-5)
                << "D=" << D << " T=" << T;
            const at::Tensor b = causalAttention(q.to(at::kBFloat16), k.to(at::kBFloat16), v.to(at::kBFloat16), p0);
            EXPECT_LT(maxAbs(b.to(at::kDouble) - attentionReference(q.to(at::kBFloat16), k.to(at::kBFloat16),
                                                                   v.to(at::kBFloat16), p0)),
                      2e-2)
                << "bf16 D=" << D << " T=" << T;
        }
    }
}

TEST(CausalAttention, ManyQueriesAreLeftToTheBlockedPath) {
    at::Tensor q = randn({9, 2, 8}, 17), k = randn({1, 9, 8}, 18);
    EXPECT_FALSE(useFusedAttention(q, k));
}

}  // namespace
}  // namespace kvlens::kernels

namespace kvlens::kernels {
namespace {

TEST(RaggedAttention, EachHeadAttendsOnlyItsOwnEntries) {
  for (const int64_t D : {16, 64, 128}) {  // 64 and 128: runs of heads on one cache head share a pass
    const int64_t H = 4;
    const std::vector<int64_t> lengths = {5, 17, 1}, headOf = {0, 0, 1, 2};
    std::vector<at::Tensor> keys, values;
    for (size_t c = 0; c < lengths.size(); ++c) {
        // Rows of a larger buffer, as the compressed cache hands them out.
        keys.push_back(randn({lengths[c] + 3, D}, 20 + c).narrow(0, 0, lengths[c]));
        values.push_back(randn({lengths[c] + 3, D}, 30 + c).narrow(0, 0, lengths[c]));
    }
    const at::Tensor q = randn({1, H, D}, 40);
    for (c10::ScalarType type : {at::kFloat, at::kBFloat16}) {
        std::vector<at::Tensor> k, v;
        for (size_t c = 0; c < keys.size(); ++c) {
            k.push_back(keys[c].to(type));
            v.push_back(values[c].to(type));
        }
        const at::Tensor out = raggedAttention(q.to(type), k, v, headOf).to(at::kDouble);
        for (int64_t h = 0; h < H; ++h) {
            const at::Tensor kk = k[headOf[h]].to(at::kDouble), vv = v[headOf[h]].to(at::kDouble);
            const at::Tensor p = at::softmax(at::matmul(q.to(type).to(at::kDouble)[0][h], kk.t()) / std::sqrt(double(D)), -1);
            const at::Tensor expected = at::matmul(p, vv);
            EXPECT_LT(maxAbs(out[0].narrow(0, h * D, D) - expected), type == at::kFloat ? 1e-5 : 2e-2)
                << "head " << h << " D=" << D;
        }
    }
  }
}

// A query head decodes the same alone as in its GQA group: each row's arithmetic does
// not depend on the heads beside it (what makes FullKV decode bit-identical).
TEST(RaggedAttention, AHeadAloneEqualsItsGroupBitForBit) {
    for (const int64_t D : {64, 128}) {
        const int64_t H = 4;
      for (const int64_t S : {23, 150}) {  // 150: several blocks of keys and values
        const at::Tensor k = randn({S, D}, 50), v = randn({S, D}, 51), q = randn({1, H, D}, 52);
        const at::Tensor grouped = raggedAttention(q, {k}, {v}, {0, 0, 0, 0});
        const at::Tensor alone = raggedAttention(q, {k, k, k, k}, {v, v, v, v}, {0, 1, 2, 3});
        EXPECT_TRUE(at::equal(grouped, alone)) << "D=" << D << " S=" << S;
        const at::Tensor causal = causalAttention(q, k.unsqueeze(0), v.unsqueeze(0), S - 1);
        EXPECT_TRUE(at::equal(causal, grouped)) << "D=" << D << " S=" << S;
      }
    }
}

}  // namespace
}  // namespace kvlens::kernels
