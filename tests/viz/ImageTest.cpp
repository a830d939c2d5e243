// Image primitives and bitmap text.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>

#include "core/Error.h"
#include "viz/Image.h"

using namespace kvlens::viz;

namespace {

const Rgb kWhite{255, 255, 255};
const Rgb kBlack{0, 0, 0};

// Bounding box of non-white pixels: x0, y0, x1, y1 (inclusive); x0 = -1 when none.
std::array<int, 4> inkBox(const Image& img) {
    std::array<int, 4> b{-1, -1, -1, -1};
    for (int y = 0; y < img.height(); ++y)
        for (int x = 0; x < img.width(); ++x)
            if (img.at(x, y) != kWhite) {
                if (b[0] < 0) b = {x, y, x, y};
                b = {std::min(b[0], x), std::min(b[1], y), std::max(b[2], x), std::max(b[3], y)};
            }
    return b;
}

}  // namespace

TEST(Image, SizeAndFill) {
    Image img(7, 3, Rgb{1, 2, 3});
    EXPECT_EQ(img.width(), 7);
    EXPECT_EQ(img.height(), 3);
    EXPECT_EQ(img.bytes().size(), 7u * 3u * 3u);
    EXPECT_EQ(img.at(6, 2), (Rgb{1, 2, 3}));
    EXPECT_THROW(Image(0, 5), kvlens::Error);
    EXPECT_THROW(Image(5, Image::kMaxSide + 1), kvlens::Error);
}

TEST(Image, RectsAndLinesAreClipped) {
    Image img(10, 10);
    img.fillRect(-5, -5, 8, 8, kBlack);  // covers 0..2
    EXPECT_EQ(img.at(2, 2), kBlack);
    EXPECT_EQ(img.at(3, 3), kWhite);
    img.hline(12, 5, 9, Rgb{9, 9, 9});
    EXPECT_EQ(img.at(5, 9), (Rgb{9, 9, 9}));
    EXPECT_EQ(img.at(9, 9), (Rgb{9, 9, 9}));
    EXPECT_EQ(img.at(4, 9), kWhite);
    img.vline(8, 4, 6, Rgb{7, 7, 7});
    EXPECT_EQ(img.at(8, 4), (Rgb{7, 7, 7}));
    EXPECT_EQ(img.at(8, 6), (Rgb{7, 7, 7}));
    EXPECT_EQ(img.at(8, 7), kWhite);
    img.line(0, 9, 3, 6, Rgb{5, 5, 5});
    EXPECT_EQ(img.at(1, 8), (Rgb{5, 5, 5}));
    EXPECT_EQ(img.at(3, 6), (Rgb{5, 5, 5}));
    img.strokeRect(4, 0, 3, 3, kBlack);
    EXPECT_EQ(img.at(5, 1), kWhite);
    EXPECT_EQ(img.at(6, 2), kBlack);
}

TEST(Image, TextInksItsBoxAtTheAnchor) {
    const Font& f = Font::normal();
    Image img(200, 40);
    int w = img.drawText(10, 5, "Attention (token)", kBlack);
    EXPECT_EQ(w, f.textWidth("Attention (token)"));
    auto b = inkBox(img);
    ASSERT_GE(b[0], 0);
    EXPECT_GE(b[0], 9);
    EXPECT_LE(b[2], 10 + w);
    EXPECT_GE(b[1], 5);
    EXPECT_LE(b[3], 5 + f.lineHeight());
    EXPECT_GT(b[2] - b[0], 80);  // wide: 17 characters

    Image right(200, 40);
    right.drawText(190, 20, "x", kBlack, f, Anchor::MiddleRight);
    auto r = inkBox(right);
    EXPECT_LE(r[2], 190);
    EXPECT_GE(r[0], 190 - f.textWidth("x") - 1);
}

TEST(Image, VerticalTextIsTallAndLargeFontIsBigger) {
    Image img(40, 200);
    int w = img.drawTextVertical(20, 100, "query position", kBlack);
    auto b = inkBox(img);
    ASSERT_GE(b[0], 0);
    EXPECT_GT(b[3] - b[1], 60);
    EXPECT_LT(b[2] - b[0], Font::normal().lineHeight());
    EXPECT_NEAR((b[1] + b[3]) / 2.0, 100, 3);
    EXPECT_EQ(w, Font::normal().textWidth("query position"));
    EXPECT_GT(Font::large().lineHeight(), Font::normal().lineHeight());
    EXPECT_GT(Font::large().textWidth("Title"), Font::normal().textWidth("Title"));
    // Every printable character has a glyph with ink, except space.
    for (char c = 33; c < 127; ++c) {
        Image g(30, 30);
        g.drawText(5, 5, std::string(1, c), kBlack);
        EXPECT_GE(inkBox(g)[0], 0) << "no ink for '" << c << "'";
    }
    EXPECT_EQ(Font::normal().textWidth("\x01"), Font::normal().textWidth("?"));
}
