// FunnelView drawn for real: bar heights in pixels follow the layer means, the focused
// layer's bar has the highlight colour, the budgets sit at their y on the shared axis (or
// on the secondary one), clicks on a layer focus it and emit layerClicked, hover texts.
#include <gtest/gtest.h>

#include <QApplication>
#include <QDir>
#include <QImage>
#include <QMouseEvent>
#include <QSignalSpy>
#include <QTest>
#include <cmath>
#include <cstdlib>
#include <random>
#include <vector>

#include "ui/FunnelView.h"

namespace kvlens::ui {
namespace {

bool near(const QColor& got, const QColor& want, int tolerance = 3) {
    return std::abs(got.red() - want.red()) <= tolerance &&
           std::abs(got.green() - want.green()) <= tolerance &&
           std::abs(got.blue() - want.blue()) <= tolerance;
}

::testing::AssertionResult colourNear(const QImage& image, double x, double y, const QColor& want) {
    const int px = static_cast<int>(std::floor(x));
    const int py = static_cast<int>(std::floor(y));
    const QColor got = image.pixelColor(px, py);
    if (near(got, want)) return ::testing::AssertionSuccess();
    return ::testing::AssertionFailure()
           << "pixel (" << px << ", " << py << ") is " << got.name().toStdString() << ", expected "
           << want.name().toStdString();
}

int countColour(const QImage& image, const QRectF& r, const QColor& want) {
    int n = 0;
    for (int y = std::max(0, static_cast<int>(r.top()));
         y < std::min(image.height(), static_cast<int>(r.bottom())); ++y)
        for (int x = std::max(0, static_cast<int>(r.left()));
             x < std::min(image.width(), static_cast<int>(r.right())); ++x)
            if (near(image.pixelColor(x, y), want)) ++n;
    return n;
}

HeadAttentionSummary head(double positions90, double sinkMass) {
    HeadAttentionSummary h;
    h.positions90 = positions90;
    h.effectivePositions = positions90 * 0.8;
    h.entropy = std::log(positions90);
    h.sinkMass = sinkMass;
    h.localMass = 0.1;
    return h;
}

// 4 layers, 2 heads each with the layer's value (so the dots sit on the bar top):
// positions90 400, 300, 200, 100; sink mass 0.2, 0.4, 0.6, 0.8.
std::vector<LayerAttentionSummary> funnel() {
    std::vector<LayerAttentionSummary> layers;
    for (int l = 0; l < 4; ++l) {
        LayerAttentionSummary s;
        s.mean = head(400.0 - 100.0 * l, 0.2 * (l + 1));
        s.heads = {s.mean, s.mean};
        layers.push_back(s);
    }
    return layers;
}

const std::vector<int64_t> kBudgets = {350, 250, 150, 50};

void show(FunnelView& view) {
    view.resize(480, 320);
    view.show();
    ASSERT_TRUE(QTest::qWaitForWindowExposed(&view));
    QTest::qWait(100);
}

QImage grab(FunnelView& view) {
    view.repaint();
    return view.grabFramebuffer();
}

// The y of the topmost pixel of `colour` in column x, scanning up from the plot bottom.
int barTop(const QImage& image, int x, int bottom, const QColor& colour) {
    int y = bottom - 1;
    while (y > 0 && near(image.pixelColor(x, y - 1), colour)) --y;
    return y;
}

TEST(FunnelViewTest, BarHeightsFollowTheLayerMeansAndTheFocusedLayerIsHighlighted) {
    FunnelView view;
    view.setStatistics(funnel(), 1000);
    show(view);
    const QImage image = grab(view);
    const int bottom = static_cast<int>(view.plotRect().bottom());
    const QColor bar = FunnelView::barColor();
    const QColor focused = FunnelView::focusedBarColor();
    EXPECT_EQ(view.focusedLayer(), 0);
    int previousTop = -1;
    for (int layer = 0; layer < 4; ++layer) {
        const double mean = 400.0 - 100.0 * layer;
        const QColor colour = layer == 0 ? focused : bar;
        const int x = static_cast<int>(view.layerRect(layer).center().x());
        EXPECT_TRUE(colourNear(image, x, view.yForValue(mean) + 6, colour)) << layer;
        EXPECT_TRUE(colourNear(image, x, bottom - 2, colour)) << layer;
        EXPECT_FALSE(colourNear(image, x, view.yForValue(mean) - 6, colour)) << layer;
        const int top = barTop(image, x, bottom, colour);
        EXPECT_NEAR(top, view.yForValue(mean), 1.0) << layer;
        EXPECT_GT(top, previousTop) << layer;  // a smaller mean: a lower top (larger y)
        previousTop = top;
    }
    // The highlight colour is the focused layer's only; it moves with the focus.
    EXPECT_GT(countColour(image, view.layerRect(0), focused), 100);
    EXPECT_EQ(countColour(image, view.layerRect(2), focused), 0);
    view.setFocusedLayer(2);
    const QImage refocused = grab(view);
    EXPECT_EQ(countColour(refocused, view.layerRect(0), focused), 0);
    EXPECT_GT(countColour(refocused, view.layerRect(2), focused), 100);
    EXPECT_GT(countColour(refocused, view.layerRect(0), bar), 100);
}

TEST(FunnelViewTest, BudgetsShareThePositionAxisOrGetTheirOwn) {
    FunnelView view;
    view.setStatistics(funnel(), 1000);
    view.setLayerBudgets(kBudgets, QStringLiteral("pyramidkv B=200"));
    show(view);
    EXPECT_FALSE(view.budgetsOnSecondaryAxis());
    QImage image = grab(view);
    const QColor budget = FunnelView::budgetColor();
    for (int layer = 0; layer < 4; ++layer) {
        const double x = view.layerRect(layer).center().x();
        const double b = static_cast<double>(kBudgets[static_cast<size_t>(layer)]);
        EXPECT_DOUBLE_EQ(view.yForBudget(b), view.yForValue(b));
        EXPECT_TRUE(colourNear(image, x, view.yForBudget(b), budget)) << layer;
        EXPECT_FALSE(colourNear(image, x, view.yForBudget(b) - 8, budget)) << layer;
    }

    // Sink mass is a fraction: the budgets move to a secondary axis (0..400 here).
    view.setStatistic(FunnelStatistic::SinkMass);
    EXPECT_TRUE(view.budgetsOnSecondaryAxis());
    image = grab(view);
    EXPECT_DOUBLE_EQ(view.yForValue(1.0), view.plotRect().top());
    EXPECT_NEAR(view.yForBudget(200.0), view.plotRect().center().y(), 0.5);
    for (int layer = 0; layer < 4; ++layer) {
        const double x = view.layerRect(layer).center().x();
        EXPECT_TRUE(
            colourNear(image, x, view.yForBudget(static_cast<double>(kBudgets[layer])), budget))
            << layer;
        EXPECT_TRUE(colourNear(image, x, view.yForValue(0.2 * (layer + 1)) + 6,
                               layer == 0 ? FunnelView::focusedBarColor() : FunnelView::barColor()))
            << layer;
    }
    // The right axis is drawn in the budget colour, right of the plot.
    const QRectF plot = view.plotRect();
    EXPECT_GT(countColour(image, QRectF(plot.right() + 1, plot.top(), 60, plot.height()), budget),
              20);

    // No budgets: no budget colour anywhere.
    view.setLayerBudgets({}, QString());
    EXPECT_FALSE(view.budgetsOnSecondaryAxis());
    image = grab(view);
    EXPECT_EQ(countColour(image, QRectF(0, 0, image.width(), image.height()), budget), 0);
}

TEST(FunnelViewTest, ClickOnALayerFocusesItAndEmitsLayerClicked) {
    FunnelView view;
    view.setStatistics(funnel(), 1000);
    show(view);
    QSignalSpy spy(&view, &FunnelView::layerClicked);
    QTest::mouseClick(&view, Qt::LeftButton, Qt::NoModifier, view.layerRect(2).center().toPoint());
    ASSERT_EQ(spy.count(), 1);
    EXPECT_EQ(spy.at(0).at(0).toInt(), 2);
    EXPECT_EQ(view.focusedLayer(), 2);
    // Its label under the axis counts too; the title does not.
    QTest::mouseClick(&view, Qt::LeftButton, Qt::NoModifier,
                      QPoint(static_cast<int>(view.layerRect(3).center().x()),
                             static_cast<int>(view.plotRect().bottom()) + 8));
    ASSERT_EQ(spy.count(), 2);
    EXPECT_EQ(spy.at(1).at(0).toInt(), 3);
    QTest::mouseClick(&view, Qt::LeftButton, Qt::NoModifier, QPoint(20, 8));
    EXPECT_EQ(spy.count(), 2);
    EXPECT_EQ(view.focusedLayer(), 3);
    view.setFocusedLayer(40);
    EXPECT_EQ(view.focusedLayer(), 3);
}

TEST(FunnelViewTest, HoverTextGivesTheLayersNumbers) {
    FunnelView view;
    auto layers = funnel();
    layers[1].heads = {head(290.0, 0.1), head(310.0, 0.7)};
    view.setStatistics(layers, 1000);
    view.setLayerBudgets({350, 250}, QStringLiteral("pyramidkv B=200"));
    EXPECT_EQ(view.hoverText(1),
              QStringLiteral("L1: Positions holding 90% of the attention\nlayer mean 300.0\n"
                             "heads: min 290.0, max 310.0 (2 heads)\n"
                             "holds 250 per head (25.0% of 1000), pyramidkv B=200"));
    view.setStatistic(FunnelStatistic::SinkMass);
    EXPECT_EQ(
        view.hoverText(1),
        QStringLiteral("L1: Attention on the first 4 positions (sink mass)\nlayer mean 0.400\n"
                       "heads: min 0.100, max 0.700 (2 heads)\n"
                       "holds 250 per head (25.0% of 1000), pyramidkv B=200"));
    // Layer 2 has no budget (only 2 given); out of range: empty.
    EXPECT_FALSE(view.hoverText(2).contains(QStringLiteral("budget")));
    EXPECT_TRUE(view.hoverText(4).isEmpty());
    EXPECT_TRUE(view.hoverText(-1).isEmpty());
}

TEST(FunnelViewTest, ScreenshotOfARealisticFunnel) {
    // 32 layers of 8 heads: attention narrows with depth (the PyramidKV funnel), heads spread.
    std::mt19937 rng(3);
    std::normal_distribution<double> noise(0.0, 0.25);
    std::vector<LayerAttentionSummary> layers;
    std::vector<int64_t> budgets;
    for (int l = 0; l < 32; ++l) {
        LayerAttentionSummary s;
        const double centre = 1500.0 * std::exp(-l / 8.0) + 60.0;
        HeadAttentionSummary sum;
        for (int h = 0; h < 8; ++h) {
            HeadAttentionSummary x = head(centre * std::exp(noise(rng)),
                                          std::clamp(0.3 + 0.02 * l + noise(rng) * 0.3, 0.0, 1.0));
            s.heads.push_back(x);
            sum.positions90 += x.positions90 / 8;
            sum.sinkMass += x.sinkMass / 8;
        }
        s.mean = sum;
        layers.push_back(s);
        budgets.push_back(static_cast<int64_t>(std::lround(224.0 - 192.0 * l / 31.0)));
    }
    FunnelView view;
    view.setStatistics(layers, 4096);
    view.setLayerBudgets(budgets, QStringLiteral("pyramidkv B=128"));
    view.setFocusedLayer(6);
    view.resize(900, 420);
    view.show();
    ASSERT_TRUE(QTest::qWaitForWindowExposed(&view));
    QTest::qWait(100);
    QDir().mkpath(KVLENS_UI_TEST_DIR);
    QImage image = grab(view);
    EXPECT_GT(countColour(image, view.layerRect(6), FunnelView::focusedBarColor()), 50);
    EXPECT_TRUE(image.save(QStringLiteral(KVLENS_UI_TEST_DIR "/funnel.png")));
    view.setStatistic(FunnelStatistic::SinkMass);
    image = grab(view);
    EXPECT_GT(countColour(image, view.layerRect(0), FunnelView::budgetColor()), 10);
    EXPECT_TRUE(image.save(QStringLiteral(KVLENS_UI_TEST_DIR "/funnel_sink.png")));

    // Hovering a layer opens its tooltip next to the cursor.
    const QPoint at = view.layerRect(20).center().toPoint();
    QMouseEvent move(QEvent::MouseMove, at, view.mapToGlobal(at), Qt::NoButton, Qt::NoButton,
                     Qt::NoModifier);
    QApplication::sendEvent(&view, &move);
    view.repaint();  // ImGui places a new tooltip on the frame after it appears
    const QImage hovered = grab(view);
    EXPECT_TRUE(hovered.save(QStringLiteral(KVLENS_UI_TEST_DIR "/funnel_hover.png")));
    const QRect nearCursor(at + QPoint(10, 10), QSize(150, 50));
    EXPECT_NE(hovered.copy(nearCursor), image.copy(nearCursor));
}

// A local layer whose window is shorter than the prompt: a dashed cap at W - 1 on the
// positions' axis across its column, named in the legend and the hover; none on a global layer
// or where the window spans the prompt, none on an axis that is not in positions.
TEST(FunnelViewTest, ALocalLayersWindowCapIsDrawnAndNamed) {
    FunnelView view;
    view.setStatistics(funnel(), 1000);
    view.setSlidingWindows({128, 0, 128, 2000});
    EXPECT_EQ(view.windowCap(0), 127);
    EXPECT_EQ(view.windowCap(1), 0);
    EXPECT_EQ(view.windowCap(3), 0);  // 1999 positions reach past the prompt's 1000
    EXPECT_TRUE(view.drawsWindowCaps());
    show(view);
    QImage image = grab(view);
    QDir().mkpath(KVLENS_UI_TEST_DIR);
    EXPECT_TRUE(image.save(QStringLiteral(KVLENS_UI_TEST_DIR "/funnel_windows.png")));
    const QColor cap = FunnelView::windowColor();
    auto band = [&](int layer) {
        const QRectF column = view.layerRect(layer);
        return QRectF(column.left(), view.yForBudget(127.0) - 2.0, column.width(), 5.0);
    };
    EXPECT_GT(countColour(image, band(0), cap), 10);
    EXPECT_GT(countColour(image, band(2), cap), 10);
    EXPECT_EQ(countColour(image, band(1), cap), 0);
    EXPECT_EQ(countColour(image, view.layerRect(3), cap), 0);
    EXPECT_NE(view.hoverText(0).indexOf(
                  "local layer, sliding window 128: a decode step reaches its last 127 prompt positions, the most any "
                  "method keeps here"),
              -1)
        << view.hoverText(0).toStdString();
    EXPECT_NE(view.hoverText(3).indexOf("local layer, sliding window 2000: it spans the prompt"), -1);
    EXPECT_EQ(view.hoverText(1).indexOf("sliding"), -1);
    // Entropy's axis is not in positions: without budgets on a second axis, no cap.
    view.setStatistic(FunnelStatistic::Entropy);
    EXPECT_FALSE(view.drawsWindowCaps());
    image = grab(view);
    EXPECT_EQ(countColour(image, QRectF(0, 0, image.width(), image.height()), cap), 0);
    // With budgets it has one, and the caps sit on it.
    view.setLayerBudgets(kBudgets, QStringLiteral("snapkv B=350"));
    EXPECT_TRUE(view.drawsWindowCaps());
    image = grab(view);
    EXPECT_GT(countColour(image, band(0), cap), 10);
    view.setSlidingWindows({});
    EXPECT_FALSE(view.drawsWindowCaps());
}

}  // namespace
}  // namespace kvlens::ui
