// The full attention map of one head: its tile pyramid against a brute-force
// causal softmax in double reduced by hand, exact regions, and the kept queries.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "engine/compress/Capture.h"
#include "core/Error.h"
#include "engine/model/LlamaModel.h"
#include "engine/model/ModelLoader.h"
#include "engine/analysis/AttentionMap.h"
#include "viz/TilePyramid.h"

namespace kvlens {
namespace {

class AttentionMapTest : public ::testing::Test {
protected:
    static void SetUpTestSuite() {
        loaded_ = new LoadedModel(loadModel("random:tiny:layers=2", c10::Device(c10::kCPU), c10::kFloat));
        std::vector<int32_t>& prompt = prompt_;
        for (int i = 0; i < kT; ++i) prompt.push_back(3 + (i * 41) % 250);
        keep_ = new std::shared_ptr<Capture>(Capture::fromPrefill(*loaded_->model, prompt, {}, {{1, 5}, {0, 0}}));
        (*keep_)->keepScoresFor(*loaded_->model, "h2o");
        capture_ = keep_->get();
    }
    static void TearDownTestSuite() {
        delete keep_;
        delete loaded_;
    }

    // The exact map in double: [T][T], zero above the diagonal.
    static std::vector<std::vector<double>> bruteForce(int64_t layer, int64_t head) {
        const int64_t G = capture_->queryHeads() / capture_->kvHeads(), D = capture_->headDim();
        at::Tensor q = capture_->queries(layer, head).to(at::kDouble);
        at::Tensor k = capture_->keys(layer)[head / G].to(at::kDouble);
        at::Tensor scores = at::mm(q, k.t()) / std::sqrt(double(D));
        std::vector<std::vector<double>> m(kT, std::vector<double>(kT, 0.0));
        for (int64_t r = 0; r < kT; ++r) {
            at::Tensor p = at::softmax(scores[r].narrow(0, 0, r + 1), 0);
            for (int64_t j = 0; j <= r; ++j) m[r][j] = p[j].item<double>();
        }
        return m;
    }

    static constexpr int kT = 203;  // not a multiple of any tile: edge tiles are partial
    static LoadedModel* loaded_;
    static std::vector<int32_t> prompt_;
    static std::shared_ptr<Capture>* keep_;
    static Capture* capture_;
};
LoadedModel* AttentionMapTest::loaded_ = nullptr;
std::vector<int32_t> AttentionMapTest::prompt_;
std::shared_ptr<Capture>* AttentionMapTest::keep_ = nullptr;
Capture* AttentionMapTest::capture_ = nullptr;

TEST_F(AttentionMapTest, KeptQueriesEndWithTheWindowQueries) {
    const at::Tensor& all = capture_->queries(1, 5);
    ASSERT_EQ(all.size(0), kT);
    const at::Tensor& window = capture_->windowQueries(1)[5];
    EXPECT_TRUE(at::equal(all.narrow(0, kT - window.size(0), window.size(0)), window));
}

TEST_F(AttentionMapTest, PyramidMatchesBruteForceReductionAtEveryLevel) {
    const auto exact = bruteForce(1, 5);
    // At most 16 tiles a side: 16-cell tiles at level 0, then 32, 64, ...
    viz::TilePyramid pyr(kT, kT, viz::TilePyramid::baseTileFor(kT, kT, 16));
    EXPECT_FALSE(pyr.finished());
    int64_t blocks = 0;
    AttentionMap::streamRows(*capture_, 1, 5, 37, [&](int64_t r0, int64_t n, const float* p) {
        EXPECT_EQ(r0, blocks * 37);
        ++blocks;
        pyr.addRows(r0, n, p);
    });
    EXPECT_EQ(blocks, 6);  // ceil(203 / 37)
    pyr.finish();
    EXPECT_EQ(pyr.levels().front().tile, 16);
    ASSERT_GE(pyr.levels().size(), 2u);
    for (const viz::TilePyramid::Level& level : pyr.levels()) {
        for (int64_t tr = 0; tr < level.tileRows; ++tr) {
            for (int64_t tc = 0; tc < level.tileCols; ++tc) {
                double mx = 0.0, sum = 0.0;
                int64_t cells = 0;
                for (int64_t r = tr * level.tile; r < std::min<int64_t>(kT, (tr + 1) * level.tile); ++r) {
                    for (int64_t c = tc * level.tile; c < std::min<int64_t>(kT, (tc + 1) * level.tile); ++c) {
                        mx = std::max(mx, exact[r][c]);
                        sum += exact[r][c];
                        ++cells;
                    }
                }
                ASSERT_NEAR(level.maxAt(tr, tc), mx, 1e-5) << "tile " << level.tile << " at " << tr << "," << tc;
                ASSERT_NEAR(level.meanAt(tr, tc), sum / double(cells), 1e-6);
            }
        }
    }
    EXPECT_EQ(pyr.levels().back().tileRows, 1);
    EXPECT_EQ(pyr.levels().back().tileCols, 1);
}

TEST_F(AttentionMapTest, ColumnSumsEqualThePrefillsOwnAttention) {
    // An independent path: the model's blocked prefill attention summed each
    // key's attention over all queries (H2O's scores). The map's columns must
    // add up to the same, which checks its GQA mapping, scale and mask.
    for (const auto& [layer, head] : {std::pair<int64_t, int64_t>{1, 5}, {0, 0}}) {
        std::vector<double> sums(kT, 0.0);
        AttentionMap::streamRows(*capture_, layer, head, 50, [&](int64_t, int64_t n, const float* p) {
            for (int64_t r = 0; r < n; ++r)
                for (int64_t c = 0; c < kT; ++c) sums[c] += p[r * kT + c];
        });
        const at::Tensor h2o = capture_->h2oScores(layer)[head];
        for (int64_t c = 0; c < kT; ++c) {
            ASSERT_NEAR(sums[c], h2o[c].item<double>(), 1e-4 * std::max(1.0, sums[c])) << "layer " << layer << " key " << c;
        }
    }
}

TEST_F(AttentionMapTest, QueriesNotKeptAreRecomputedOnDemand) {
    // A capture that kept no queries gets them later from a partial re-run
    // (layers 0..1 only), equal to those the first prefill kept.
    auto later = Capture::fromPrefill(*loaded_->model, prompt_);
    EXPECT_FALSE(later->hasQueries(1, 5));
    later->keepQueries(*loaded_->model, {{1, 5}, {0, 0}});
    ASSERT_TRUE(later->hasQueries(1, 5));
    ASSERT_TRUE(later->hasQueries(0, 0));
    EXPECT_TRUE(at::allclose(later->queries(1, 5), capture_->queries(1, 5), 1e-5, 1e-5));
    EXPECT_TRUE(at::allclose(later->queries(0, 0), capture_->queries(0, 0), 1e-5, 1e-5));
    const std::vector<float> a = AttentionMap::region(*later, 1, 5, 100, 110, 0, kT);
    const std::vector<float> b = AttentionMap::region(*capture_, 1, 5, 100, 110, 0, kT);
    for (size_t i = 0; i < a.size(); ++i) ASSERT_NEAR(a[i], b[i], 1e-5);
    try {
        later->keepQueries(*loaded_->model, {{2, 0}});
        FAIL() << "expected an error";
    } catch (const Error& e) {
        EXPECT_EQ(std::string(e.what()), "head 2:0 does not exist: the model has layers 0-1 and query heads 0-7");
    }
}

TEST_F(AttentionMapTest, RegionIsExactAndRowsSumToOne) {
    const auto exact = bruteForce(0, 0);
    const std::vector<float> region = AttentionMap::region(*capture_, 0, 0, 50, 80, 10, 120);
    ASSERT_EQ(region.size(), size_t(30 * 110));
    for (int64_t r = 0; r < 30; ++r)
        for (int64_t c = 0; c < 110; ++c) ASSERT_NEAR(region[r * 110 + c], exact[50 + r][10 + c], 1e-5);
    const std::vector<float> full = AttentionMap::region(*capture_, 0, 0, kT - 1, kT, 0, kT);
    double sum = 0.0;
    for (float x : full) sum += x;
    EXPECT_NEAR(sum, 1.0, 1e-5);
}

TEST_F(AttentionMapTest, HeadsNotKeptAndRegionsOutsideAreErrors) {
    try {
        AttentionMap::streamRows(*capture_, 1, 4, 64, [](int64_t, int64_t, const float*) {});
        FAIL() << "expected an error";
    } catch (const Error& e) {
        EXPECT_EQ(std::string(e.what()), "the queries of layer 1 head 4 were not kept by the prefill");
    }
    try {
        AttentionMap::region(*capture_, 0, 0, 0, kT + 1, 0, 10);
        FAIL() << "expected an error";
    } catch (const Error& e) {
        EXPECT_EQ(std::string(e.what()), "attention map region [0, 204) x [0, 10) is outside the 203 x 203 map");
    }
    EXPECT_THROW(AttentionMap::region(*capture_, 0, 0, 5, 5, 0, 10), Error);
}

TEST(AttentionMapCapture, UnknownHeadIsOneLineError) {
    LoadedModel loaded = loadModel("random:tiny:layers=2", c10::Device(c10::kCPU), c10::kFloat);
    try {
        Capture::fromPrefill(*loaded.model, {1, 2, 3, 4}, {}, {{2, 0}});
        FAIL() << "expected an error";
    } catch (const Error& e) {
        EXPECT_EQ(std::string(e.what()),
                  "head 2:0 does not exist: the model has layers 0-1 and query heads 0-7");
    }
}

}  // namespace
}  // namespace kvlens
