// The CUDA bodies against the CPU bodies on the same inputs: layer selection
// (scores within fp32 rounding, the top-k rule exact, kept sets equal but for
// positions whose scores tie with the cut to within rounding) and ragged decode
// attention (1e-5 in fp32, 2e-2 in bf16). Skipped, with the reason, where
// there is no GPU or the build has no CUDA bodies.
#include <ATen/CPUGeneratorImpl.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <set>

#include "kernels/CausalAttention.h"
#include "kernels/LayerSelection.h"

namespace kvlens::kernels {
namespace {

#define REQUIRE_CUDA_BODIES()                                                       \
    if (!at::hasCUDA())                                                             \
        GTEST_SKIP() << "no CUDA device: this LibTorch has no CUDA or sees no GPU"; \
    if (!hasCudaBodies())                                                           \
    GTEST_SKIP() << "this build has no CUDA bodies (configure with nvcc found and KVLENS_CUDA=ON)"

const c10::Device kGpu("cuda:0");

at::Tensor randn(std::vector<int64_t> shape, uint64_t seed) {
    at::Generator gen = at::detail::createCPUGenerator(seed);
    return at::randn(shape, gen);
}

struct SelectionCase {
    int64_t H, KV, D, T, W, k;
    c10::ScalarType keyType;
};

std::string describe(const SelectionCase& c, const VoteSpec& s) {
    return "H" + std::to_string(c.H) + " KV" + std::to_string(c.KV) + " D" + std::to_string(c.D) +
           " T" + std::to_string(c.T) + " W" + std::to_string(c.W) + " k" + std::to_string(c.k) +
           " " + c10::toString(c.keyType) + (s.pooling == VotePooling::Max ? " max" : " avg") +
           std::to_string(s.kernel) + (s.perQueryHead ? " query-head" : " kv-head");
}

// Keys with a few strong columns (sinks, a needle) over noise, as real layers have.
at::Tensor keysFor(const SelectionCase& c, uint64_t seed) {
    at::Tensor k = randn({c.KV, c.T, c.D}, seed);
    k.narrow(1, 0, 1).mul_(4.0);
    k.narrow(1, c.T / 3, 2).mul_(3.0);
    return k.to(c.keyType);
}

// Kept sets of one row agree when they differ only in positions whose CPU
// score is within `tol` of the CPU's k-th largest score (a tie up to rounding).
void expectSameByRule(const std::vector<int32_t>& cpu, const std::vector<int32_t>& gpu,
                      const float* cpuScores, int64_t n, int64_t k, const std::string& what) {
    ASSERT_EQ(gpu.size(), cpu.size()) << what;
    if (k == 0 || k >= n) {
        EXPECT_EQ(gpu, cpu) << what;
        return;
    }
    std::vector<float> sorted(cpuScores, cpuScores + n);
    std::nth_element(sorted.begin(), sorted.begin() + (k - 1), sorted.end(), std::greater<float>());
    const double kth = sorted[k - 1], tol = 1e-4 * std::abs(kth) + 1e-7;
    const std::set<int32_t> a(cpu.begin(), cpu.end()), b(gpu.begin(), gpu.end());
    int differing = 0;
    for (int32_t p : a)
        if (!b.count(p)) {
            ++differing;
            EXPECT_LE(std::abs(cpuScores[p] - kth), tol) << what << ": only the CPU keeps " << p;
        }
    for (int32_t p : b) {
        if (!a.count(p)) {
            EXPECT_LE(std::abs(cpuScores[p] - kth), tol) << what << ": only the GPU keeps " << p;
        }
    }
    // Near-ties are rare in these inputs; many of them would mean wrong scores.
    EXPECT_LE(differing, std::max<int64_t>(16, k / 10)) << what;
}

// Names for CTest: GoogleTest would print the structs' bytes, padding included.
void PrintTo(const SelectionCase& c, std::ostream* os) {
    *os << "H" << c.H << "_KV" << c.KV << "_D" << c.D << "_T" << c.T << "_W" << c.W << "_k" << c.k
        << "_" << c10::toString(c.keyType);
}

class CudaLayerSelection : public testing::TestWithParam<SelectionCase> {};

TEST_P(CudaLayerSelection, MatchesTheCpuBody) {
    REQUIRE_CUDA_BODIES();
    const SelectionCase c = GetParam();
    const at::Tensor q = randn({c.H, std::min<int64_t>(64, c.T - 1), c.D}, 11);
    const at::Tensor k = keysFor(c, 12);
    for (bool perQueryHead : {false, true}) {
        for (VotePooling pooling : {VotePooling::Max, VotePooling::Avg}) {
            VoteSpec spec;
            spec.window = c.W;
            spec.kernel = pooling == VotePooling::Max ? 7 : 5;
            spec.pooling = pooling;
            spec.perQueryHead = perQueryHead;
            const std::string what = describe(c, spec);
            const at::Tensor cpuScores = layerScores(q, k, spec);
            const at::Tensor gpuScores = layerScores(q.to(kGpu), k.to(kGpu), spec);
            ASSERT_TRUE(gpuScores.is_cuda()) << what;
            const at::Tensor g = gpuScores.cpu();
            ASSERT_EQ(g.sizes(), cpuScores.sizes()) << what;
            const double worst =
                ((g - cpuScores).abs() / (cpuScores.abs() * 1e-4 + 1e-7)).max().item<double>();
            EXPECT_LE(worst, 1.0) << what << ": scores differ by more than 1e-4 relative";

            // The GPU's top-k is the CPU's rule, exactly, on the GPU's own scores.
            const at::Tensor gpuKept = layerSelection(q.to(kGpu), k.to(kGpu), spec, c.k);
            ASSERT_TRUE(gpuKept.device().is_cpu()) << what;
            EXPECT_TRUE(at::equal(gpuKept, keptPositions(g, c.k, c.W))) << what;
            EXPECT_TRUE(at::equal(keptPositions(g.to(kGpu), c.k, c.W), keptPositions(g, c.k, c.W)))
                << what;

            // Against the CPU body's own selection: equal but for ties at the cut.
            const at::Tensor cpuKept = layerSelection(q, k, spec, c.k);
            ASSERT_EQ(gpuKept.sizes(), cpuKept.sizes()) << what;
            const int64_t n = c.T - c.W, take = std::min(c.k, n);
            const at::Tensor cs = cpuScores.contiguous();
            for (int64_t r = 0; r < cpuKept.size(0); ++r) {
                const int32_t* cp = cpuKept[r].data_ptr<int32_t>();
                const at::Tensor gr = gpuKept[r].contiguous();
                const int32_t* gp = gr.data_ptr<int32_t>();
                expectSameByRule(std::vector<int32_t>(cp, cp + take),
                                 std::vector<int32_t>(gp, gp + take), cs.data_ptr<float>() + r * n,
                                 n, take, what + " row " + std::to_string(r));
                for (int64_t w = 0; w < c.W; ++w) EXPECT_EQ(gp[take + w], n + w) << what;
            }
        }
    }
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, CudaLayerSelection,
    testing::Values(SelectionCase{32, 8, 128, 3000, 32, 512, at::kBFloat16},  // GQA, llama3-like
                    SelectionCase{8, 8, 64, 1000, 16, 100, at::kFloat},       // MHA
                    SelectionCase{12, 4, 80, 700, 64, 64, at::kHalf},      // D not a multiple of 32
                    SelectionCase{4, 2, 16, 40, 1, 10, at::kFloat},        // W = 1
                    SelectionCase{4, 1, 256, 70, 32, 100, at::kFloat},     // k beyond the prefix
                    SelectionCase{4, 2, 32, 2049, 8, 0, at::kBFloat16}));  // k = 0: the window only

TEST(CudaKeptPositions, TiesNanAndSignedZeroFollowTheCpuRule) {
    REQUIRE_CUDA_BODIES();
    const float nan = std::numeric_limits<float>::quiet_NaN();
    // Long plateaus of equal scores (as max pooling makes), NaN, -0 and +0, -inf.
    std::vector<float> row;
    for (int i = 0; i < 5000; ++i) row.push_back(float((i * 7919) % 13) / 4.0f);
    row[17] = nan;
    row[18] = -0.0f;
    row[19] = 0.0f;
    row[20] = -std::numeric_limits<float>::infinity();
    at::Tensor scores = at::tensor(row).view({1, -1}).repeat({3, 1});
    scores[1].fill_(0.25f);  // every score tied
    scores[2].mul_(-1.0f);
    for (int64_t k : {0, 1, 13, 385, 386, 2500, 4999, 5000, 6000}) {
        EXPECT_TRUE(at::equal(keptPositions(scores.to(kGpu), k, 3), keptPositions(scores, k, 3)))
            << "k " << k;
    }
}

struct RaggedCase {
    int64_t H, D;
    std::vector<int64_t> lengths;
    bool perQueryHead;
};

void PrintTo(const RaggedCase& c, std::ostream* os) {
    *os << "H" << c.H << "_D" << c.D << "_heads" << c.lengths.size()
        << (c.perQueryHead ? "_per_query_head" : "_kv_heads");
}

class CudaRaggedAttention : public testing::TestWithParam<RaggedCase> {};

TEST_P(CudaRaggedAttention, MatchesTheCpuBody) {
    REQUIRE_CUDA_BODIES();
    const RaggedCase c = GetParam();
    const int64_t C = static_cast<int64_t>(c.lengths.size());
    std::vector<int64_t> headOf(c.H);
    for (int64_t h = 0; h < c.H; ++h) headOf[h] = c.perQueryHead ? h : h / (c.H / C);
    std::vector<at::Tensor> keys, values;
    for (int64_t i = 0; i < C; ++i) {
        // Rows of larger buffers, as the compressed cache hands them out.
        keys.push_back(randn({c.lengths[i] + 5, c.D}, 100 + i).narrow(0, 0, c.lengths[i]));
        values.push_back(randn({c.lengths[i] + 5, c.D}, 200 + i).narrow(0, 0, c.lengths[i]));
    }
    const at::Tensor q = randn({1, c.H, c.D}, 300);
    for (c10::ScalarType type : {at::kFloat, at::kBFloat16}) {
        std::vector<at::Tensor> kc, vc, kg, vg;
        for (int64_t i = 0; i < C; ++i) {
            kc.push_back(keys[i].to(type));
            vc.push_back(values[i].to(type));
            kg.push_back(at::empty({c.lengths[i] + 5, c.D}, kc[i].options().device(kGpu))
                             .narrow(0, 0, c.lengths[i]));
            vg.push_back(at::empty({c.lengths[i] + 5, c.D}, vc[i].options().device(kGpu))
                             .narrow(0, 0, c.lengths[i]));
            kg[i].copy_(kc[i]);
            vg[i].copy_(vc[i]);
        }
        const at::Tensor cpu = raggedAttention(q.to(type), kc, vc, headOf);
        const at::Tensor gpu = raggedAttention(q.to(type).to(kGpu), kg, vg, headOf);
        ASSERT_TRUE(gpu.is_cuda());
        ASSERT_EQ(gpu.scalar_type(), type);
        const double diff =
            (gpu.cpu().to(at::kDouble) - cpu.to(at::kDouble)).abs().max().item<double>();
        EXPECT_LT(diff, type == at::kFloat ? 1e-5 : 2e-2) << c10::toString(type);
    }
}

INSTANTIATE_TEST_SUITE_P(
    Heads, CudaRaggedAttention,
    testing::Values(
        RaggedCase{8, 64, {1, 127, 128, 129, 1000, 4097, 33, 2}, true},  // per query head
        RaggedCase{32, 128, {16384, 1024, 300, 5}, false},               // GQA, FullKV-long
        RaggedCase{12, 80, {50, 60, 70}, false},                         // D not a power of 2
        RaggedCase{4, 256, {1, 1}, false}));

}  // namespace
}  // namespace kvlens::kernels
