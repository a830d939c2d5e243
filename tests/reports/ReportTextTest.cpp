// The report's text helpers: what makes stored text safe inside XHTML, and the
// character-boundary prefix that marks where two continuations part.
#include <gtest/gtest.h>

#include <algorithm>
#include <limits>

#include "reports/Base64.h"
#include "reports/ReportHtml.h"
#include "reports/ReportData.h"
#include "reports/ReportTables.h"
#include "reports/ReportText.h"

namespace kvlens {
namespace {

const std::string kFffd = "\xef\xbf\xbd";

TEST(ReportText, SanitizeReplacesWhatXmlForbids) {
    EXPECT_EQ(ReportText::sanitize("plain\ttext\n"), "plain\ttext\n");
    EXPECT_EQ(ReportText::sanitize("caf\xc3\xa9 \xe2\x96\x81 \xf0\x9f\x98\x80"), "caf\xc3\xa9 \xe2\x96\x81 \xf0\x9f\x98\x80");
    EXPECT_EQ(ReportText::sanitize(std::string("a\x01" "b\x7f" "c", 5)), "a" + kFffd + "b" + kFffd + "c");
    EXPECT_EQ(ReportText::sanitize(std::string("nul\0!", 5)), "nul" + kFffd + "!");
    EXPECT_EQ(ReportText::sanitize("\xff\xfe"), kFffd + kFffd);
    EXPECT_EQ(ReportText::sanitize("cut \xe2\x82"), "cut " + kFffd + kFffd);    // truncated euro sign
    EXPECT_EQ(ReportText::sanitize("\xc0\xaf"), kFffd + kFffd);                 // overlong '/'
    EXPECT_EQ(ReportText::sanitize("\xed\xa0\x80"), kFffd + kFffd + kFffd);     // a surrogate
    EXPECT_EQ(ReportText::sanitize("\xef\xbf\xbe"), kFffd);                     // U+FFFE
    EXPECT_EQ(ReportText::sanitize("\xc2\x85"), kFffd);                         // C1 control
}

TEST(ReportText, XmlEscapes) {
    EXPECT_EQ(ReportText::xml("<a href=\"x\">'&'</a>\r"), "&lt;a href=&quot;x&quot;&gt;&#39;&amp;&#39;&lt;/a&gt;&#13;");
}

TEST(ReportText, CommonPrefixStopsOnACharacterBoundary) {
    EXPECT_EQ(ReportText::commonPrefix("the cat", "the dog"), 4u);
    EXPECT_EQ(ReportText::commonPrefix("same", "same"), 4u);
    // é (c3 a9) against è (c3 a8): the shared lead byte is not a character of its own.
    EXPECT_EQ(ReportText::commonPrefix("caf\xc3\xa9", "caf\xc3\xa8"), 3u);
    EXPECT_EQ(ReportText::commonPrefix("", "x"), 0u);
    EXPECT_EQ(ReportText::preview("\xc3\xa9t\xc3\xa9 long", 3), "\xc3\xa9t\xc3\xa9");
}

TEST(ReportText, Numbers) {
    const double nan = std::numeric_limits<double>::quiet_NaN();
    EXPECT_EQ(ReportText::percent(0.1234), "12.3%");
    EXPECT_EQ(ReportText::percent(nan), "\xe2\x80\x94");
    EXPECT_EQ(ReportText::bytes(999), "999 B");
    EXPECT_EQ(ReportText::bytes(41000), "41.0 KB");
    EXPECT_EQ(ReportText::bytes(590100), "590.1 KB");
    EXPECT_EQ(ReportText::bytes(5901000), "5.90 MB");
    EXPECT_EQ(ReportText::exact(0.1), "0.10000000000000001");
    EXPECT_EQ(ReportText::exact(nan), "nan");
}

TEST(ReportBase64, Rfc4648Vectors) {
    EXPECT_EQ(Base64::encode(std::string("")), "");
    EXPECT_EQ(Base64::encode(std::string("f")), "Zg==");
    EXPECT_EQ(Base64::encode(std::string("fo")), "Zm8=");
    EXPECT_EQ(Base64::encode(std::string("foo")), "Zm9v");
    EXPECT_EQ(Base64::encode(std::string("foobar")), "Zm9vYmFy");
    EXPECT_EQ(Base64::encode(std::vector<uint8_t>{0xff, 0xfe, 0x00}), "//4A");
}

TEST(ReportHtmlSvg, InlineSvgDropsTheDeclarationAndPrefixesIds) {
    const std::string svg =
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<svg xmlns=\"http://www.w3.org/2000/svg\">"
        "<clipPath id=\"plot0\"><rect/></clipPath><g clip-path=\"url(#plot0)\"/><use href=\"#plot0\"/></svg>\n";
    EXPECT_EQ(ReportHtml::inlineSvg(svg, "f-"),
              "<svg xmlns=\"http://www.w3.org/2000/svg\"><clipPath id=\"f-plot0\"><rect/></clipPath>"
              "<g clip-path=\"url(#f-plot0)\"/><use href=\"#f-plot0\"/></svg>\n");
}

// The settings table's knobs: a wrapper scored by LagKV names LagKV's sinks and lag beside
// its own knobs, whatever the wrapper (CAKE's and per-layer's set theirs first).
TEST(ReportTables, AWrapperScoredByLagKvNamesItsSinksAndLag) {
    ReportData data;
    for (const char* method : {"cake", "perlayer", "adakv", "chunkkv"}) {
        sessions::RunRecord r;
        r.id = int64_t(data.runs.size()) + 1;
        r.params.method = method;
        r.params.budget = 128;
        r.params.scorer = "lagkv";
        r.params.sinks = 2;
        r.params.lag = 48;
        data.runs.push_back(r);
    }
    const ReportTable t = ReportTables::settings(data);
    const auto knobs = std::find(t.columnIds.begin(), t.columnIds.end(), "knobs") - t.columnIds.begin();
    ASSERT_EQ(t.rows.size(), 4u);
    // The knobs each reads, as the method table composes the wrapper with LagKV.
    EXPECT_EQ(t.rows[0][knobs].text, "scorer lagkv, sinks 2, lag 48, tau1 1, tau2 1");
    EXPECT_EQ(t.rows[1][knobs].text, "scorer lagkv, sinks 2, lag 48, weights equal");
    EXPECT_EQ(t.rows[2][knobs].text, "scorer lagkv, alpha 0.2, sinks 2, lag 48");
    EXPECT_EQ(t.rows[3][knobs].text, "scorer lagkv, sinks 2, lag 48, chunk 10");
}

}  // namespace
}  // namespace kvlens
