// TilePyramid against a brute-force reduction of the whole matrix, at every level.
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <random>

#include "core/Error.h"
#include "viz/TilePyramid.h"

using kvlens::viz::TilePyramid;

namespace {

struct Brute {
    std::vector<float> max, mean;
    int64_t tileRows, tileCols;
};

Brute bruteForce(const std::vector<float>& m, int64_t rows, int64_t cols, int64_t tile) {
    Brute b;
    b.tileRows = (rows + tile - 1) / tile;
    b.tileCols = (cols + tile - 1) / tile;
    for (int64_t tr = 0; tr < b.tileRows; ++tr)
        for (int64_t tc = 0; tc < b.tileCols; ++tc) {
            float mx = 0;
            double sum = 0;
            int64_t n = 0;
            for (int64_t r = tr * tile; r < std::min(rows, (tr + 1) * tile); ++r)
                for (int64_t c = tc * tile; c < std::min(cols, (tc + 1) * tile); ++c) {
                    mx = std::max(mx, m[r * cols + c]);
                    sum += m[r * cols + c];
                    ++n;
                }
            b.max.push_back(mx);
            b.mean.push_back(static_cast<float>(sum / n));
        }
    return b;
}

void expectMatchesBruteForce(const TilePyramid& p, const std::vector<float>& m) {
    const auto& levels = p.levels();
    ASSERT_FALSE(levels.empty());
    EXPECT_EQ(levels[0].tile, p.baseTile());
    EXPECT_EQ(levels.back().tileRows, 1);
    EXPECT_EQ(levels.back().tileCols, 1);
    for (size_t l = 0; l < levels.size(); ++l) {
        const auto& level = levels[l];
        if (l > 0) {
            EXPECT_EQ(level.tile, levels[l - 1].tile * 2);
            EXPECT_TRUE(levels[l - 1].tileRows > 1 || levels[l - 1].tileCols > 1);
        }
        Brute b = bruteForce(m, p.rows(), p.cols(), level.tile);
        ASSERT_EQ(level.tileRows, b.tileRows) << "level " << l;
        ASSERT_EQ(level.tileCols, b.tileCols) << "level " << l;
        for (int64_t tr = 0; tr < b.tileRows; ++tr)
            for (int64_t tc = 0; tc < b.tileCols; ++tc) {
                size_t i = static_cast<size_t>(tr * b.tileCols + tc);
                EXPECT_EQ(level.maxAt(tr, tc), b.max[i]) << "level " << l << " tile " << tr << "," << tc;
                EXPECT_NEAR(level.meanAt(tr, tc), b.mean[i], 1e-6f * std::max(1.0f, b.mean[i]))
                    << "level " << l << " tile " << tr << "," << tc;
            }
    }
}

}  // namespace

TEST(TilePyramid, EveryLevelEqualsBruteForceWithPartialEdgeTiles) {
    const int64_t rows = 45, cols = 71, base = 4;  // 45 and 71 are not multiples of any tile
    std::mt19937 rng(7);
    std::exponential_distribution<float> dist(3.0f);
    std::vector<float> m(rows * cols);
    for (auto& v : m) v = dist(rng);
    m[44 * cols + 70] = 50.0f;  // a peak in the last, partial tile

    TilePyramid p(rows, cols, base);
    // Rows arrive in shuffled blocks of varying size.
    std::vector<std::pair<int64_t, int64_t>> blocks;
    for (int64_t r = 0; r < rows;) {
        int64_t n = std::min<int64_t>(rows - r, 1 + r % 5);
        blocks.push_back({r, n});
        r += n;
    }
    std::shuffle(blocks.begin(), blocks.end(), rng);
    for (auto [r0, n] : blocks) p.addRows(r0, n, m.data() + r0 * cols);
    p.finish();
    EXPECT_EQ(p.levels().size(), 6u);  // tiles 4, 8, 16, 32, 64, 128
    expectMatchesBruteForce(p, m);
    EXPECT_EQ(p.levels().back().maxAt(0, 0), 50.0f);
}

TEST(TilePyramid, MissingRowsCountAsZeros) {
    const int64_t rows = 10, cols = 7;
    std::vector<float> m(rows * cols);
    std::iota(m.begin(), m.end(), 1.0f);
    TilePyramid p(rows, cols, 3);
    p.addRows(0, 4, m.data());
    p.addRows(8, 2, m.data() + 8 * cols);
    p.finish();
    std::fill(m.begin() + 4 * cols, m.begin() + 8 * cols, 0.0f);
    expectMatchesBruteForce(p, m);
}

TEST(TilePyramid, BaseTileOfOneAndSingleCell) {
    std::vector<float> m = {0.5f, 0.25f, 1.0f};
    TilePyramid p(3, 1, 1);
    p.addRows(0, 3, m.data());
    p.finish();
    expectMatchesBruteForce(p, m);
    EXPECT_EQ(p.levels().size(), 3u);  // 3x1, 2x1, 1x1 tiles

    TilePyramid one(1, 1, 8);
    float v = 2.0f;
    one.addRows(0, 1, &v);
    one.finish();
    ASSERT_EQ(one.levels().size(), 1u);
    EXPECT_EQ(one.levels()[0].meanAt(0, 0), 2.0f);
}

TEST(TilePyramid, LevelForPicksTheCoarsestFittingLevel) {
    TilePyramid p(100, 300, 2);
    std::vector<float> zeros(300 * 100, 0.0f);
    p.addRows(0, 100, zeros.data());
    p.finish();
    EXPECT_EQ(p.levelFor(0.1).tile, 2);   // finer than level 0: level 0
    EXPECT_EQ(p.levelFor(2.0).tile, 2);
    EXPECT_EQ(p.levelFor(3.9).tile, 2);
    EXPECT_EQ(p.levelFor(4.0).tile, 4);
    EXPECT_EQ(p.levelFor(100.0).tile, 64);
    EXPECT_EQ(p.levelFor(1e9).tile, p.levels().back().tile);
    EXPECT_EQ(p.levels().back().tile, 512);
}

TEST(TilePyramid, BaseTileFor) {
    EXPECT_EQ(TilePyramid::baseTileFor(8192, 8192, 1024), 8);
    EXPECT_EQ(TilePyramid::baseTileFor(8193, 10, 1024), 16);
    EXPECT_EQ(TilePyramid::baseTileFor(100, 50, 1024), 1);
    EXPECT_EQ(TilePyramid::baseTileFor(1000, 1000, 1), 1024);
    EXPECT_THROW(TilePyramid::baseTileFor(10, 10, 0), kvlens::Error);
}

TEST(TilePyramid, RejectsBadInput) {
    EXPECT_THROW(TilePyramid(0, 5, 1), kvlens::Error);
    EXPECT_THROW(TilePyramid(5, 0, 1), kvlens::Error);
    EXPECT_THROW(TilePyramid(5, 5, 0), kvlens::Error);
    TilePyramid p(4, 2, 2);
    std::vector<float> v(8, 1.0f);
    EXPECT_THROW(p.addRows(3, 2, v.data()), kvlens::Error);
    EXPECT_THROW(p.addRows(-1, 1, v.data()), kvlens::Error);
    p.addRows(1, 1, v.data());
    EXPECT_THROW(p.addRows(0, 2, v.data()), kvlens::Error);  // row 1 again
    EXPECT_THROW(p.levels(), kvlens::Error);                 // before finish()
    p.finish();
    EXPECT_THROW(p.addRows(0, 1, v.data()), kvlens::Error);
}
