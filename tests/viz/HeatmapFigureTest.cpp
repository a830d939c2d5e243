// HeatmapFigure: exact output size, labels and colour bar drawn, panels stacked, errors.
// The pictures land in <build>/tests/viz/output for a person to look at.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "VizTestSupport.h"
#include "core/Error.h"
#include "viz/HeatmapFigure.h"
#include "viz/Png.h"

using namespace kvlens::viz;
using namespace kvlens::viz::test;

namespace {

// A causal attention-like map: a sink at key 0, a local band, and sparse far hits; rows sum to 1.
TilePyramid attentionPyramid(int64_t t, ValueRange* range) {
    TilePyramid p(t, t, TilePyramid::baseTileFor(t, t, 512));
    std::mt19937 rng(11);
    std::uniform_real_distribution<float> u(0, 1);
    std::vector<float> row(t);
    for (int64_t q = 0; q < t; ++q) {
        double sum = 0;
        for (int64_t k = 0; k < t; ++k) {
            float v = 0;
            if (k <= q) {
                v = 1e-4f * u(rng);
                if (k == 0) v = 5.0f;
                if (q - k < 16) v += 1.0f / (1 + q - k);
                if ((k * 37) % 101 == 0) v += 0.05f;
            }
            row[k] = v;
            sum += v;
        }
        for (auto& v : row) v = static_cast<float>(v / sum);
        range->include(row.data(), row.size());
        p.addRows(q, 1, row.data());
    }
    p.finish();
    return p;
}

int darkPixels(const Image& img, int x0, int y0, int x1, int y1) {
    int n = 0;
    for (int y = y0; y < y1; ++y)
        for (int x = x0; x < x1; ++x)
            if (img.at(x, y).lightness() < 40) ++n;
    return n;
}

}  // namespace

TEST(HeatmapFigure, AttentionFigureHasTheStatedSizeAndItsLabels) {
    ValueRange range;
    TilePyramid p = attentionPyramid(1024, &range);
    HeatmapFigure fig(900, 760);
    fig.setTitle("Attention weights, layer 3 head 7", "max over the cells under each pixel; log colour scale");
    fig.setXAxis("key position", "token");
    fig.setYAxis("query position", "token");
    fig.setColorBar(Colormap::magma(), Scale::shared({range}, Scale::Kind::Log, 5), "attention weight", "");
    fig.addPyramidPanel(p, CellRegion::all(1024, 1024), Reduction::Max);
    std::string path = outputPath("attention_L3_H7.png");
    fig.write(path);
    Image img = readPng(path);
    EXPECT_EQ(img.width(), 900);
    EXPECT_EQ(img.height(), 760);
    // Title ink in the top band, x label ink in the bottom band, y label ink at the left.
    EXPECT_GT(darkPixels(img, 200, 0, 700, 30), 50);
    EXPECT_GT(darkPixels(img, 300, 730, 600, 760), 30);
    EXPECT_GT(darkPixels(img, 0, 300, 25, 460), 30);
    EXPECT_EQ(Image(fig.render()).bytes(), img.bytes());

    // The CSV beside it holds the tiles: level 0 (tile 2) would be 512 x 512 tiles, over the
    // 65536 cap, so the next level (tile 4, 256 x 256 tiles) is listed.
    std::string csv = readFile(outputPath("attention_L3_H7.csv"));
    CsvTable t = fig.csv();
    EXPECT_EQ(csv, t.str());
    EXPECT_EQ(t.header(), (std::vector<std::string>{"panel", "query position (token) from", "query position (token) to",
                                                    "key position (token) from", "key position (token) to", "max",
                                                    "mean", "category"}));
    ASSERT_EQ(t.rows().size(), 65536u);
    const auto& level = p.levels()[1];
    ASSERT_EQ(level.tile, 4);
    EXPECT_EQ(t.rows()[257], (std::vector<std::string>{"0", "4", "7", "4", "7", CsvTable::number32(level.maxAt(1, 1)),
                                                       CsvTable::number32(level.meanAt(1, 1)), ""}));
    EXPECT_EQ(fig.csv(1).rows().size(), 1u);  // capped: the single top tile

    // A zoomed region renders too, with ticks from the region's own positions.
    HeatmapFigure zoom(600, 500);
    zoom.setTitle("Attention, zoom");
    zoom.setXAxis("key position", "token");
    zoom.setYAxis("query position", "token");
    zoom.setColorBar(Colormap::magma(), Scale::shared({range}, Scale::Kind::Log, 5), "attention weight", "");
    zoom.addPyramidPanel(p, CellRegion{900, 1024, 900, 1024}, Reduction::Max);
    zoom.writePng(outputPath("attention_zoom.png"));
    EXPECT_EQ(readPng(outputPath("attention_zoom.png")).width(), 600);
}

TEST(HeatmapFigure, StackedCategoryPanelsWithLegend) {
    const int64_t heads = 8, positions = 600, layers = 6;
    HeatmapFigure fig(1000, 700);
    fig.setTitle("Kept positions per layer and head", "SnapKV, budget 128 of 600, window 32");
    fig.setXAxis("prompt position", "token");
    fig.setYAxis("layer (rows: heads 0-7)", "");
    fig.setLegend(CategoricalPalette::selection());
    std::mt19937 rng(5);
    for (int64_t l = 0; l < layers; ++l) {
        std::vector<uint8_t> codes(heads * positions, 0);
        for (int64_t h = 0; h < heads; ++h) {
            for (int64_t k = 0; k < 4; ++k) codes[h * positions + k] = 1;
            for (int64_t k = positions - 32; k < positions; ++k) codes[h * positions + k] = 2;
            for (int i = 0; i < 92; ++i) codes[h * positions + 4 + rng() % (positions - 36)] = 1;
        }
        fig.addCategoryPanel(std::move(codes), heads, positions, "L" + std::to_string(l));
    }
    std::string path = outputPath("selection_overview.png");
    fig.write(path);
    CsvTable t = fig.csv();
    ASSERT_EQ(t.rows().size(), size_t(layers * heads * positions));
    EXPECT_EQ(t.rows()[positions - 1],
              (std::vector<std::string>{"L0", "0", "0", "599", "599", "2", "2", "observation window"}));
    EXPECT_EQ(readFile(outputPath("selection_overview.csv")), t.str());
    Image img = readPng(path);
    EXPECT_EQ(img.width(), 1000);
    EXPECT_EQ(img.height(), 700);
    int kept = 0;
    Rgb keptColor = CategoricalPalette::selection().color(1);
    for (int y = 0; y < img.height(); ++y)
        for (int x = 0; x < img.width(); ++x) kept += img.at(x, y) == keptColor;
    EXPECT_GT(kept, 1000);

    HeatmapFigure one(900, 420);
    one.setTitle("Selection, layer 2", "SnapKV, budget 128 of 600");
    one.setXAxis("prompt position", "token");
    one.setYAxis("head", "");
    one.setLegend(CategoricalPalette::selection());
    std::vector<uint8_t> codes(heads * positions, 0);
    for (int64_t i = 0; i < heads * positions; i += 7) codes[i] = 1;
    std::vector<std::string> names;
    for (int h = 0; h < heads; ++h) names.push_back("H" + std::to_string(h));
    one.addCategoryPanel(codes, heads, positions, "", names);
    one.writePng(outputPath("selection_L2.png"));
    EXPECT_EQ(readPng(outputPath("selection_L2.png")).height(), 420);
}

TEST(HeatmapFigure, DivergingDeltaAndColormapSampler) {
    const int64_t rows = 24, cols = 200;
    std::vector<float> delta(rows * cols);
    for (int64_t r = 0; r < rows; ++r)
        for (int64_t c = 0; c < cols; ++c)
            delta[r * cols + c] = static_cast<float>(std::sin(c / 20.0) * (r - rows / 2.0) / rows * 0.2);
    HeatmapFigure fig(800, 360);
    fig.setTitle("Attention difference, SnapKV - full cache", "layer 5, per head");
    fig.setXAxis("key position", "token");
    fig.setYAxis("head", "");
    fig.setColorBar(Colormap::diverging(), Scale::symmetricShared({ValueRange::of(delta.data(), delta.size())}),
                    "attention difference", "probability");
    fig.addMatrixPanel(delta, rows, cols, Reduction::Mean);
    fig.writePng(outputPath("delta.png"));
    EXPECT_EQ(readPng(outputPath("delta.png")).width(), 800);

    // All three maps, stacked, on one linear 0..1 scale.
    std::vector<float> ramp(256);
    for (int i = 0; i < 256; ++i) ramp[i] = i / 255.0f;
    Image sheet(700, 420);
    int y = 0;
    for (const Colormap* m : {&Colormap::viridis(), &Colormap::magma(), &Colormap::diverging()}) {
        HeatmapFigure f(700, 140);
        f.setTitle(m->name());
        f.setXAxis("table entry", "");
        f.setColorBar(*m, Scale::linear(0, 1), "t", "");
        f.addMatrixPanel(ramp, 1, 256, Reduction::Mean);
        f.renderInto(sheet, 0, y);
        y += 140;
    }
    writePng(sheet, outputPath("colormaps.png"));
    EXPECT_EQ(readPng(outputPath("colormaps.png")).height(), 420);
}

TEST(HeatmapFigure, RejectsWhatCannotBeDrawn) {
    HeatmapFigure none(400, 300);
    EXPECT_THROW(none.render(), kvlens::Error);

    HeatmapFigure noBar(400, 300);
    noBar.addMatrixPanel({1, 2, 3, 4}, 2, 2, Reduction::Max);
    EXPECT_THROW(noBar.render(), kvlens::Error);

    HeatmapFigure mismatch(400, 300);
    mismatch.setColorBar(Colormap::viridis(), Scale::linear(0, 1), "v", "");
    mismatch.addMatrixPanel({1, 2, 3, 4}, 2, 2, Reduction::Max);
    mismatch.addMatrixPanel({1, 2, 3}, 1, 3, Reduction::Max);
    EXPECT_THROW(mismatch.render(), kvlens::Error);

    HeatmapFigure tiny(60, 40);
    tiny.setTitle("A title that needs room");
    tiny.setColorBar(Colormap::viridis(), Scale::linear(0, 1), "value", "unit");
    tiny.addMatrixPanel({1, 2, 3, 4}, 2, 2, Reduction::Max);
    EXPECT_THROW(tiny.render(), kvlens::Error);

    EXPECT_THROW(HeatmapFigure(0, 10), kvlens::Error);

    HeatmapFigure ok(300, 200);
    ok.setColorBar(Colormap::viridis(), Scale::linear(0, 4), "value", "");
    ok.addMatrixPanel({1, 2, 3, 4}, 2, 2, Reduction::Max);
    std::string bad = "/nonexistent-kvlens-dir/fig.png";
    try {
        ok.writePng(bad);
        FAIL() << "no error";
    } catch (const kvlens::Error& e) {
        EXPECT_NE(std::string(e.what()).find(bad), std::string::npos);
    }
}
