// HeatmapRaster: exact colours at 1:1, max vs mean when zoomed out, pyramid levels,
// categorical priority, and region checks.
#include <gtest/gtest.h>

#include <random>

#include "core/Error.h"
#include "viz/HeatmapRaster.h"

using namespace kvlens::viz;

TEST(HeatmapRaster, OneCellPerPixelUsesTheExactValue) {
    std::vector<float> m = {0.0f, 0.25f, 0.5f, 0.75f, 1.0f, NAN};
    Image img(5, 4);
    Scale s = Scale::linear(0, 1);
    HeatmapRaster::renderMatrix(m, 2, 3, CellRegion::all(2, 3), Reduction::Max, Colormap::viridis(), s,
                                img, PixelRect{1, 1, 3, 2});
    for (int r = 0; r < 2; ++r)
        for (int c = 0; c < 3; ++c)
            EXPECT_EQ(img.at(1 + c, 1 + r), Colormap::viridis().map(s(m[r * 3 + c]))) << r << "," << c;
    EXPECT_EQ(img.at(3, 2), Colormap::nanColor());
    EXPECT_EQ(img.at(0, 0), (Rgb{255, 255, 255}));  // outside the block: untouched
    EXPECT_EQ(img.at(4, 3), (Rgb{255, 255, 255}));
}

TEST(HeatmapRaster, ZoomedOutMaxKeepsPeaksMeanAverages) {
    // 4x4 matrix into 2x2 pixels: each pixel covers a 2x2 block.
    std::vector<float> m = {1, 0, 0, 0,  //
                            0, 0, 0, 0,  //
                            0, 0, 1, 1,  //
                            0, 0, 1, 1};
    Scale s = Scale::linear(0, 1);
    const Colormap& cm = Colormap::magma();
    Image mx(2, 2), mean(2, 2);
    HeatmapRaster::renderMatrix(m, 4, 4, CellRegion::all(4, 4), Reduction::Max, cm, s, mx, {0, 0, 2, 2});
    HeatmapRaster::renderMatrix(m, 4, 4, CellRegion::all(4, 4), Reduction::Mean, cm, s, mean, {0, 0, 2, 2});
    EXPECT_EQ(mx.at(0, 0), cm.map(1.0));
    EXPECT_EQ(mx.at(1, 0), cm.map(0.0));
    EXPECT_EQ(mx.at(1, 1), cm.map(1.0));
    EXPECT_EQ(mean.at(0, 0), cm.map(0.25));
    EXPECT_EQ(mean.at(1, 1), cm.map(1.0));
}

TEST(HeatmapRaster, ZoomedInRepeatsCellsAndRegionsSelect) {
    std::vector<float> m = {0, 1, 2, 3};  // 2x2
    Scale s = Scale::linear(0, 3);
    Image img(4, 4);
    HeatmapRaster::renderMatrix(m, 2, 2, CellRegion{1, 2, 0, 2}, Reduction::Mean, Colormap::viridis(), s, img,
                                {0, 0, 4, 4});
    // Only row 1 is shown: left half value 2, right half value 3.
    EXPECT_EQ(img.at(0, 0), Colormap::viridis().map(s(2)));
    EXPECT_EQ(img.at(1, 3), Colormap::viridis().map(s(2)));
    EXPECT_EQ(img.at(2, 0), Colormap::viridis().map(s(3)));
    EXPECT_EQ(img.at(3, 3), Colormap::viridis().map(s(3)));
}

TEST(HeatmapRaster, PyramidRenderUsesTheMatchingLevel) {
    const int64_t rows = 64, cols = 64;
    std::mt19937 rng(3);
    std::uniform_real_distribution<float> u(0, 1);
    std::vector<float> m(rows * cols);
    for (auto& v : m) v = u(rng);
    TilePyramid p(rows, cols, 2);
    p.addRows(0, rows, m.data());
    p.finish();
    Scale s = Scale::linear(0, 1);
    const Colormap& cm = Colormap::viridis();
    // 64 cells onto 8 pixels: 8 cells per pixel, the level with tile 8, one tile per pixel.
    Image img(8, 8);
    HeatmapRaster::render(p, CellRegion::all(rows, cols), Reduction::Mean, cm, s, img, {0, 0, 8, 8});
    const auto& l8 = p.levelFor(8.0);
    ASSERT_EQ(l8.tile, 8);
    for (int y = 0; y < 8; ++y)
        for (int x = 0; x < 8; ++x) EXPECT_EQ(img.at(x, y), cm.map(s(l8.meanAt(y, x))));
    HeatmapRaster::render(p, CellRegion::all(rows, cols), Reduction::Max, cm, s, img, {0, 0, 8, 8});
    for (int y = 0; y < 8; ++y)
        for (int x = 0; x < 8; ++x) EXPECT_EQ(img.at(x, y), cm.map(s(l8.maxAt(y, x))));
    // 1:1 on a region: exact cells from level 0's... base tile is 2, so 2x2 blocks.
    Image zoom(4, 4);
    HeatmapRaster::render(p, CellRegion{10, 14, 20, 24}, Reduction::Max, cm, s, zoom, {0, 0, 4, 4});
    EXPECT_EQ(zoom.at(0, 0), cm.map(s(p.levels()[0].maxAt(5, 10))));
    EXPECT_EQ(zoom.at(3, 3), cm.map(s(p.levels()[0].maxAt(6, 11))));
}

TEST(HeatmapRaster, CategoriesShowTheHighestCode) {
    std::vector<uint8_t> codes = {0, 0, 1, 0, 0, 0, 0, 2};  // 1x8
    CategoricalPalette pal = CategoricalPalette::selection();
    Image img(2, 1);
    HeatmapRaster::renderCategories(codes, 1, 8, CellRegion::all(1, 8), pal, img, {0, 0, 2, 1});
    EXPECT_EQ(img.at(0, 0), pal.color(1));
    EXPECT_EQ(img.at(1, 0), pal.color(2));
    Image one(8, 1);
    HeatmapRaster::renderCategories(codes, 1, 8, CellRegion::all(1, 8), pal, one, {0, 0, 8, 1});
    EXPECT_EQ(one.at(0, 0), pal.color(0));
    EXPECT_EQ(one.at(2, 0), pal.color(1));
}

TEST(HeatmapRaster, RejectsBadRegionsAndSizes) {
    std::vector<float> m(6, 0.0f);
    Image img(4, 4);
    Scale s = Scale::linear(0, 1);
    EXPECT_THROW(HeatmapRaster::renderMatrix(m, 2, 3, CellRegion{0, 3, 0, 3}, Reduction::Max, Colormap::magma(), s,
                                             img, {0, 0, 4, 4}),
                 kvlens::Error);
    EXPECT_THROW(HeatmapRaster::renderMatrix(m, 2, 3, CellRegion{1, 1, 0, 3}, Reduction::Max, Colormap::magma(), s,
                                             img, {0, 0, 4, 4}),
                 kvlens::Error);
    EXPECT_THROW(HeatmapRaster::renderMatrix(m, 3, 3, CellRegion::all(3, 3), Reduction::Max, Colormap::magma(), s,
                                             img, {0, 0, 4, 4}),
                 kvlens::Error);
}
