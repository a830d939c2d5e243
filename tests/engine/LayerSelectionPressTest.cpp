// kernels::layerSelection (one call per layer, votes recomputed) against the
// presses that select from the capture's cached votes: SnapKV's selection,
// PyramidKV's at its layer budgets and AdaKV's pooled scores, on random
// captures; and against the float64 oracle in testdata/kv-oracle (by rule
// where the oracle marks a tie at the cut).
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>

#include "engine/compress/Capture.h"
#include "engine/compress/presses/Press.h"
#include "engine/compress/presses/PressScores.h"
#include "engine/compress/presses/PyramidKvPress.h"
#include "kernels/LayerSelection.h"

namespace kvlens {
namespace {

std::shared_ptr<Capture> randomCapture(int64_t L, int64_t H, int64_t KV, int64_t T, int64_t D,
                                       c10::ScalarType keyType, uint64_t seed) {
    at::manual_seed(seed);
    std::vector<at::Tensor> q, k, v;
    for (int64_t l = 0; l < L; ++l) {
        // Some sharper query heads, so that heads and groups disagree.
        at::Tensor ql = at::randn({H, 64, D});
        for (int64_t h = 0; h < H; h += 3) ql[h].mul_(3.0);
        q.push_back(ql);
        k.push_back(at::randn({KV, T, D}).to(keyType));
        v.push_back(at::randn({KV, T, D}).to(keyType));
    }
    return Capture::fromTensors(q, k, v);
}

std::vector<std::vector<int32_t>> rows(const at::Tensor& kept) {
    std::vector<std::vector<int32_t>> out(kept.size(0));
    for (int64_t r = 0; r < kept.size(0); ++r) {
        const at::Tensor row = kept[r].contiguous();
        out[r].assign(row.data_ptr<int32_t>(), row.data_ptr<int32_t>() + row.numel());
    }
    return out;
}

struct Combo {
    int64_t window, kernel;
    Pooling pooling;
    GqaMode gqa;
    c10::ScalarType keyType;
};

// Names for CTest: GoogleTest would print the struct's bytes, padding included.
void PrintTo(const Combo& c, std::ostream* os) {
    *os << "W" << c.window << "_k" << c.kernel << "_" << poolingName(c.pooling) << "_"
        << (c.gqa == GqaMode::KvHead ? "kv_head" : "query_head") << "_" << c10::toString(c.keyType);
}

class LayerSelectionPress : public testing::TestWithParam<Combo> {};

// Kept rows equal but for positions whose score ties the row's cut to within
// fp32 rounding: the votes come from LibTorch's bmm, whose multi-threaded
// OpenBLAS path may differ in the last bit between two calls (measured), and
// the presses read the capture's cached votes while layerSelection recomputes.
void expectSameRows(const std::vector<std::vector<int32_t>>& got,
                    const std::vector<std::vector<int32_t>>& want,
                    const presses::HeadScores& scores, int64_t prefixBudget,
                    const std::string& what) {
    ASSERT_EQ(got.size(), want.size()) << what;
    for (size_t h = 0; h < got.size(); ++h) {
        ASSERT_EQ(got[h].size(), want[h].size()) << what << " head " << h;
        if (got[h] == want[h]) continue;
        std::vector<float> sorted = scores[h];
        std::sort(sorted.begin(), sorted.end(), std::greater<float>());
        const double cut = sorted[prefixBudget - 1];
        const std::set<int32_t> a(got[h].begin(), got[h].end()), b(want[h].begin(), want[h].end());
        for (int32_t pos : a) {
            if (!b.count(pos)) {
                EXPECT_NEAR(scores[h][pos], cut, 1e-5 * cut)
                    << what << " head " << h << " position " << pos;
            }
        }
        for (int32_t pos : b) {
            if (!a.count(pos)) {
                EXPECT_NEAR(scores[h][pos], cut, 1e-5 * cut)
                    << what << " head " << h << " position " << pos;
            }
        }
    }
}

TEST_P(LayerSelectionPress, EqualsTheSnapKvPyramidKvAndAdaKvPresses) {
    const Combo c = GetParam();
    const auto capture = randomCapture(3, 8, 2, 300, 16, c.keyType, 5);
    PressParams p;
    p.window = c.window;
    p.kernel = c.kernel;
    p.pooling = c.pooling;
    p.gqa = c.gqa;
    p.budget = 96;
    const kernels::VoteSpec spec = presses::voteSpec(p);

    p.method = "snapkv";
    const Selection snap = Press::create("snapkv")->select(*capture, p);
    p.method = "pyramidkv";
    const Selection pyramid = Press::create("pyramidkv")->select(*capture, p);
    const std::vector<int64_t> prefix = PyramidKvPress::prefixBudgets(
        capture->layers(), capture->promptLength(), p.window, p.budget, p.beta, p.schedule);
    for (int64_t l = 0; l < capture->layers(); ++l) {
        SCOPED_TRACE("layer " + std::to_string(l));
        const at::Tensor& q = capture->windowQueries(l);
        const at::Tensor k = capture->keys(l);
        // AdaKV ranks the pooled votes across heads: the same scores.
        const at::Tensor scores = kernels::layerScores(q, k, spec);
        const presses::HeadScores pooled = presses::pooledVotes(*capture, l, p);
        ASSERT_EQ(int64_t(pooled.size()), scores.size(0));
        for (size_t h = 0; h < pooled.size(); ++h) {
            for (size_t j = 0; j < pooled[h].size(); ++j) {
                ASSERT_NEAR(scores[h][j].item<float>(), pooled[h][j], 1e-6 * pooled[h][j] + 1e-9)
                    << "head " << h << " position " << j;
            }
        }
        expectSameRows(rows(kernels::layerSelection(q, k, spec, p.budget - p.window)), snap.kept[l],
                       pooled, p.budget - p.window, "snapkv");
        expectSameRows(rows(kernels::layerSelection(q, k, spec, prefix[l])), pyramid.kept[l],
                       pooled, prefix[l], "pyramidkv");
    }
}

INSTANTIATE_TEST_SUITE_P(
    Params, LayerSelectionPress,
    testing::Values(Combo{32, 7, Pooling::Max, GqaMode::KvHead, at::kFloat},
                    Combo{32, 7, Pooling::Max, GqaMode::QueryHead, at::kBFloat16},
                    Combo{16, 5, Pooling::Avg, GqaMode::KvHead, at::kBFloat16},
                    Combo{64, 3, Pooling::Avg, GqaMode::QueryHead, at::kFloat},
                    Combo{1, 1, Pooling::Max, GqaMode::KvHead, at::kFloat}),
    [](const testing::TestParamInfo<Combo>& info) { return testing::PrintToString(info.param); });

TEST(LayerSelectionOracle, KeptPositionsFollowTheOracle) {
    const std::string dir = std::string(KVLENS_SHARED_DIR) + "/testdata/kv-oracle/";
    std::ifstream in(dir + "expected_L4_H8_KV8_D16_T300_W32.json");
    if (!in) GTEST_SKIP() << "test vectors not found in " << dir;
    const nlohmann::json e = nlohmann::json::parse(in);
    const int64_t H = e.at("n_q_heads"), KV = e.at("n_kv_heads"), D = e.at("head_dim"),
                  T = e.at("seq_len"), W = e.at("window");
    std::vector<at::Tensor> q, k;
    for (const auto& name : e.at("input_files")) {
        std::ifstream f(dir + name.get<std::string>());
        ASSERT_TRUE(f) << name;
        const nlohmann::json layer = nlohmann::json::parse(f);
        auto tensor = [](const nlohmann::json& j, std::vector<int64_t> shape) {
            std::vector<float> flat;
            for (const auto& a : j)
                for (const auto& b : a)
                    for (const auto& x : b) flat.push_back(x.get<float>());
            return at::tensor(flat).view(shape);
        };
        q.push_back(tensor(layer.at("q_window"), {H, W, D}));
        k.push_back(tensor(layer.at("keys"), {KV, T, D}));
    }
    int checked = 0;
    for (const auto& c : e.at("cases")) {
        if (c.at("method") != "snapkv" && c.at("method") != "pyramidkv") continue;
        kernels::VoteSpec spec;
        spec.window = W;
        spec.kernel = c.at("kernel_size");
        spec.pooling =
            c.at("pooling") == "maxpool" ? kernels::VotePooling::Max : kernels::VotePooling::Avg;
        spec.perQueryHead = c.at("gqa_mode") == "query_head";
        const std::string pooledName =
            c.at("pooling").get<std::string>() + "_k" + std::to_string(spec.kernel);
        const auto& pooled = e.at("pooled").at("query_head").at(pooledName);
        for (size_t l = 0; l < q.size(); ++l) {
            const int64_t budget = c.at("per_layer_prefix_budget")[l];
            const auto kept = rows(kernels::layerSelection(q[l], k[l], spec, budget));
            for (size_t h = 0; h < kept.size(); ++h) {
                SCOPED_TRACE(c.at("case_id").get<std::string>() + " layer " + std::to_string(l) +
                             " head " + std::to_string(h));
                const auto& boundary = c.at("boundary")[l][h];
                if (!boundary.at("ambiguous").get<bool>()) {
                    EXPECT_EQ(kept[h], c.at("kept_indices")[l][h].get<std::vector<int32_t>>());
                } else {
                    // A tie at the cut: every kept prefix score >= the k-th, every dropped one <=
                    // it.
                    const double kth = boundary.at("kth_score"), eps = 1e-9;
                    std::vector<char> in(T, 0);
                    for (int32_t pos : kept[h]) in[pos] = 1;
                    for (int64_t t = T - W; t < T; ++t)
                        EXPECT_TRUE(in[t]) << "window position " << t;
                    int64_t prefixCount = 0;
                    for (int64_t j = 0; j < T - W; ++j) {
                        const double score = pooled[l][h][j];
                        prefixCount += in[j];
                        if (in[j]) {
                            EXPECT_GE(score, kth - eps) << "kept " << j;
                        } else {
                            EXPECT_LE(score, kth + eps) << "dropped " << j;
                        }
                    }
                    EXPECT_EQ(prefixCount, budget);
                }
                ++checked;
            }
        }
    }
    EXPECT_EQ(checked, 16 * 4 * 8);
}

}  // namespace
}  // namespace kvlens
