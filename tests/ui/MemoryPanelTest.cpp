// KV memory: the totals line for known bytes, bar heights in the grabbed chart
// proportional to the bytes, the process and GPU lines, and the refresh timer only
// while shown.
#include <gtest/gtest.h>

#include "WidgetFixtures.h"
#include "ui/MemoryChart.h"
#include "ui/MemoryPanel.h"

#include <QLabel>

#include "core/Selection.h"

namespace kvlens::ui {
namespace {

// Height of the run of `color` pixels going up from the plot's bottom row at column x.
int barHeightAt(const QImage& image, int x, int bottom, const QColor& color) {
    int h = 0;
    while (bottom - h >= 0 && test::sameColor(image.pixel(x, bottom - h), color)) ++h;
    return h;
}

TEST(MemoryPanel, TotalsTextForKnownBytes) {
    EXPECT_EQ(MemoryPanel::totalsText(184'500'000, 23'100'000),
              "KV: 184.5 MB \u2192 23.1 MB (12.5%, 8.0x smaller)");
    EXPECT_EQ(MemoryPanel::totalsText(2'000'000'000, 2'000'000'000),
              "KV: 2.0 GB \u2192 2.0 GB (100.0%)");
    EXPECT_EQ(MemoryPanel::totalsText(1000, 0), "KV: 1.0 KB \u2192 0 B (0.0%)");
    EXPECT_EQ(MemoryPanel::totalsText(0, 0), "KV: 0 B \u2192 0 B");

    MemoryPanel panel;
    // 5 layers of 36.9 MB full and 4.62 MB compressed: 184.5 MB -> 23.1 MB.
    panel.setMemory(std::vector<int64_t>(5, 36'900'000), std::vector<int64_t>(5, 4'620'000),
                    "#4 snapkv B=64");
    EXPECT_EQ(panel.totals(), "KV: 184.5 MB \u2192 23.1 MB (12.5%, 8.0x smaller)");
}

// ThinK's note: how many key channels it pruned, and that it masks (the bytes leave them
// out, the allocation keeps them); hidden for a selection without ThinK and on clear().
TEST(MemoryPanel, ThinksPrunedChannelsAreNamedUnderTheTotals) {
    Selection s;
    s.kept = {{{0, 1}, {0, 2}}};
    EXPECT_EQ(MemoryPanel::channelsText(s, 64), "");
    s.prunedChannels = {{{1, 5, 9}, {0, 2, 4}}};
    const QString text = MemoryPanel::channelsText(s, 64);
    EXPECT_EQ(text, "ThinK: 3 of 64 key channels pruned in every kept prompt key (zeroed in place, as kvpress "
                    "does): the KV above leaves them out, the memory allocated still holds them");
    MemoryPanel panel;
    panel.show();
    panel.setNote(text);
    EXPECT_EQ(panel.note(), text);
    EXPECT_TRUE(panel.findChild<QLabel*>("note")->isVisible());
    panel.clear("No run yet");
    EXPECT_FALSE(panel.findChild<QLabel*>("note")->isVisible());
}

// What the last decode's cache allocated, beside the logical KV: shown until cleared.
// The local layers whose window is shorter than the prompt, named as runs, with what their
// full cache holds; nothing where no window cuts the prompt.
TEST(MemoryPanel, LocalLayersAndTheirWindowAreALineOfTheirOwn) {
    EXPECT_EQ(MemoryPanel::windowText({64, 64, 64, 64}, 106),
              "Local layers L0-L3 (sliding window 64 of a 106-token prompt): a decode step reaches their last 63 "
              "positions, so their full cache is 63 entries per head, the most a method keeps there");
    EXPECT_TRUE(MemoryPanel::windowText({16, 0, 16, 16, 0}, 60)
                    .startsWith("Local layers L0, L2-L3 (sliding window 16 of a 60-token prompt): a decode step"));
    EXPECT_EQ(MemoryPanel::windowText({16, 0}, 60),
              "Local layer L0 (sliding window 16 of a 60-token prompt): a decode step reaches its last 15 "
              "positions, so its full cache is 15 entries per head, the most a method keeps there");
    EXPECT_EQ(MemoryPanel::windowText({64, 64}, 40), "");  // the window spans the prompt
    EXPECT_EQ(MemoryPanel::windowText({64, 64}, 63), "");  // the first decode step reaches position 0
    EXPECT_NE(MemoryPanel::windowText({64, 64}, 64), "");  // it does not
    EXPECT_EQ(MemoryPanel::windowText({0, 0}, 4000), "");
    EXPECT_EQ(MemoryPanel::windowText({}, 4000), "");
    MemoryPanel panel;
    panel.setSlidingWindows({16, 0}, 60);
    EXPECT_EQ(panel.windows().left(15), "Local layer L0 ");
    EXPECT_FALSE(panel.findChild<QLabel*>("windows")->isHidden());
    panel.setSlidingWindows({}, 0);
    EXPECT_TRUE(panel.findChild<QLabel*>("windows")->isHidden());
}

TEST(MemoryPanel, TheAllocatedBytesOfTheLastDecodeAreALineOfTheirOwn) {
    EXPECT_EQ(MemoryPanel::allocationText(6'100'000, 5'800'000),
              "Allocated: 6.1 MB, the compressed cache's buffers after the gather, room for the decode included "
              "(the kept entries 5.8 MB)");
    EXPECT_EQ(MemoryPanel::allocationText(0, 5'800'000),
              "Allocated: not recorded (a run stored before the store kept it)");
    MemoryPanel panel;
    panel.show();
    EXPECT_FALSE(panel.findChild<QLabel*>("allocation")->isVisible());
    panel.setAllocation(MemoryPanel::allocationText(6'100'000, 5'800'000));
    EXPECT_TRUE(panel.findChild<QLabel*>("allocation")->isVisible());
    EXPECT_EQ(panel.allocation(), MemoryPanel::allocationText(6'100'000, 5'800'000));
    panel.clear("No run yet");
    EXPECT_FALSE(panel.findChild<QLabel*>("allocation")->isVisible());
}

TEST(MemoryPanel, BarHeightsAreProportionalToBytes) {
    MemoryPanel panel;
    panel.resize(640, 360);
    panel.show();
    const std::vector<int64_t> full = {4'000'000, 4'000'000, 4'000'000, 4'000'000};
    const std::vector<int64_t> compressed = {1'000'000, 2'000'000, 500'000, 3'000'000};
    panel.setMemory(full, compressed, "test");
    QApplication::processEvents();
    MemoryChart* chart = panel.chart();
    ASSERT_EQ(chart->layers(), 4);
    EXPECT_EQ(chart->axisMax(), 4'000'000.0);  // a whole number of 1 MB ticks
    const QImage image = chart->grab().toImage();
    const int bottom = chart->plotRect().bottom();
    const double plotHeight = chart->plotRect().height();
    for (int l = 0; l < 4; ++l) {
        for (bool c : {false, true}) {
            const QRectF bar = chart->barRect(l, c);
            const int x = int(bar.center().x());
            const int64_t bytes = (c ? compressed : full)[size_t(l)];
            const double expected = double(bytes) / chart->axisMax() * plotHeight;
            const int measured = barHeightAt(
                image, x, bottom, c ? MemoryChart::compressedColor() : MemoryChart::fullColor());
            EXPECT_NEAR(measured, expected, 1.0) << "layer " << l << (c ? " compressed" : " full");
        }
    }
    // Proportional to each other: layer 3's compressed bar is 6 times layer 2's.
    const int tall = barHeightAt(image, int(chart->barRect(3, true).center().x()), bottom,
                                 MemoryChart::compressedColor());
    const int shortBar = barHeightAt(image, int(chart->barRect(2, true).center().x()), bottom,
                                     MemoryChart::compressedColor());
    EXPECT_NEAR(double(tall) / double(shortBar), 6.0, 0.3);
}

TEST(MemoryPanel, MismatchedOrMissingLayersSayWhy) {
    MemoryPanel panel;
    panel.setMemory({1, 2, 3}, {1, 2}, "x");
    EXPECT_EQ(panel.chart()->message(),
              "No per-layer bars: 3 layers of full-cache bytes but 2 compressed");
    EXPECT_EQ(panel.chart()->layers(), 0);
    panel.setMemory({}, {}, "x");
    EXPECT_EQ(panel.chart()->message(), "No per-layer bytes recorded");
    panel.clear("The run failed");
    EXPECT_EQ(panel.chart()->message(), "The run failed");
    EXPECT_EQ(panel.totals(), "KV: \u2014");
}

TEST(MemoryPanel, AxisLabelsUseOneUnitWithTheStepsDecimals) {
    EXPECT_EQ(MemoryChart::tickLabel(0, 5e6, 2e7), "0");
    EXPECT_EQ(MemoryChart::tickLabel(1.5e7, 5e6, 2e7), "15 MB");
    EXPECT_EQ(MemoryChart::tickLabel(2.5e5, 2.5e5, 1e6), "0.25 MB");
    EXPECT_EQ(MemoryChart::tickLabel(400, 200, 800), "400 B");
    EXPECT_EQ(MemoryChart::tickLabel(2e9, 1e9, 3e9), "2 GB");
    EXPECT_EQ(MemoryChart::tickLabel(2e4, 1e4, 5e4), "20 KB");
}

TEST(MemoryPanel, ProcessAndGpuLines) {
    EXPECT_GT(MemoryPanel::residentBytes(), 0);
    MemoryPanel panel;
    EXPECT_TRUE(panel.processText().startsWith("Process memory (resident): "));
    EXPECT_TRUE(panel.processText().endsWith(" MB")) << panel.processText().toStdString();
    panel.setDevice("cpu", std::nullopt);
    EXPECT_EQ(panel.gpuText(), "GPU memory: not in use (CPU run)");
    panel.setDevice("cuda:0", int64_t(1'260'000'000));
    EXPECT_EQ(panel.gpuText(), "GPU memory: 1.3 GB in use on cuda:0");
    panel.setDevice("cuda:0", std::nullopt);
    EXPECT_EQ(panel.gpuText(), "GPU memory: not measured on cuda:0");
}

TEST(MemoryPanel, RefreshesProcessMemoryOnlyWhileShown) {
    MemoryPanel panel;
    EXPECT_FALSE(panel.refreshing());
    panel.show();
    EXPECT_TRUE(panel.refreshing());
    panel.hide();
    EXPECT_FALSE(panel.refreshing());
}

TEST(MemoryPanel, RealisticScreenshot) {
    MemoryPanel panel;
    panel.resize(720, 380);
    panel.show();
    // TinyLlama-like: 22 layers, 4 KV heads x 64 dims, bf16, 8192 tokens.
    std::vector<int64_t> full(22, int64_t(8192) * 4 * 64 * 2 * 2);
    std::vector<int64_t> compressed;
    for (int l = 0; l < 22; ++l) compressed.push_back(full[0] * (40 - l) / 160);
    panel.setMemory(full, compressed, "#7 pyramidkv B=1024");
    panel.setDevice("cpu", std::nullopt);
    QApplication::processEvents();
    test::screenshot(panel, "memory_panel");
    EXPECT_EQ(panel.chart()->layers(), 22);
}

}  // namespace
}  // namespace kvlens::ui
