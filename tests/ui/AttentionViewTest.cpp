// AttentionView drawn for real under Xvfb: known cells checked in the grabbed framebuffer
// (hot, zero, masked upper triangle, outside the map), the kept strip column by column,
// pan and zoom moving the picture exactly, mouse and keys driving the view, exact cells
// asked for once per region and then drawn and named, the tooltip text, and the errors.
#include <gtest/gtest.h>

#include <QApplication>
#include <QDir>
#include <QImage>
#include <QKeyEvent>
#include <QMouseEvent>
#include <QSignalSpy>
#include <QTest>
#include <QWheelEvent>
#include <algorithm>
#include <cmath>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/Error.h"
#include "ui/AttentionView.h"
#include "viz/Colormap.h"
#include "viz/Scale.h"
#include "viz/TilePyramid.h"

namespace kvlens::ui {
namespace {

constexpr int kWidth = 400;
constexpr int kHeight = 320;
const QColor kClear(32, 32, 32);

using CellFn = std::function<float(int64_t row, int64_t col)>;

std::shared_ptr<const viz::TilePyramid> makePyramid(int64_t n, int64_t baseTile, const CellFn& f) {
    auto p = std::make_shared<viz::TilePyramid>(n, n, baseTile);
    std::vector<float> row(static_cast<size_t>(n));
    for (int64_t r = 0; r < n; ++r) {
        for (int64_t c = 0; c < n; ++c) row[c] = c <= r ? f(r, c) : 0.0f;
        p->addRows(r, 1, row.data());
    }
    p->finish();
    return p;
}

// 16 x 16, one cell per tile: three hot cells, a zero cell, the rest faint.
float smallMap(int64_t r, int64_t c) {
    if (r == 5 && c == 2) return 0.9f;
    if (r == 12 && c == 3) return 0.8f;
    if (r == 10 && c == 10) return 0.05f;
    if (r == 8 && c == 4) return 0.0f;
    return 1e-6f;  // below the colour range (max x 1e-4): the colormap's low end
}

// A pattern whose cells differ inside every 4 x 4 tile, and one peak that sets the range.
float patternMap(int64_t r, int64_t c) {
    if (r == 300 && c == 7) return 0.5f;
    return 0.001f * static_cast<float>(1 + (r * 7 + c * 3) % 10);
}

// Max and mean of patternMap (causal: zero above the diagonal) over a tile, as the
// tooltip prints them.
std::string tileText(int64_t n, int64_t tile, int64_t row, int64_t col) {
    const int64_t r0 = row / tile * tile, c0 = col / tile * tile;
    double sum = 0, max = 0;
    int cells = 0;
    for (int64_t r = r0; r < std::min(n, r0 + tile); ++r)
        for (int64_t c = c0; c < std::min(n, c0 + tile); ++c) {
            const double v = c <= r ? patternMap(r, c) : 0.0f;
            sum += v;
            max = std::max(max, v);
            ++cells;
        }
    return QStringLiteral("query %1 -> key %2: max %3, mean %4 over a %5x%5 tile")
        .arg(row)
        .arg(col)
        .arg(QString::number(max, 'g', 3), QString::number(sum / cells, 'g', 3))
        .arg(tile)
        .toStdString();
}

const std::vector<std::string> kTokens = {"<s>", " Once", " upon", " a",  " time", ",",
                                          " a",  " cat",  " sat",  " on", " the",  " mat",
                                          ".",   "\n",    " The",  " end"};

QColor expectedColour(float value, float mapMax) {
    const double lo = mapMax * 1e-4;
    const viz::Rgb c = viz::Colormap::magma().map(viz::Scale::log(lo, mapMax, lo)(value));
    return QColor(c.r, c.g, c.b);
}

::testing::AssertionResult colourNear(const QImage& image, QPointF at, const QColor& want,
                                      int tolerance = 3) {
    const int x = static_cast<int>(std::floor(at.x())), y = static_cast<int>(std::floor(at.y()));
    const QColor got = image.pixelColor(x, y);
    if (std::abs(got.red() - want.red()) <= tolerance &&
        std::abs(got.green() - want.green()) <= tolerance &&
        std::abs(got.blue() - want.blue()) <= tolerance)
        return ::testing::AssertionSuccess();
    return ::testing::AssertionFailure()
           << "pixel (" << x << ", " << y << ") is " << got.name().toStdString() << ", expected "
           << want.name().toStdString();
}

int brightPixels(const QImage& image, QRect r) {
    int n = 0;
    for (int y = r.top(); y <= r.bottom(); ++y)
        for (int x = r.left(); x <= r.right(); ++x) {
            const QColor c = image.pixelColor(x, y);
            if (c.red() > 150 && c.green() > 150 && c.blue() > 150) ++n;
        }
    return n;
}

void showAndWait(AttentionView& view, int width = kWidth, int height = kHeight) {
    view.setClearColor(kClear);
    view.resize(width, height);
    view.show();
    ASSERT_TRUE(QTest::qWaitForWindowExposed(&view));
    QTest::qWait(50);
    // No pointer over the widget: no tooltip over the pixels under test.
    QEvent leave(QEvent::Leave);
    QApplication::sendEvent(&view, &leave);
    QTest::qWait(50);
}

QImage frame(AttentionView& view) {
    view.repaint();
    return view.grabFramebuffer();
}

void saveScreenshot(const QImage& image, const char* name) {
    QDir().mkpath(KVLENS_UI_TEST_DIR);
    EXPECT_TRUE(image.save(QStringLiteral(KVLENS_UI_TEST_DIR "/") + name));
}

TEST(AttentionViewTest, DrawsHotZeroMaskedAndOutsideCellsAtTheirPixels) {
    AttentionView view;
    view.setMap(makePyramid(16, 1, smallMap), 3, 5, "story");
    showAndWait(view);
    view.setView(0, 0, 0.1);  // 10 px per cell
    const QImage image = frame(view);
    ASSERT_EQ(image.width(), kWidth);

    EXPECT_TRUE(colourNear(image, view.cellCenter(5, 2), expectedColour(0.9f, 0.9f)));
    EXPECT_TRUE(colourNear(image, view.cellCenter(12, 3), expectedColour(0.8f, 0.9f), 6));
    EXPECT_GT(QColor(image.pixel(view.cellCenter(5, 2).toPoint())).lightness(), 200);
    EXPECT_TRUE(colourNear(image, view.cellCenter(10, 10), expectedColour(0.05f, 0.9f), 6));
    const QColor low = expectedColour(0.0f, 0.9f);  // magma's first entry, near black
    EXPECT_TRUE(colourNear(image, view.cellCenter(8, 4), low));
    EXPECT_TRUE(colourNear(image, view.cellCenter(15, 0), low));
    EXPECT_TRUE(colourNear(image, view.cellCenter(0, 0), low));  // the diagonal is attention
    EXPECT_TRUE(colourNear(image, view.cellCenter(2, 9), AttentionView::maskedColor()));
    EXPECT_TRUE(colourNear(image, view.cellCenter(0, 1), AttentionView::maskedColor()));
    EXPECT_TRUE(colourNear(image, view.cellCenter(14, 15), AttentionView::maskedColor()));
    EXPECT_NE(AttentionView::maskedColor(), low);
    // Cell edges to the pixel: cell (5, 2) is [left + 20, left + 30) x [top + 50, top + 60).
    const QRectF map = view.mapRect();
    const QPointF hot(map.left() + 20, map.top() + 50);
    EXPECT_TRUE(colourNear(image, hot, expectedColour(0.9f, 0.9f)));
    EXPECT_TRUE(colourNear(image, hot + QPointF(9, 9), expectedColour(0.9f, 0.9f)));
    EXPECT_TRUE(colourNear(image, hot + QPointF(-1, 0), low));
    EXPECT_TRUE(colourNear(image, hot + QPointF(10, 0), low));
    EXPECT_TRUE(colourNear(image, hot + QPointF(0, 10), low));
    // Beyond the matrix (16 cells = 160 px) is the clear colour.
    EXPECT_TRUE(colourNear(image, view.cellCenter(3, 17), kClear));
    EXPECT_TRUE(colourNear(image, view.cellCenter(17, 3), kClear));
    EXPECT_EQ(view.titleText(), "story  L3 H5, 16 x 16, tile 1");
}

TEST(AttentionViewTest, KeptStripMarksExactlyTheKeptKeyColumns) {
    AttentionView view;
    view.setMap(makePyramid(16, 1, smallMap), 0, 0, "");
    const std::vector<int32_t> kept = {0, 3, 4, 9, 15, 40};  // 40 is past the map: not drawn
    view.setKept(kept);
    showAndWait(view);
    view.setView(0, 0, 0.1);
    const QImage image = frame(view);
    const QRectF map = view.mapRect();
    const int y = static_cast<int>(map.bottom()) + 4 + 4;  // inside the strip
    QColor stripBackground;
    for (int x = static_cast<int>(map.left()); x < static_cast<int>(map.left()) + 160; ++x) {
        const int col = (x - static_cast<int>(map.left())) / 10;
        const bool isKept = std::find(kept.begin(), kept.end(), col) != kept.end();
        const QColor got = image.pixelColor(x, y);
        if (isKept) {
            ASSERT_TRUE(colourNear(image, QPointF(x, y), AttentionView::keptColor()))
                << "key " << col;
        } else {
            if (!stripBackground.isValid()) stripBackground = got;
            ASSERT_EQ(got, stripBackground) << "key " << col << " at x " << x;
            ASSERT_NE(got, AttentionView::keptColor());
        }
    }
    // Past the matrix's last key the strip is not drawn.
    EXPECT_TRUE(colourNear(image, QPointF(map.left() + 165, y), kClear));

    // Zoomed out, a pixel over several keys is shaded by the share of them kept: at 4 keys
    // per pixel, keys 0..3 are all kept, 4..7 half, 8..11 none.
    AttentionView wide;
    wide.setMap(makePyramid(512, 4, patternMap), 0, 0, "");
    wide.setKept({0, 1, 2, 3, 4, 5});
    showAndWait(wide);
    wide.setView(0, 0, 4.0);
    const QImage out = frame(wide);
    const int x0 = static_cast<int>(wide.mapRect().left());
    const int wy = static_cast<int>(wide.mapRect().bottom()) + 4 + 4;
    const QColor all = out.pixelColor(x0, wy), half = out.pixelColor(x0 + 1, wy);
    EXPECT_TRUE(colourNear(out, QPointF(x0, wy), AttentionView::keptColor()));
    EXPECT_EQ(out.pixelColor(x0 + 2, wy), stripBackground);
    EXPECT_GT(half.blue(), stripBackground.blue());
    EXPECT_LT(half.blue(), all.blue());
    // No kept keys: no strip.
    wide.setKept({});
    EXPECT_TRUE(colourNear(frame(wide), QPointF(x0, wy), kClear));
}

TEST(AttentionViewTest, MarkedKeysAreTicksBetweenTheMapAndTheKeptStrip) {
    AttentionView view;
    view.setMap(makePyramid(16, 1, smallMap), 0, 0, "");
    view.setKept({0, 1});
    view.setMarkedKeys({9, 4, 5, 5, 40});  // unsorted, a repeat, one past the map
    EXPECT_EQ(view.markedKeys(), (std::vector<int64_t>{4, 5, 9, 40}));
    showAndWait(view);
    view.setView(0, 0, 0.1);  // 10 px per key
    const QImage image = frame(view);
    const QRectF map = view.mapRect();
    const int y = static_cast<int>(map.bottom()) + 2;  // between the map and the strip
    for (int key = 0; key < 16; ++key) {
        const QPointF at(map.left() + 10 * key + 5, y);
        const bool marked = key == 4 || key == 5 || key == 9;
        EXPECT_EQ(colourNear(image, at, AttentionView::markColor()), marked) << "key " << key;
    }
    // The kept strip under the ticks is as it was.
    EXPECT_TRUE(colourNear(image, QPointF(map.left() + 5, map.bottom() + 8), AttentionView::keptColor()));
    view.setMarkedKeys({});
    EXPECT_FALSE(colourNear(frame(view), QPointF(map.left() + 45, y), AttentionView::markColor()));
}

TEST(AttentionViewTest, PanMovesThePictureByTheRightPixels) {
    AttentionView view;
    view.setMap(makePyramid(16, 1, smallMap), 0, 0, "");
    showAndWait(view);
    view.setView(0, 0, 0.1);
    const QImage before = frame(view);
    view.panBy(30, 20);
    EXPECT_DOUBLE_EQ(view.viewCol0(), -3.0);
    EXPECT_DOUBLE_EQ(view.viewRow0(), -2.0);
    const QImage after = frame(view);
    const QRectF map = view.mapRect();
    const int left = static_cast<int>(map.left()), top = static_cast<int>(map.top());
    int differing = 0;
    for (int j = 0; j < 160; ++j)
        for (int i = 0; i < 160; ++i)
            if (before.pixel(left + i, top + j) != after.pixel(left + 30 + i, top + 20 + j))
                ++differing;
    EXPECT_EQ(differing, 0);
    // The strip of the map uncovered on the left and top is outside the matrix now.
    EXPECT_TRUE(colourNear(after, QPointF(left + 5, top + 100), kClear));
    EXPECT_TRUE(colourNear(after, QPointF(left + 100, top + 5), kClear));

    // A left drag pans the same way.
    const QPointF from = view.cellCenter(8, 8);
    QTest::mousePress(&view, Qt::LeftButton, Qt::NoModifier, from.toPoint());
    QMouseEvent move(QEvent::MouseMove, from + QPointF(-20, 10),
                     view.mapToGlobal(from + QPointF(-20, 10)), Qt::NoButton, Qt::LeftButton,
                     Qt::NoModifier);
    QApplication::sendEvent(&view, &move);
    QTest::mouseRelease(&view, Qt::LeftButton, Qt::NoModifier, (from + QPointF(-20, 10)).toPoint());
    EXPECT_NEAR(view.viewCol0(), -1.0, 1e-9);
    EXPECT_NEAR(view.viewRow0(), -3.0, 1e-9);
}

TEST(AttentionViewTest, ZoomKeepsTheCellUnderTheCursorInPlace) {
    AttentionView view;
    view.setMap(makePyramid(16, 1, smallMap), 0, 0, "");
    showAndWait(view);
    view.setView(0, 0, 0.1);
    const QPointF at = view.cellCenter(5, 2) + QPointF(2.5, -3.5);
    const QRectF map = view.mapRect();
    auto cellUnder = [&](QPointF p) {
        return QPointF(view.viewCol0() + (p.x() - map.left()) * view.cellsPerPixel(),
                       view.viewRow0() + (p.y() - map.top()) * view.cellsPerPixel());
    };
    const QPointF cell = cellUnder(at);
    view.zoomAt(at, 2.0);
    EXPECT_DOUBLE_EQ(view.cellsPerPixel(), 0.05);
    EXPECT_NEAR(cellUnder(at).x(), cell.x(), 1e-9);
    EXPECT_NEAR(cellUnder(at).y(), cell.y(), 1e-9);
    const QImage image = frame(view);
    EXPECT_TRUE(colourNear(image, at, expectedColour(0.9f, 0.9f)));
    // Cell (5, 2) is 20 px now, still around the cursor.
    EXPECT_TRUE(
        colourNear(image, view.cellCenter(5, 2) + QPointF(9, 9), expectedColour(0.9f, 0.9f)));
    EXPECT_TRUE(
        colourNear(image, view.cellCenter(5, 2) + QPointF(11, 0), expectedColour(0.0f, 0.9f)));

    // One wheel notch up magnifies by 1.25 about the pointer.
    const QPointF cell2 = cellUnder(at);
    QWheelEvent wheel(at, view.mapToGlobal(at), QPoint(), QPoint(0, 120), Qt::NoButton,
                      Qt::NoModifier, Qt::NoScrollPhase, false);
    QApplication::sendEvent(&view, &wheel);
    EXPECT_NEAR(view.cellsPerPixel(), 0.05 / 1.25, 1e-12);
    EXPECT_NEAR(cellUnder(at).x(), cell2.x(), 1e-9);
    EXPECT_NEAR(cellUnder(at).y(), cell2.y(), 1e-9);

    // Home and double-click fit the map again: 16 cells over the shorter map side.
    const double fit = 16.0 / std::min(map.width(), map.height());
    QTest::keyClick(&view, Qt::Key_Home);
    EXPECT_DOUBLE_EQ(view.cellsPerPixel(), fit);
    EXPECT_DOUBLE_EQ(view.viewCol0(), 0.0);
    view.setView(3, 4, 0.02);
    QTest::mouseDClick(&view, Qt::LeftButton, Qt::NoModifier, view.cellCenter(8, 8).toPoint());
    EXPECT_DOUBLE_EQ(view.cellsPerPixel(), fit);
    EXPECT_DOUBLE_EQ(view.viewRow0(), 0.0);

    // The zoom stays between 64 px per cell and 4 x the fit.
    view.zoomAt(at, 1e6);
    EXPECT_DOUBLE_EQ(view.cellsPerPixel(), 1.0 / 64);
    view.zoomAt(at, 1e-6);
    EXPECT_DOUBLE_EQ(view.cellsPerPixel(), 4 * fit);
}

TEST(AttentionViewTest, RasterIsRebuiltOnlyWhenTheViewOrDataChange) {
    AttentionView view;
    view.setMap(makePyramid(16, 1, smallMap), 0, 0, "");
    showAndWait(view);
    frame(view);
    const auto builds = view.rasterBuilds();
    const auto frames = view.frameCount();
    view.setKept({1, 2});  // drawn by ImGui over the raster
    frame(view);
    QMouseEvent move(QEvent::MouseMove, view.cellCenter(4, 4),
                     view.mapToGlobal(view.cellCenter(4, 4)), Qt::NoButton, Qt::NoButton,
                     Qt::NoModifier);
    QApplication::sendEvent(&view, &move);
    frame(view);
    EXPECT_GT(view.frameCount(), frames + 1);
    EXPECT_EQ(view.rasterBuilds(), builds);
    view.panBy(1, 0);
    frame(view);
    EXPECT_EQ(view.rasterBuilds(), builds + 1);
}

TEST(AttentionViewTest, AsksForExactCellsOnceWhenZoomedPastTheTilesAndShowsThem) {
    const auto pyramid = makePyramid(512, 4, patternMap);
    AttentionView view;
    QSignalSpy spy(&view, &AttentionView::exactRegionNeeded);
    view.setMap(pyramid, 0, 0, "");
    showAndWait(view);
    // Fitted (2.6 cells per pixel, under the 4-cell tiles) but 512 cells in view: too many.
    EXPECT_EQ(spy.count(), 0);
    view.setView(0, 0, 8.0);
    EXPECT_EQ(spy.count(), 0);
    const QPointF probe(view.mapRect().left() + 2, view.mapRect().top() + 2);
    EXPECT_EQ(view.hoverText(probe).toStdString(), tileText(512, 8, 16, 16));

    // 196 x 200 cells at 1 cell per pixel: cols [100, 296), rows [200, 400), aligned to 64.
    view.setView(100, 200, 1.0);
    ASSERT_EQ(spy.count(), 1);
    const QList<QVariant> args = spy.takeFirst();
    EXPECT_EQ(args.at(0).toLongLong(), 192);  // row0
    EXPECT_EQ(args.at(1).toLongLong(), 64);   // col0
    EXPECT_EQ(args.at(2).toLongLong(), 256);  // rows: up to 448
    EXPECT_EQ(args.at(3).toLongLong(), 256);  // cols: up to 320
    view.setView(101, 203, 1.0);              // the same region, not arrived yet: not again
    view.panBy(-2, 0);
    EXPECT_EQ(spy.count(), 0);

    // Before the exact cells: each pixel shows its 4 x 4 tile's max (cells 300..303 x
    // 148..151 reach 0.009; cell (301, 151) is 0.001).
    view.setView(140, 290, 0.1);  // 10 px per cell
    spy.clear();
    const QPointF cell = view.cellCenter(301, 151);
    QImage image = frame(view);
    EXPECT_TRUE(colourNear(image, cell, expectedColour(0.009f, 0.5f), 6));
    EXPECT_EQ(view.hoverText(view.cellCenter(301, 150)).toStdString(), tileText(512, 4, 301, 150));
    // By hand: tenths 5 8 1 4 / 2 5 8 1 / 9 2 5 8 / 6 9 2 5 -> max 9, mean 80 / 16.
    EXPECT_EQ(tileText(512, 4, 301, 150),
              "query 301 -> key 150: max 0.009, mean 0.005 over a 4x4 tile");

    std::vector<float> values(256 * 256);
    for (int64_t r = 0; r < 256; ++r)
        for (int64_t c = 0; c < 256; ++c)
            values[r * 256 + c] = c + 64 <= r + 192 ? patternMap(r + 192, c + 64) : 0.0f;
    EXPECT_EQ(view.titleText(), "L0 H0, 512 x 512, tile 4");
    view.setExactRegion(192, 64, 256, 256, values);
    EXPECT_EQ(view.titleText(), "L0 H0, 512 x 512, tile 4 (exact cells in view)");
    EXPECT_FLOAT_EQ(patternMap(301, 151), 0.001f);  // 1 + (2107 + 453) % 10 = 1
    image = frame(view);
    EXPECT_TRUE(colourNear(image, cell, expectedColour(0.001f, 0.5f), 6));
    EXPECT_FALSE(colourNear(image, cell, expectedColour(0.009f, 0.5f), 6));
    EXPECT_EQ(view.hoverText(view.cellCenter(301, 150)).toStdString(),
              "query 301 -> key 150: 0.008 (exact)");
    EXPECT_EQ(view.hoverText(cell).toStdString(), "query 301 -> key 151: 0.001 (exact)");
    // Covered: panning inside the region asks for nothing.
    view.panBy(10, 10);
    EXPECT_EQ(spy.count(), 0);
    // Elsewhere: a new region.
    view.setView(0, 450, 0.5);
    ASSERT_EQ(spy.count(), 1);
    EXPECT_EQ(spy.at(0).at(0).toLongLong(), 448);
    EXPECT_EQ(spy.at(0).at(1).toLongLong(), 0);
    EXPECT_EQ(spy.at(0).at(2).toLongLong(), 64);  // clipped at the map's 512 rows
    EXPECT_EQ(spy.at(0).at(3).toLongLong(), 128);

    // A new map forgets the exact cells.
    view.setMap(pyramid, 0, 1, "");
    view.setView(140, 290, 0.1);
    EXPECT_EQ(view.hoverText(view.cellCenter(301, 150)).toStdString(), tileText(512, 4, 301, 150));

    // One cell per tile: the pyramid is exact already, nothing is asked for.
    AttentionView fine;
    QSignalSpy fineSpy(&fine, &AttentionView::exactRegionNeeded);
    fine.setMap(makePyramid(64, 1, patternMap), 0, 0, "");
    showAndWait(fine);
    fine.setView(0, 0, 0.05);
    EXPECT_EQ(fineSpy.count(), 0);
}

TEST(AttentionViewTest, HoverTextNamesTokensValuesAndKeptKeys) {
    AttentionView view;
    view.setMap(makePyramid(16, 1, smallMap), 0, 0, "");
    showAndWait(view);
    view.setView(0, 0, 0.1);
    EXPECT_EQ(view.hoverText(view.cellCenter(5, 2)).toStdString(), "query 5 -> key 2: 0.9");
    view.setTokens(std::make_shared<const std::vector<std::string>>(kTokens));
    view.setKept({2, 7});
    EXPECT_EQ(view.hoverText(view.cellCenter(5, 2)).toStdString(),
              "query 5 ',' -> key 2 ' upon': 0.9\nkey 2 kept");
    EXPECT_EQ(view.hoverText(view.cellCenter(13, 12)).toStdString(),
              "query 13 '\\n' -> key 12 '.': 1e-06\nkey 12 not kept");
    EXPECT_EQ(view.hoverText(view.cellCenter(2, 9)).toStdString(),
              "query 2 ' upon' -> key 9 ' on': masked (a query sees no later key)\nkey 9 not kept");
    // Outside the matrix, or off the map area: nothing.
    EXPECT_EQ(view.hoverText(view.cellCenter(3, 17)), QString());
    EXPECT_EQ(view.hoverText(QPointF(2, 2)), QString());
    // Tokens for fewer positions than the map: the others by position only.
    view.setTokens(
        std::make_shared<const std::vector<std::string>>(kTokens.begin(), kTokens.begin() + 4));
    EXPECT_EQ(view.hoverText(view.cellCenter(5, 2)).toStdString(),
              "query 5 -> key 2 ' upon': 0.9\nkey 2 kept");

    // Shown as a tooltip where the pointer is.
    QMouseEvent move(QEvent::MouseMove, view.cellCenter(5, 2),
                     view.mapToGlobal(view.cellCenter(5, 2)), Qt::NoButton, Qt::NoButton,
                     Qt::NoModifier);
    QApplication::sendEvent(&view, &move);
    QTest::qWait(100);
    const QImage image = frame(view);
    const QPointF p = view.cellCenter(5, 2);
    EXPECT_GT(brightPixels(image, QRect(p.toPoint() + QPoint(8, 8), QSize(150, 30))), 40);
}

TEST(AttentionViewTest, TokenLabelsWhenCellsAreWideTicksOtherwise) {
    AttentionView view;
    view.setMap(makePyramid(16, 1, smallMap), 0, 0, "story");
    view.setTokens(std::make_shared<const std::vector<std::string>>(kTokens));
    view.setKept({0, 1, 7, 10, 11});
    showAndWait(view, 560, 520);
    view.setView(0, 0, 1.0 / 24);  // 24 px per cell: 14 x 16 cells in view
    QImage image = frame(view);
    saveScreenshot(image, "attention_view_tokens.png");
    const QRectF map = view.mapRect();
    // Query 7 " cat" left of its row, key 3 " a" under its column (rotated), clipped to the
    // cell: nothing in the label area halfway between two cells' labels.
    const QPointF q7 = view.cellCenter(7, 0), k3 = view.cellCenter(15, 3);
    EXPECT_GT(brightPixels(image, QRect(QPoint(4, static_cast<int>(q7.y()) - 5),
                                        QPoint(static_cast<int>(map.left()) - 4,
                                               static_cast<int>(q7.y()) + 5))),
              20);
    const int labelsTop = static_cast<int>(map.bottom()) + 16;
    EXPECT_GT(brightPixels(image, QRect(QPoint(static_cast<int>(k3.x()) - 5, labelsTop),
                                        QPoint(static_cast<int>(k3.x()) + 5, labelsTop + 60))),
              20);
    EXPECT_EQ(brightPixels(image, QRect(QPoint(4, static_cast<int>(q7.y()) + 11),
                                        QPoint(static_cast<int>(map.left()) - 4,
                                               static_cast<int>(q7.y()) + 13))),
              0);

    // Zoomed out: position ticks, no tokens (too narrow).
    AttentionView wide;
    wide.setMap(makePyramid(512, 4, patternMap), 2, 7, "pattern");
    wide.setTokens(std::make_shared<const std::vector<std::string>>(kTokens));
    wide.setKept({0, 1, 2, 3, 100, 101, 300, 301, 302, 450});
    showAndWait(wide, 900, 700);
    image = frame(wide);
    saveScreenshot(image, "attention_view_overview.png");
    EXPECT_EQ(wide.titleText(), "pattern  L2 H7, 512 x 512, tile 4");
    // The column of tick labels under the map has text; the tokens' rotated labels do not
    // appear (only a short line of digits per tick).
    const QRectF wmap = wide.mapRect();
    const int wLabels = static_cast<int>(wmap.bottom()) + 16;
    EXPECT_GT(brightPixels(image, QRect(QPoint(static_cast<int>(wmap.left()), wLabels),
                                        QPoint(static_cast<int>(wmap.right()), wLabels + 14))),
              30);
    EXPECT_EQ(brightPixels(image, QRect(QPoint(static_cast<int>(wmap.left()), wLabels + 20),
                                        QPoint(static_cast<int>(wmap.right()), wLabels + 60))),
              0);
}

TEST(AttentionViewTest, DrawsAgainInANewGlContext) {
    // Moving the view into another window gives it a new GL context: the texture of the old
    // one is released with it, and a new one is made and filled.
    AttentionView view;
    view.setMap(makePyramid(16, 1, smallMap), 0, 0, "");
    showAndWait(view);
    view.setView(0, 0, 0.1);
    EXPECT_TRUE(colourNear(frame(view), view.cellCenter(5, 2), expectedColour(0.9f, 0.9f)));
    QWidget host;
    host.resize(kWidth + 40, kHeight + 40);
    view.setParent(&host);
    view.move(20, 20);
    view.show();
    host.show();
    ASSERT_TRUE(QTest::qWaitForWindowExposed(&host));
    QTest::qWait(50);
    const QImage image = frame(view);
    EXPECT_TRUE(colourNear(image, view.cellCenter(5, 2), expectedColour(0.9f, 0.9f)));
    EXPECT_TRUE(colourNear(image, view.cellCenter(2, 9), AttentionView::maskedColor()));
    view.setParent(nullptr);  // destroyed here, before the host
}

TEST(AttentionViewTest, ClearedOrEmptyViewDrawsNoMap) {
    AttentionView view;
    view.setMap(makePyramid(16, 1, smallMap), 0, 0, "");
    showAndWait(view);
    view.setMap(nullptr, 0, 0, "");
    const QImage image = frame(view);
    EXPECT_TRUE(colourNear(image, view.mapRect().center(), kClear));
    EXPECT_EQ(view.hoverText(view.mapRect().center()), QString());
    EXPECT_EQ(view.titleText(), QString());
}

TEST(AttentionViewTest, ErrorsNameWhatIsWrong) {
    AttentionView view;
    auto expectError = [](const std::function<void()>& f, const std::string& message) {
        try {
            f();
            ADD_FAILURE() << "no error; expected: " << message;
        } catch (const kvlens::Error& e) {
            EXPECT_EQ(std::string(e.what()), message);
        }
    };
    expectError([&] { view.setExactRegion(0, 0, 1, 1, {0.5f}); },
                "exact attention region: no map is shown");
    auto unfinished = std::make_shared<viz::TilePyramid>(8, 8, 1);
    expectError([&] { view.setMap(unfinished, 4, 2, "x"); },
                "attention view: the tile pyramid of L4 H2 is not finished (call finish() first)");
    view.setMap(makePyramid(16, 4, smallMap), 0, 0, "");
    expectError([&] { view.setExactRegion(8, 12, 4, 8, std::vector<float>(32)); },
                "exact attention region rows [8, 12) x cols [12, 20) is empty or outside the "
                "16 x 16 map");
    expectError([&] { view.setExactRegion(0, 0, 0, 4, {}); },
                "exact attention region rows [0, 0) x cols [0, 4) is empty or outside the "
                "16 x 16 map");
    expectError([&] { view.setExactRegion(0, 0, 4, 4, std::vector<float>(15)); },
                "exact attention region: 15 values for 4 x 4 cells");
    expectError([&] { view.setKept({3, -1}); }, "attention view: kept key position -1 is negative");
}

}  // namespace
}  // namespace kvlens::ui
