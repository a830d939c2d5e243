// Side-by-side continuations: with a divergence at step 3 the documents carry the first
// highlight exactly on that token and later ones only on differing tokens; the metrics
// labels show their numbers formatted.
#include <gtest/gtest.h>

#include <QLabel>
#include <QTextBlock>
#include <QTextCursor>
#include <QTextDocument>
#include <limits>

#include "WidgetFixtures.h"
#include "ui/CacheSizeChart.h"
#include "ui/OutputsPanel.h"

namespace kvlens::ui {
namespace {

QString textOf(const QWidget& w, const char* name) {
    const auto* label = w.findChild<QLabel*>(name);
    EXPECT_NE(label, nullptr) << name;
    return label ? label->text() : QString();
}

// The background of the character at `position` (0 alpha: none).
QColor backgroundAt(QTextDocument* doc, int position) {
    QTextCursor cursor(doc);
    cursor.setPosition(position);
    cursor.setPosition(position + 1, QTextCursor::KeepAnchor);
    const QTextCharFormat format = cursor.charFormat();
    return format.hasProperty(QTextFormat::BackgroundBrush) ? format.background().color()
                                                            : QColor(0, 0, 0, 0);
}

QString tokenText(QTextDocument* doc, std::pair<int, int> range) {
    QTextCursor cursor(doc);
    cursor.setPosition(range.first);
    cursor.setPosition(range.second, QTextCursor::KeepAnchor);
    return cursor.selectedText();
}

struct Sample {
    std::vector<std::string> full = {" Once", " upon", " a", " time", ",", " there", " was"};
    std::vector<std::string> compressed = {" Once", " upon", " a", " day", ",", " she", " was"};
    RunMetrics metrics;
    Sample() {
        metrics.fullTokens = {10, 11, 12, 13, 14, 15, 16};
        metrics.tokens = {10, 11, 12, 23, 14, 25, 16};
        metrics.agreedPrefix = 3;
        metrics.tokenAgreement = 5.0 / 7.0;
        metrics.meanKl = 0.04213;
        metrics.top1Agreement = 6.0 / 7.0;
        metrics.ratio = 0.125;
    }
};

TEST(OutputsPanel, HighlightStartsExactlyAtTheFirstDivergence) {
    OutputsPanel panel;
    const Sample s;
    panel.setOutputs(s.full, s.compressed, s.metrics, "#4 snapkv B=64");
    ASSERT_EQ(panel.firstDivergence(), 3);
    for (bool compressed : {false, true}) {
        QTextDocument* doc = compressed ? panel.compressedDocument() : panel.fullDocument();
        const auto& pieces = compressed ? s.compressed : s.full;
        for (int step = 0; step < 7; ++step) {
            const auto range = panel.tokenRange(compressed, step);
            EXPECT_EQ(tokenText(doc, range), QString::fromStdString(pieces[size_t(step)]));
            // Steps 3 and 5 differ; 4 and 6 agree again and stay plain.
            const QColor expected = step == 3   ? OutputsPanel::firstDivergenceColor()
                                    : step == 5 ? OutputsPanel::differingColor()
                                                : QColor(0, 0, 0, 0);
            for (int c = range.first; c < range.second; ++c) {
                EXPECT_EQ(backgroundAt(doc, c), expected)
                    << (compressed ? "compressed" : "full") << " step " << step << " char " << c;
            }
        }
        EXPECT_EQ(doc->toPlainText(),
                  compressed ? " Once upon a day, she was" : " Once upon a time, there was");
    }
    EXPECT_EQ(panel.message(),
              "The continuations diverge at token 4 (after 3 agreed tokens); differing tokens "
              "from there on are highlighted");
    EXPECT_EQ(textOf(panel, "agreedPrefix"), "3 of 7 tokens");
    EXPECT_EQ(textOf(panel, "tokenAgreement"), "71.4%");
    EXPECT_EQ(textOf(panel, "meanKl"), "0.0421 nats");
    EXPECT_EQ(textOf(panel, "top1Agreement"), "85.7%");
    EXPECT_EQ(textOf(panel, "ratio"), "12.5%");
    EXPECT_EQ(textOf(panel, "hitRate"), "n/a");
}

TEST(OutputsPanel, IdsDecideWhenTwoTokensReadAlike) {
    OutputsPanel panel;
    Sample s;
    s.compressed = s.full;  // same text, but step 2 is another id
    s.metrics.tokens = s.metrics.fullTokens;
    s.metrics.tokens[2] = 99;
    s.metrics.hitRate = 0.784;
    panel.setOutputs(s.full, s.compressed, s.metrics, "x");
    EXPECT_EQ(panel.firstDivergence(), 2);
    EXPECT_EQ(textOf(panel, "hitRate"), "78.4%");
    // Without ids for every piece the text decides: no divergence.
    s.metrics.tokens.pop_back();
    panel.setOutputs(s.full, s.compressed, s.metrics, "x");
    EXPECT_FALSE(panel.firstDivergence().has_value());
    EXPECT_EQ(panel.message(), "The two continuations agree on all 7 tokens");
}

TEST(OutputsPanel, ExtraTokensAndEmptyPiecesAreHighlightedVisibly) {
    OutputsPanel panel;
    RunMetrics metrics;
    panel.setOutputs({"a", "b", "c"}, {"a", "", "c", "d"}, metrics, "x");
    EXPECT_EQ(panel.firstDivergence(), 1);
    EXPECT_EQ(panel.differing(), (std::vector<bool>{false, true, false, true}));
    // The empty piece shows as a visible mark that carries the highlight.
    const auto empty = panel.tokenRange(true, 1);
    EXPECT_EQ(tokenText(panel.compressedDocument(), empty), QStringLiteral("\u2205"));
    EXPECT_EQ(backgroundAt(panel.compressedDocument(), empty.first),
              OutputsPanel::firstDivergenceColor());
    EXPECT_EQ(backgroundAt(panel.compressedDocument(), panel.tokenRange(true, 3).first),
              OutputsPanel::differingColor());
}

TEST(OutputsPanel, ClearShowsWhyAndDashes) {
    OutputsPanel panel;
    const Sample s;
    panel.setOutputs(s.full, s.compressed, s.metrics, "x");
    panel.clear("The run failed: out of memory");
    EXPECT_EQ(panel.message(), "The run failed: out of memory");
    EXPECT_TRUE(panel.fullDocument()->isEmpty());
    EXPECT_TRUE(panel.compressedDocument()->isEmpty());
    EXPECT_EQ(textOf(panel, "meanKl"), QStringLiteral("\u2014"));
    EXPECT_FALSE(panel.firstDivergence().has_value());
}

// Compression during decoding: the cache's size over the steps under the metrics, a summary
// line naming the range, the steps and the schedule; gone with the next outputs or a clear.
TEST(OutputsPanel, TheCacheSizeOverTheStepsShowsWithCompressionDuringDecoding) {
    OutputsPanel panel;
    panel.show();
    const Sample s;
    panel.setOutputs(s.full, s.compressed, s.metrics, "x");
    EXPECT_FALSE(panel.cacheChart()->isVisible());
    std::vector<int64_t> entries;
    for (int i = 0; i < 40; ++i) entries.push_back(96 + i % 4);
    panel.setCacheEntries(entries, 96, 4);
    EXPECT_TRUE(panel.cacheChart()->isVisible());
    EXPECT_EQ(panel.cacheChart()->summary(), "Cache (per head): 96-99 entries over 40 steps, cut back to 96 every 4");
    const QImage shot = panel.cacheChart()->grab().toImage();
    int blue = 0;  // the line is drawn
    for (int y = 0; y < shot.height(); ++y)
        for (int x = 0; x < shot.width(); ++x) blue += test::sameColor(shot.pixel(x, y), QColor(0x00, 0x72, 0xb2));
    EXPECT_GT(blue, 20);
    panel.setOutputs(s.full, s.compressed, s.metrics, "x");
    EXPECT_FALSE(panel.cacheChart()->isVisible());
    panel.setCacheEntries(entries, 96, 4);
    panel.clear("No run yet");
    EXPECT_FALSE(panel.cacheChart()->isVisible());
}

TEST(OutputsPanel, RealisticScreenshot) {
    OutputsPanel panel;
    panel.resize(900, 340);
    panel.show();
    const std::vector<std::string> full = {
        " Once",   " upon",    " a",     " time", ",",     " there", " was",   " a",
        " little", " girl",    " named", " Lily", ".",     " She",   " loved", " to",
        " play",   " outside", " in",    " the",  " park", ".",      "\n",     "One",
        " day",    ",",        " she",   " saw",  " a",    " big",   " dog",   "."};
    std::vector<std::string> compressed = full;
    compressed[9] = " boy";
    compressed[11] = " Tim";
    compressed[14] = " liked";
    compressed[27] = " found";
    RunMetrics metrics;
    for (size_t i = 0; i < full.size(); ++i) {
        metrics.fullTokens.push_back(int32_t(i));
        metrics.tokens.push_back(compressed[i] == full[i] ? int32_t(i) : int32_t(100 + i));
    }
    metrics.agreedPrefix = 9;
    metrics.tokenAgreement = 28.0 / 32.0;
    metrics.meanKl = 0.0183;
    metrics.top1Agreement = 29.0 / 32.0;
    metrics.ratio = 0.125;
    metrics.hitRate = 0.784;
    panel.setOutputs(full, compressed, metrics, "#4 snapkv B=64");
    QApplication::processEvents();
    test::screenshot(panel, "outputs_panel");
    EXPECT_EQ(panel.firstDivergence(), 9);
}

}  // namespace
}  // namespace kvlens::ui
