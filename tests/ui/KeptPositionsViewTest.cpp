// KeptPositionsView drawn for real: a known small selection's kept, dropped and window
// cells at their pixels (focused map and all-layers overview), focusing another layer,
// overview clicks, wheel zoom around the cursor, drag, Home and double-click, token text
// when zoomed in, zoomed-out shading by the share kept, hover texts, and bad selections.
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
#include <cstdlib>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "core/Error.h"
#include "ui/KeptPositionsView.h"
#include "viz/Rgb.h"

namespace kvlens::ui {
namespace {

constexpr int kPlotWidth = 320;  // 40 positions at 8 px each

::testing::AssertionResult colourNear(const QImage& image, QPointF at, const QColor& want,
                                      int tolerance = 3) {
    const int x = static_cast<int>(std::floor(at.x()));
    const int y = static_cast<int>(std::floor(at.y()));
    const QColor got = image.pixelColor(x, y);
    if (std::abs(got.red() - want.red()) <= tolerance &&
        std::abs(got.green() - want.green()) <= tolerance &&
        std::abs(got.blue() - want.blue()) <= tolerance)
        return ::testing::AssertionSuccess();
    return ::testing::AssertionFailure()
           << "pixel (" << x << ", " << y << ") is " << got.name().toStdString() << ", expected "
           << want.name().toStdString();
}

QColor mix(const QColor& a, const QColor& b, double t) {
    const viz::Rgb c =
        viz::Rgb::blend(viz::Rgb{static_cast<uint8_t>(a.red()), static_cast<uint8_t>(a.green()),
                                 static_cast<uint8_t>(a.blue())},
                        viz::Rgb{static_cast<uint8_t>(b.red()), static_cast<uint8_t>(b.green()),
                                 static_cast<uint8_t>(b.blue())},
                        t);
    return QColor(c.r, c.g, c.b);
}

// Text pixels on the dark background (labels are light grey or white).
int brightPixels(const QImage& image, const QRectF& r, int threshold = 160) {
    int n = 0;
    for (int y = static_cast<int>(r.top()); y < static_cast<int>(r.bottom()); ++y)
        for (int x = static_cast<int>(r.left()); x < static_cast<int>(r.right()); ++x) {
            const QColor c = image.pixelColor(x, y);
            if (c.red() > threshold && c.green() > threshold && c.blue() > threshold) ++n;
        }
    return n;
}

std::vector<int32_t> withWindow(std::vector<int32_t> kept, int32_t from, int32_t to) {
    for (int32_t p = from; p < to; ++p) kept.push_back(p);
    return kept;
}

// 2 layers, 2 KV heads (4 query heads), 40 positions, SnapKV with an 8-position window
// (32..39, kept by every head). L0: 14 entries per head; L1: 14 and 12 (mean 13).
std::shared_ptr<Selection> smallSelection() {
    auto s = std::make_shared<Selection>();
    s->params.method = "snapkv";
    s->params.budget = 14;
    s->params.window = 8;
    s->promptLength = 40;
    s->queryHeads = 4;
    s->kvHeads = 2;
    s->gqa = GqaMode::KvHead;
    s->layerBudgets = {14, 14};
    s->kept = {
        {withWindow({0, 1, 2, 3, 10, 20}, 32, 40), withWindow({5, 15, 25, 26, 27, 28}, 32, 40)},
        {withWindow({0, 1, 2, 3, 11, 21}, 32, 40), withWindow({6, 16, 26, 27}, 32, 40)},
    };
    return s;
}

const QString kLabel = QStringLiteral("snapkv B=14 W=8");

// Shows the view with its plot exactly kPlotWidth wide (an integer 8 px per position).
void showWithPlotWidth(KeptPositionsView& view, int plotWidth = kPlotWidth, int height = 420) {
    view.resize(400, height);
    const int margins = 400 - static_cast<int>(view.focusedMapRect().width());
    view.resize(plotWidth + margins, height);
    view.show();
    ASSERT_TRUE(QTest::qWaitForWindowExposed(&view));
    QTest::qWait(100);
    ASSERT_EQ(view.focusedMapRect().width(), plotWidth);
}

QImage grab(KeptPositionsView& view) {
    view.repaint();
    return view.grabFramebuffer();
}

void sendWheel(QWidget& w, QPointF at, int delta) {
    QWheelEvent wheel(at, w.mapToGlobal(at), QPoint(), QPoint(0, delta), Qt::NoButton,
                      Qt::NoModifier, Qt::NoScrollPhase, false);
    QApplication::sendEvent(&w, &wheel);
}

void sendMouse(QWidget& w, QEvent::Type type, QPointF at, Qt::MouseButton button,
               Qt::MouseButtons buttons) {
    QMouseEvent event(type, at, w.mapToGlobal(at), button, buttons, Qt::NoModifier);
    QApplication::sendEvent(&w, &event);
}

TEST(KeptPositionsViewTest, DrawsKeptDroppedAndWindowCellsAtTheirPixels) {
    KeptPositionsView view;
    view.setSelection(smallSelection(), kLabel);
    showWithPlotWidth(view);
    const QImage image = grab(view);
    QDir().mkpath(KVLENS_UI_TEST_DIR);
    EXPECT_TRUE(image.save(QStringLiteral(KVLENS_UI_TEST_DIR "/kept_positions_small.png")));

    const QColor kept = KeptPositionsView::keptColor();
    const QColor dropped = KeptPositionsView::droppedColor();
    const QColor window = KeptPositionsView::windowColor();
    EXPECT_EQ(view.focusedLayer(), 0);
    EXPECT_EQ(view.visiblePositions(), 40.0);
    EXPECT_EQ(view.focusedLayerSummary(), QStringLiteral("L0: 14/40 kept per head, 35.0%"));

    // Focused layer 0, head 0 keeps 0-3, 10, 20; head 1 keeps 5, 15, 25-28; both 32-39.
    for (int p : {0, 1, 2, 3, 10, 20})
        EXPECT_TRUE(colourNear(image, view.cellCenter(0, p), kept)) << p;
    for (int p : {4, 5, 9, 11, 19, 21, 31})
        EXPECT_TRUE(colourNear(image, view.cellCenter(0, p), dropped)) << p;
    for (int p : {5, 15, 25, 28}) EXPECT_TRUE(colourNear(image, view.cellCenter(1, p), kept)) << p;
    for (int p : {0, 10, 29}) EXPECT_TRUE(colourNear(image, view.cellCenter(1, p), dropped)) << p;
    for (int p : {32, 35, 39}) {
        EXPECT_TRUE(colourNear(image, view.cellCenter(0, p), window)) << p;
        EXPECT_TRUE(colourNear(image, view.cellCenter(1, p), window)) << p;
    }
    // Column edges to the pixel: position 10 covers x0 + [80, 88).
    const QRectF map = view.focusedMapRect();
    const double y = view.cellCenter(0, 10).y();
    EXPECT_TRUE(colourNear(image, QPointF(map.left() + 80, y), kept));
    EXPECT_TRUE(colourNear(image, QPointF(map.left() + 87, y), kept));
    EXPECT_TRUE(colourNear(image, QPointF(map.left() + 79, y), dropped));
    EXPECT_TRUE(colourNear(image, QPointF(map.left() + 88, y), dropped));

    // Overview: colour = share of the layer's 2 heads keeping the position.
    EXPECT_TRUE(colourNear(image, view.overviewCellCenter(0, 0), mix(dropped, kept, 0.5)));
    EXPECT_TRUE(colourNear(image, view.overviewCellCenter(0, 5), mix(dropped, kept, 0.5)));
    EXPECT_TRUE(colourNear(image, view.overviewCellCenter(0, 7), dropped));
    EXPECT_TRUE(colourNear(image, view.overviewCellCenter(0, 36), window));
    EXPECT_TRUE(colourNear(image, view.overviewCellCenter(1, 11), mix(dropped, kept, 0.5)));
    EXPECT_TRUE(colourNear(image, view.overviewCellCenter(1, 10), dropped));
    EXPECT_TRUE(colourNear(image, view.overviewCellCenter(1, 26), mix(dropped, kept, 0.5)));
    // Title and labels are text: bright pixels above the overview, none in empty space.
    EXPECT_GT(brightPixels(image, QRectF(0, 0, view.width(), 20)), 40);
}

// A needle's positions: the band under the overview and the frame in the focused map at
// their pixels, the share kept in the title (hand-counted), and the hover's line.
// A local layer (window 16 of the 40-position prompt: a decode step reaches 25..39): the
// positions before its window are shaded over in its overview row and, focused, in its map,
// the window's edge marked; the title and hovers say so; a global layer is as it was.
TEST(KeptPositionsViewTest, ALocalLayersPositionsPastItsWindowAreShadedAndNamed) {
    KeptPositionsView view;
    view.setSelection(smallSelection(), kLabel);
    showWithPlotWidth(view);
    const QImage before = grab(view);
    view.setSlidingWindows({16, 0});
    EXPECT_EQ(view.firstReached(0), 25);
    EXPECT_EQ(view.firstReached(1), 0);
    const QImage after = grab(view);
    QDir().mkpath(KVLENS_UI_TEST_DIR);
    EXPECT_TRUE(after.save(QStringLiteral(KVLENS_UI_TEST_DIR "/kept_positions_window.png")));
    auto darker = [&](QPointF at) {
        const QColor a = before.pixelColor(at.toPoint()), b = after.pixelColor(at.toPoint());
        return b.red() + b.green() + b.blue() + 30 < a.red() + a.green() + a.blue();
    };
    EXPECT_TRUE(darker(view.overviewCellCenter(0, 10)));
    EXPECT_TRUE(darker(view.cellCenter(0, 10)));  // head 0 keeps 10: shaded all the same
    EXPECT_TRUE(darker(view.cellCenter(1, 3)));
    EXPECT_EQ(after.pixelColor(view.overviewCellCenter(0, 30).toPoint()),
              before.pixelColor(view.overviewCellCenter(0, 30).toPoint()));
    EXPECT_EQ(after.pixelColor(view.overviewCellCenter(1, 10).toPoint()),
              before.pixelColor(view.overviewCellCenter(1, 10).toPoint()));
    EXPECT_EQ(after.pixelColor(view.cellCenter(0, 33).toPoint()), before.pixelColor(view.cellCenter(0, 33).toPoint()));
    // The edge: the window's first position's left side, in the overview row and the map.
    const QPointF edge = view.overviewCellCenter(0, 25) - QPointF(4.0, 0.0);
    EXPECT_TRUE(colourNear(after, edge - QPointF(0.5, 0.0), KeptPositionsView::windowEdgeColor()));
    EXPECT_TRUE(colourNear(after, view.cellCenter(0, 25) - QPointF(4.5, 0.0), KeptPositionsView::windowEdgeColor()));
    EXPECT_EQ(view.focusedLayerSummary(), QStringLiteral("L0: 14/40 kept per head, 35.0%; sliding window 16: reaches 25-39"));
    EXPECT_NE(view.hoverText(0, 10).indexOf("outside L0's sliding window of 16: no decode step reaches it"), -1);
    EXPECT_EQ(view.hoverText(0, 30).indexOf("sliding window"), -1);
    EXPECT_NE(view.overviewHoverText(0, 3).indexOf("outside L0's sliding window of 16"), -1);
    EXPECT_EQ(view.overviewHoverText(1, 3).indexOf("sliding window"), -1);
    view.setFocusedLayer(1);
    EXPECT_EQ(view.focusedLayerSummary().indexOf("sliding"), -1);
    const QImage global = grab(view);
    EXPECT_FALSE(colourNear(global, view.cellCenter(0, 25) - QPointF(4.5, 0.0), KeptPositionsView::windowEdgeColor()));
    view.setSlidingWindows({});
    EXPECT_EQ(view.firstReached(0), 0);
}

TEST(KeptPositionsViewTest, MarkedPositionsShowAsABandAFrameAndTheShareKept) {
    KeptPositionsView view;
    view.setSelection(smallSelection(), kLabel);
    showWithPlotWidth(view);
    EXPECT_TRUE(view.markBandRect().isEmpty());
    const QRectF mapBefore = view.focusedMapRect();
    view.setMarkedPositions({27, 26, 25, 10, 10, 99}, QStringLiteral("needle"));  // unsorted, a repeat, one outside
    EXPECT_EQ(view.markedPositions(), (std::vector<int64_t>{10, 25, 26, 27, 99}));
    // L0: head 0 keeps 10 (1 of 4), head 1 keeps 25, 26, 27 (3 of 4): 4 of 8.
    EXPECT_DOUBLE_EQ(view.markedKeptShare(0), 0.5);
    // L1: head 0 keeps none of them, head 1 keeps 26 and 27: 2 of 8.
    EXPECT_DOUBLE_EQ(view.markedKeptShare(1), 0.25);
    EXPECT_EQ(view.markedSummary(), QStringLiteral("needle: 4 positions, 50.0% kept by L0's heads"));
    view.setFocusedLayer(1);
    EXPECT_EQ(view.markedSummary(), QStringLiteral("needle: 4 positions, 25.0% kept by L1's heads"));
    view.setFocusedLayer(0);

    const QRectF band = view.markBandRect();
    ASSERT_FALSE(band.isEmpty());
    EXPECT_GT(band.top(), view.overviewRowRect(1).bottom());
    EXPECT_GE(view.focusedMapRect().top(), mapBefore.top() + band.height());  // the map moved down
    const QImage image = grab(view);
    EXPECT_TRUE(image.save(QStringLiteral(KVLENS_UI_TEST_DIR "/kept_positions_marked.png")));
    const double by = band.center().y();
    const QColor mark = KeptPositionsView::markColor();
    EXPECT_TRUE(colourNear(image, QPointF(band.left() + 10 * 8 + 4, by), mark));
    EXPECT_TRUE(colourNear(image, QPointF(band.left() + 26 * 8 + 4, by), mark));
    EXPECT_FALSE(colourNear(image, QPointF(band.left() + 15 * 8 + 4, by), mark));
    // The frame: 2 px lines at the runs' edges, over the head rows; cells inside keep their colour.
    const QRectF map = view.focusedMapRect();
    const double y = view.cellCenter(0, 10).y();
    EXPECT_TRUE(colourNear(image, QPointF(map.left() + 80 - 1, y), mark));
    EXPECT_TRUE(colourNear(image, QPointF(map.left() + 25 * 8 - 1, y), mark));
    EXPECT_TRUE(colourNear(image, QPointF(map.left() + 28 * 8, y), mark));
    EXPECT_TRUE(colourNear(image, view.cellCenter(0, 10), KeptPositionsView::keptColor()));
    EXPECT_TRUE(colourNear(image, view.cellCenter(0, 15), KeptPositionsView::droppedColor()));

    EXPECT_NE(view.hoverText(0, 26).indexOf(QStringLiteral("needle token")), -1) << view.hoverText(0, 26).toStdString();
    EXPECT_EQ(view.hoverText(0, 15).indexOf(QStringLiteral("needle")), -1);
    EXPECT_NE(view.overviewHoverText(0, 10).indexOf(QStringLiteral("(needle)")), -1);
    // A new selection of the same prompt keeps the marks; an empty list clears them.
    view.setSelection(smallSelection(), kLabel);
    EXPECT_DOUBLE_EQ(view.markedKeptShare(0), 0.5);
    view.setMarkedPositions({}, {});
    EXPECT_TRUE(view.markBandRect().isEmpty());
    EXPECT_TRUE(view.markedSummary().isEmpty());
    EXPECT_EQ(view.focusedMapRect().top(), mapBefore.top());
}

TEST(KeptPositionsViewTest, FocusingAnotherLayerChangesTheKeptPixels) {
    KeptPositionsView view;
    view.setSelection(smallSelection(), kLabel);
    showWithPlotWidth(view);
    view.setFocusedLayer(1);
    EXPECT_EQ(view.focusedLayer(), 1);
    const QImage image = grab(view);
    const QColor kept = KeptPositionsView::keptColor();
    const QColor dropped = KeptPositionsView::droppedColor();
    EXPECT_TRUE(colourNear(image, view.cellCenter(0, 10), dropped));
    EXPECT_TRUE(colourNear(image, view.cellCenter(0, 11), kept));
    EXPECT_TRUE(colourNear(image, view.cellCenter(1, 5), dropped));
    EXPECT_TRUE(colourNear(image, view.cellCenter(1, 6), kept));
    EXPECT_TRUE(colourNear(image, view.cellCenter(1, 27), kept));
    EXPECT_TRUE(colourNear(image, view.cellCenter(1, 28), dropped));
    EXPECT_EQ(view.focusedLayerSummary(),
              QStringLiteral("L1: 13.0/40 kept per head (mean), 32.5%"));

    view.setFocusedLayer(99);  // clamped to the last layer
    EXPECT_EQ(view.focusedLayer(), 1);
    view.setFocusedLayer(-3);
    EXPECT_EQ(view.focusedLayer(), 0);
}

// A new selection asks for a frame: the event loop alone draws it, and drawnLatestSelection
// says so (what a caller that may look after the frame was drawn waits on).
TEST(KeptPositionsViewTest, ANewSelectionIsDrawnByTheEventLoopAndSaysSo) {
    KeptPositionsView view;
    view.setSelection(smallSelection(), kLabel);
    showWithPlotWidth(view);
    ASSERT_TRUE(QTest::qWaitFor([&] { return view.drawnLatestSelection(); }, 5000));
    auto other = smallSelection();
    other->kept[0][0] = withWindow({4, 5, 6, 7, 8, 9}, 32, 40);
    view.setSelection(other, kLabel);
    EXPECT_FALSE(view.drawnLatestSelection());  // not drawn until the event loop runs
    const auto frames = view.frameCount();
    ASSERT_TRUE(QTest::qWaitFor([&] { return view.drawnLatestSelection(); }, 5000));
    EXPECT_GT(view.frameCount(), frames);
    const QImage image = view.grabFramebuffer();
    EXPECT_TRUE(colourNear(image, view.cellCenter(0, 5), KeptPositionsView::keptColor()));
    EXPECT_TRUE(colourNear(image, view.cellCenter(0, 0), KeptPositionsView::droppedColor()));
}

TEST(KeptPositionsViewTest, ClickOnAnOverviewRowFocusesItsLayer) {
    KeptPositionsView view;
    view.setSelection(smallSelection(), kLabel);
    showWithPlotWidth(view);
    QSignalSpy spy(&view, &KeptPositionsView::layerClicked);

    QTest::mouseClick(&view, Qt::LeftButton, Qt::NoModifier,
                      view.overviewRowRect(1).center().toPoint());
    ASSERT_EQ(spy.count(), 1);
    EXPECT_EQ(spy.at(0).at(0).toInt(), 1);
    EXPECT_EQ(view.focusedLayer(), 1);

    QTest::mouseClick(&view, Qt::LeftButton, Qt::NoModifier,
                      view.overviewRowRect(0).topLeft().toPoint() + QPoint(3, 1));
    ASSERT_EQ(spy.count(), 2);
    EXPECT_EQ(spy.at(1).at(0).toInt(), 0);
    EXPECT_EQ(view.focusedLayer(), 0);

    // A click in the focused map, or with another button, focuses nothing.
    QTest::mouseClick(&view, Qt::LeftButton, Qt::NoModifier, view.cellCenter(1, 3).toPoint());
    QTest::mouseClick(&view, Qt::RightButton, Qt::NoModifier,
                      view.overviewRowRect(1).center().toPoint());
    EXPECT_EQ(spy.count(), 2);
    EXPECT_EQ(view.focusedLayer(), 0);
}

TEST(KeptPositionsViewTest, WheelZoomsAroundTheCursorDragPansHomeAndDoubleClickReset) {
    KeptPositionsView view;
    view.setSelection(smallSelection(), kLabel);
    showWithPlotWidth(view);
    const QRectF map = view.focusedMapRect();
    const auto positionAt = [&](double x) {
        return view.visibleFirst() + (x - map.left()) * view.visiblePositions() / map.width();
    };
    const QPointF cursor = view.cellCenter(0, 10);  // x0 + 84: position 10.5
    ASSERT_DOUBLE_EQ(positionAt(cursor.x()), 10.5);

    sendWheel(view, cursor, 120);
    EXPECT_NEAR(view.visiblePositions(), 32.0, 1e-9);
    EXPECT_NEAR(positionAt(cursor.x()), 10.5, 1e-9);
    EXPECT_GT(view.visibleFirst(), 0.0);
    sendWheel(view, cursor, 240);
    EXPECT_NEAR(view.visiblePositions(), 32.0 * 0.64, 1e-9);
    EXPECT_NEAR(positionAt(cursor.x()), 10.5, 1e-9);
    // Down to single tokens, then no further (64 px per position: 5 of them here).
    for (int i = 0; i < 30; ++i) sendWheel(view, cursor, 120);
    EXPECT_NEAR(view.visiblePositions(), kPlotWidth / 64.0, 1e-9);
    EXPECT_NEAR(positionAt(cursor.x()), 10.5, 1e-6);
    // Wheel over the overview does not zoom the map.
    sendWheel(view, view.overviewRowRect(0).center(), -120);
    EXPECT_NEAR(view.visiblePositions(), kPlotWidth / 64.0, 1e-9);

    // Drag left by 64 px: one position (64 px each) further right.
    const double first = view.visibleFirst();
    const QPointF start = view.cellCenter(0, 10);
    sendMouse(view, QEvent::MouseButtonPress, start, Qt::LeftButton, Qt::LeftButton);
    sendMouse(view, QEvent::MouseMove, start - QPointF(32, 0), Qt::NoButton, Qt::LeftButton);
    sendMouse(view, QEvent::MouseMove, start - QPointF(64, 0), Qt::NoButton, Qt::LeftButton);
    sendMouse(view, QEvent::MouseButtonRelease, start - QPointF(64, 0), Qt::LeftButton,
              Qt::NoButton);
    EXPECT_NEAR(view.visibleFirst(), first + 1.0, 1e-9);
    // Moving without the button does not pan.
    sendMouse(view, QEvent::MouseMove, start, Qt::NoButton, Qt::NoButton);
    EXPECT_NEAR(view.visibleFirst(), first + 1.0, 1e-9);
    // Panning stops at the prompt's ends.
    view.setVisibleRange(1000.0, 5.0);
    EXPECT_DOUBLE_EQ(view.visibleFirst(), 35.0);

    QTest::keyClick(&view, Qt::Key_Home);
    EXPECT_DOUBLE_EQ(view.visibleFirst(), 0.0);
    EXPECT_DOUBLE_EQ(view.visiblePositions(), 40.0);

    sendWheel(view, cursor, 360);
    ASSERT_LT(view.visiblePositions(), 40.0);
    QTest::mouseDClick(&view, Qt::LeftButton, Qt::NoModifier, view.cellCenter(1, 12).toPoint());
    EXPECT_DOUBLE_EQ(view.visibleFirst(), 0.0);
    EXPECT_DOUBLE_EQ(view.visiblePositions(), 40.0);
}

TEST(KeptPositionsViewTest, TokenTextAppearsWhenColumnsAreWideEnough) {
    KeptPositionsView view;
    auto tokens = std::make_shared<std::vector<std::string>>();
    for (int p = 0; p < 40; ++p) tokens->push_back("w" + std::to_string(p));
    view.setTokens(tokens);
    view.setSelection(smallSelection(), kLabel);
    showWithPlotWidth(view);
    const QRectF row = view.tokenRowRect();
    EXPECT_EQ(brightPixels(grab(view), row), 0);  // 8 px per position: no text

    view.setVisibleRange(10.0, 10.0);  // 32 px per position
    const QImage image = grab(view);
    EXPECT_GT(brightPixels(image, row), 60);
    // Each label stays inside its column: the first column's text ("w10") ends before it does.
    const double x0 = view.focusedMapRect().left();
    EXPECT_GT(brightPixels(image, QRectF(x0, row.top(), 31, row.height())), 10);
    EXPECT_TRUE(colourNear(image, view.cellCenter(0, 10), KeptPositionsView::keptColor()));
    EXPECT_TRUE(colourNear(image, view.cellCenter(0, 11), KeptPositionsView::droppedColor()));
    EXPECT_TRUE(image.save(QStringLiteral(KVLENS_UI_TEST_DIR "/kept_positions_small_zoomed.png")));
}

// Tokens of any script draw with their own glyphs, merged into the canvas's font from
// the installed fonts (scripts/setup installs DejaVu, WenQuanYi Micro Hei and Symbola):
// a CJK label is not ImGui's '?', and only characters beyond 16 bits are missing.
TEST(KeptPositionsViewTest, TokensOfAnyScriptDrawWithTheirOwnGlyphs) {
    KeptPositionsView view;
    auto tokens = std::make_shared<std::vector<std::string>>();
    for (int p = 0; p < 40; ++p) tokens->push_back("w" + std::to_string(p));
    (*tokens)[10] = "\xE4\xB8\xAD";           // 中
    (*tokens)[11] = "?";
    (*tokens)[12] = "\xD0\x96\xCE\xA9";      // ЖΩ
    (*tokens)[13] = "\xD7\xA9\xE2\x98\x85";  // ש★
    (*tokens)[14] = "\xF0\x9F\x98\x80";      // 😀, beyond 16 bits
    (*tokens)[15] = "\xED\x95\x9C";           // 한
    view.setTokens(tokens);
    view.setSelection(smallSelection(), kLabel);
    showWithPlotWidth(view);
    view.setVisibleRange(10.0, 10.0);  // 32 px per position
    const QImage image = grab(view);
    for (char32_t cp : {U'中', U'Ж', U'Ω', U'ש', U'★', U'한', U'é', U'w'})
        EXPECT_TRUE(view.hasGlyph(cp)) << "U+" << std::hex << static_cast<uint32_t>(cp);
    EXPECT_FALSE(view.hasGlyph(U'\x1F600'));
    EXPECT_EQ(view.extraGlyphs(), 6u);  // the emoji is not asked for
    EXPECT_EQ(view.missingGlyphs(), 0u);

    const QRectF row = view.tokenRowRect();
    const int x0 = static_cast<int>(view.focusedMapRect().left());
    auto column = [&](int index) {
        return image.copy(QRect(x0 + 32 * index, static_cast<int>(row.top()), 32, static_cast<int>(row.height())));
    };
    EXPECT_GT(brightPixels(column(0), QRectF(0, 0, 32, row.height())), 8);  // 中 is drawn
    EXPECT_NE(column(0), column(1));                                         // and is not '?'
    EXPECT_TRUE(image.save(QStringLiteral(KVLENS_UI_TEST_DIR "/kept_positions_scripts.png")));
}

TEST(KeptPositionsViewTest, ZoomedOutPixelsAreShadedByTheShareKept) {
    // 4096 positions over 256 pixel columns (16 each). Head 0 keeps every other position,
    // head 1 the first half. No window (StreamingLLM's recent window is no observation one).
    auto s = std::make_shared<Selection>();
    s->params.method = "streamingllm";
    s->promptLength = 4096;
    s->queryHeads = 2;
    s->kvHeads = 2;
    s->kept.resize(1);
    s->kept[0].resize(2);
    for (int32_t p = 0; p < 4096; p += 2) s->kept[0][0].push_back(p);
    for (int32_t p = 0; p < 2048; ++p) s->kept[0][1].push_back(p);
    KeptPositionsView view;
    view.setSelection(s, QStringLiteral("streamingllm"));
    showWithPlotWidth(view, 256);
    const QImage image = grab(view);
    const QColor kept = KeptPositionsView::keptColor();
    const QColor dropped = KeptPositionsView::droppedColor();
    for (int p : {8, 1000, 2100, 4000}) {
        EXPECT_TRUE(colourNear(image, view.cellCenter(0, p), mix(dropped, kept, 0.5))) << p;
        EXPECT_TRUE(colourNear(image, view.cellCenter(1, p), p < 2048 ? kept : dropped)) << p;
        EXPECT_TRUE(colourNear(image, view.overviewCellCenter(0, p),
                               mix(dropped, kept, p < 2048 ? 0.75 : 0.25)))
            << p;
    }
    EXPECT_EQ(view.focusedLayerSummary(), QStringLiteral("L0: 2048/4096 kept per head, 50.0%"));
}

// A new selection (another method, e.g. StreamingLLM, which has no scores)
// never shows the scores of the one before it.
TEST(KeptPositionsViewTest, ANewSelectionDropsThePreviousScores) {
    KeptPositionsView view;
    view.setSelection(smallSelection(), kLabel);
    view.setScores(0, std::make_shared<std::vector<std::vector<float>>>(2, std::vector<float>(40, 0.5f)));
    ASSERT_TRUE(view.hoverText(0, 10).contains(QStringLiteral("\nscore 0.5")));
    view.setSelection(smallSelection(), QStringLiteral("streamingllm B=14"));
    EXPECT_FALSE(view.hoverText(0, 10).contains(QStringLiteral("score"))) << view.hoverText(0, 10).toStdString();
}

// LagKV keeps its tail whole (here sinks 4, lag 8 on 40 positions: 28..39): the view shades
// it as the always-kept end and the hover names it; a SnapKV selection names its window.
TEST(KeptPositionsViewTest, LagKvsTailIsNamedAsTheKeptEnd) {
    KeptPositionsView view;
    auto lag = std::make_shared<Selection>(*smallSelection());
    lag->params.method = "lagkv";
    lag->params.sinks = 4;
    lag->params.lag = 8;
    ASSERT_EQ(lag->params.keptEndStart(40), 28);
    const std::vector<int32_t> kept = withWindow({0, 1, 2, 3, 10}, 28, 40);
    lag->kept = {{kept, kept}, {kept, kept}};
    view.setSelection(lag, kLabel);
    EXPECT_TRUE(view.hoverText(0, 30).contains(QStringLiteral("L0 KV0: kept (LagKV's tail)")))
        << view.hoverText(0, 30).toStdString();
    EXPECT_TRUE(view.hoverText(0, 10).contains(QStringLiteral("L0 KV0: kept\n")) ||
                view.hoverText(0, 10).endsWith(QStringLiteral("L0 KV0: kept")));
    view.setSelection(smallSelection(), kLabel);
    EXPECT_TRUE(
        view.hoverText(0, 35).contains(QStringLiteral("L0 KV0: kept (observation window)")));
}

TEST(KeptPositionsViewTest, HoverTextNamesTokenHeadScoreAndTheMethodsKeepingIt) {
    KeptPositionsView view;
    auto tokens = std::make_shared<std::vector<std::string>>();
    for (int p = 0; p < 40; ++p) tokens->push_back(p == 7 ? "new\nline" : "w" + std::to_string(p));
    view.setTokens(tokens);
    view.setSelection(smallSelection(), kLabel);
    auto scores =
        std::make_shared<std::vector<std::vector<float>>>(2, std::vector<float>(40, 0.0f));
    for (int h = 0; h < 2; ++h)
        for (int p = 0; p < 40; ++p) (*scores)[h][p] = static_cast<float>(h * 100 + p) / 1000.0f;
    (*scores)[0][3] = NAN;
    view.setScores(0, scores);

    // Query-head selection (4 heads): KV head 0 compares with query head 0, KV head 1
    // with query head 2 (the first query head of each group).
    auto pyramid = std::make_shared<Selection>(*smallSelection());
    pyramid->gqa = GqaMode::QueryHead;
    pyramid->kept = {{{10}, {11}, {5}, {}}, {{}, {}, {}, {}}};
    auto h2o = std::make_shared<Selection>(*smallSelection());
    h2o->kept = {{{10, 7}, {}}, {{}, {}}};
    std::sort(h2o->kept[0][0].begin(), h2o->kept[0][0].end());
    auto otherPrompt = std::make_shared<Selection>(*smallSelection());
    otherPrompt->promptLength = 80;  // another prompt: never compared
    view.setOtherSelections(
        {{"pyramidkv B=14", pyramid}, {"h2o B=14", h2o}, {"other", otherPrompt}});

    EXPECT_EQ(view.hoverText(0, 10),
              QStringLiteral("position 10  'w10'\nL0 KV0: kept\nscore 0.01\n"
                             "kept by: snapkv B=14 W=8, pyramidkv B=14, h2o B=14"));
    EXPECT_EQ(view.hoverText(0, 11),
              QStringLiteral("position 11  'w11'\nL0 KV0: dropped\nscore 0.011\n"
                             "kept by: none of 4 methods"));
    EXPECT_EQ(view.hoverText(0, 7),
              QStringLiteral("position 7  'new\\nline'\nL0 KV0: dropped\nscore 0.007\n"
                             "kept by: h2o B=14"));
    EXPECT_EQ(view.hoverText(1, 5), QStringLiteral("position 5  'w5'\nL0 KV1: kept\nscore 0.105\n"
                                                   "kept by: snapkv B=14 W=8, pyramidkv B=14"));
    EXPECT_TRUE(view.hoverText(0, 3).contains(QStringLiteral("\nscore: none\n")));
    EXPECT_TRUE(
        view.hoverText(0, 35).contains(QStringLiteral("L0 KV0: kept (observation window)")));
    // No scores for layer 1; no tokens: "#pos".
    view.setFocusedLayer(1);
    EXPECT_EQ(view.hoverText(0, 11),
              QStringLiteral("position 11  'w11'\nL1 KV0: kept\nkept by: snapkv B=14 W=8"));
    view.setTokens(nullptr);
    EXPECT_TRUE(view.hoverText(0, 11).startsWith(QStringLiteral("position 11  '#11'")));
    EXPECT_EQ(view.overviewHoverText(1, 11),
              QStringLiteral("L1, position 11  '#11'\nkept by 1/2 heads (snapkv B=14 W=8)\n"
                             "click: focus L1"));
    view.setOtherSelections({});
    EXPECT_TRUE(view.hoverText(1, 11).endsWith(QStringLiteral("L1 KV1: dropped\nkept by: none")));
    // Outside the selection: nothing to say.
    EXPECT_TRUE(view.hoverText(2, 11).isEmpty());
    EXPECT_TRUE(view.hoverText(0, 40).isEmpty());
    EXPECT_TRUE(view.hoverText(0, -1).isEmpty());
}

TEST(KeptPositionsViewTest, BadSelectionsThrowNamingTheCulpritAndKeepTheView) {
    KeptPositionsView view;
    view.setSelection(smallSelection(), kLabel);
    auto outside = smallSelection();
    outside->kept[1][0].push_back(40);
    try {
        view.setSelection(outside, QStringLiteral("bad"));
        FAIL() << "expected kvlens::Error";
    } catch (const Error& e) {
        EXPECT_STREQ(
            e.what(),
            "selection layer 1 head 0 keeps position 40, outside the prompt of 40 positions");
    }
    auto heads = smallSelection();
    heads->kept[0].pop_back();
    try {
        view.setSelection(heads, QStringLiteral("bad"));
        FAIL() << "expected kvlens::Error";
    } catch (const Error& e) {
        EXPECT_STREQ(e.what(), "selection layer 0 has 1 heads, expected 2 KV heads");
    }
    EXPECT_EQ(view.focusedLayerSummary(), QStringLiteral("L0: 14/40 kept per head, 35.0%"));
    EXPECT_TRUE(view.hoverText(0, 10).contains(kLabel));
}

TEST(KeptPositionsViewTest, NullSelectionClearsTheView) {
    KeptPositionsView view;
    view.setSelection(smallSelection(), kLabel);
    showWithPlotWidth(view);
    view.setSelection(nullptr, QString());
    EXPECT_TRUE(view.focusedLayerSummary().isEmpty());
    EXPECT_TRUE(view.hoverText(0, 10).isEmpty());
    const QImage image = grab(view);
    const QColor kept = KeptPositionsView::keptColor();
    int keptPixels = 0;
    for (int y = 0; y < image.height(); ++y)
        for (int x = 0; x < image.width(); ++x)
            if (image.pixelColor(x, y) == kept) ++keptPixels;
    EXPECT_EQ(keptPixels, 0);
    EXPECT_GT(brightPixels(image, QRectF(0, 0, image.width(), 20), 120), 20);  // "No selection..."
    EXPECT_EQ(brightPixels(image, QRectF(0, 20, image.width(), image.height() - 20), 120), 0);
}

// A SnapKV-like picture for a person to look at: sinks, clusters, a window, 12 layers.
TEST(KeptPositionsViewTest, ScreenshotOfARealisticSelection) {
    auto s = std::make_shared<Selection>();
    s->params.method = "snapkv";
    s->params.budget = 96;
    s->params.window = 32;
    s->promptLength = 512;
    s->queryHeads = 8;
    s->kvHeads = 4;
    s->gqa = GqaMode::KvHead;
    std::mt19937 rng(7);
    s->kept.resize(12);
    for (int layer = 0; layer < 12; ++layer) {
        s->kept[layer].resize(4);
        for (int head = 0; head < 4; ++head) {
            std::vector<int32_t> kept = {0, 1, 2, 3};
            std::uniform_int_distribution<int32_t> centre(8, 470);
            while (kept.size() < 64) {
                const int32_t c = centre(rng);
                for (int32_t p = c - 3; p <= c + 3; ++p)
                    if (kept.size() < 64 && std::find(kept.begin(), kept.end(), p) == kept.end())
                        kept.push_back(p);
            }
            for (int32_t p = 480; p < 512; ++p) kept.push_back(p);
            std::sort(kept.begin(), kept.end());
            s->kept[layer][head] = kept;
        }
    }
    auto tokens = std::make_shared<std::vector<std::string>>();
    const char* words[] = {" the", " cache", " keeps", " tokens", ",", " and", " attention", " of"};
    for (int p = 0; p < 512; ++p) tokens->push_back(words[p % 8]);
    KeptPositionsView view;
    view.setTokens(tokens);
    view.setSelection(s, QStringLiteral("snapkv B=96 W=32"));
    view.setFocusedLayer(5);
    view.resize(900, 520);
    view.show();
    ASSERT_TRUE(QTest::qWaitForWindowExposed(&view));
    QTest::qWait(100);
    QImage image = grab(view);
    EXPECT_TRUE(colourNear(image, view.cellCenter(2, 500), KeptPositionsView::windowColor()));
    EXPECT_TRUE(colourNear(image, view.cellCenter(2, 1), KeptPositionsView::keptColor()));
    EXPECT_TRUE(image.save(QStringLiteral(KVLENS_UI_TEST_DIR "/kept_positions.png")));

    view.setVisibleRange(452.0, 32.0);
    image = grab(view);
    EXPECT_TRUE(colourNear(image, view.cellCenter(2, 481), KeptPositionsView::windowColor()));
    EXPECT_GT(brightPixels(image, view.tokenRowRect()), 100);
    EXPECT_TRUE(image.save(QStringLiteral(KVLENS_UI_TEST_DIR "/kept_positions_zoomed.png")));

    // Hovering a cell opens its tooltip next to the cursor (an ImGui window).
    const QPointF at = view.cellCenter(1, 470);
    sendMouse(view, QEvent::MouseMove, at, Qt::NoButton, Qt::NoButton);
    view.repaint();  // ImGui places a new tooltip on the frame after it appears
    const QImage hovered = grab(view);
    EXPECT_TRUE(hovered.save(QStringLiteral(KVLENS_UI_TEST_DIR "/kept_positions_hover.png")));
    const QRectF nearCursor(at.x() + 10, at.y() + 10, 150, 60);
    EXPECT_NE(hovered.copy(nearCursor.toRect()), image.copy(nearCursor.toRect()));
}

}  // namespace
}  // namespace kvlens::ui
