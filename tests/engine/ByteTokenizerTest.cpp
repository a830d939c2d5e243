// ByteTokenizer: the fixed layout (<unk>, <s>, </s>, 256 bytes, filler ids)
// and lossless round trips of arbitrary bytes.
#include "engine/tokenizer/ByteTokenizer.h"

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "core/Error.h"

namespace kvlens {
namespace {

using Ids = std::vector<int32_t>;

TEST(ByteTokenizer, LayoutOfSpecialByteAndFillerIds) {
    ByteTokenizer t(32000);
    EXPECT_EQ(t.vocabSize(), 32000);
    EXPECT_EQ(t.bosId(), 1);
    EXPECT_EQ(t.eosId(), 2);
    EXPECT_TRUE(t.addBosByDefault());
    EXPECT_EQ(t.piece(0), "<unk>");
    EXPECT_EQ(t.piece(1), "<s>");
    EXPECT_EQ(t.piece(2), "</s>");
    EXPECT_EQ(t.piece(3), "<0x00>");
    EXPECT_EQ(t.piece(3 + 0x0A), "<0x0A>");
    EXPECT_EQ(t.piece(258), "<0xFF>");
    EXPECT_EQ(t.piece(259), "<t259>");
    EXPECT_EQ(t.piece(31999), "<t31999>");
    EXPECT_EQ(ByteTokenizer(128256).piece(128255), "<t128255>");
}

TEST(ByteTokenizer, EncodesOneIdPerByte) {
    ByteTokenizer t(259);
    EXPECT_EQ(t.encode("A\xFF\n", true), (Ids{1, 3 + 'A', 258, 3 + '\n'}));
    EXPECT_EQ(t.encode("A\xFF\n", false), (Ids{3 + 'A', 258, 3 + '\n'}));
    EXPECT_EQ(t.encode(std::string("\0", 1), false), (Ids{3}));
    EXPECT_EQ(t.encode("", true), (Ids{1}));
    EXPECT_EQ(t.encode("", false), (Ids{}));
    // No space prefix and no merging: "a b" is three ids.
    EXPECT_EQ(t.encode("a b", false), (Ids{3 + 'a', 3 + ' ', 3 + 'b'}));
}

TEST(ByteTokenizer, TokenBytes) {
    ByteTokenizer t(300);
    EXPECT_EQ(t.tokenBytes(0, -1), "");
    EXPECT_EQ(t.tokenBytes(1, -1), "");
    EXPECT_EQ(t.tokenBytes(2, -1), "");
    EXPECT_EQ(t.tokenBytes(3 + ' ', 1), " ");  // no space is dropped after BOS
    EXPECT_EQ(t.tokenBytes(3, -1), std::string("\0", 1));
    EXPECT_EQ(t.tokenBytes(258, -1), "\xFF");
    EXPECT_EQ(t.tokenBytes(259, -1), "<t259>");
    EXPECT_EQ(t.tokenBytes(299, 3), "<t299>");
    EXPECT_EQ(t.decode({1, 3 + 'h', 3 + 'i', 2, 259}), "hi<t259>");
}

TEST(ByteTokenizer, RoundTripsAnyBytes) {
    ByteTokenizer t(32000);
    std::string all;
    for (int b = 0; b < 256; ++b) all += static_cast<char>(b);
    EXPECT_EQ(t.decode(t.encode(all, true)), all);
    EXPECT_EQ(t.decode(t.encode(all, false)), all);
    EXPECT_EQ(t.encode(all, false).size(), 256u);

    std::mt19937 rng(99);
    for (int trial = 0; trial < 200; ++trial) {
        std::string text(rng() % 64, '\0');
        for (char& c : text) c = static_cast<char>(rng() % 256);
        EXPECT_EQ(t.decode(t.encode(text, trial % 2 == 0)), text) << "trial " << trial;
    }
    const std::string unicode = "naïve — 東京 🙂\n";
    EXPECT_EQ(t.decode(t.encode(unicode, true)), unicode);
}

TEST(ByteTokenizer, RejectsTooSmallVocabularies) {
    EXPECT_THROW(ByteTokenizer(258), Error);
    EXPECT_THROW(ByteTokenizer(0), Error);
    EXPECT_THROW(ByteTokenizer(-5), Error);
    EXPECT_NO_THROW(ByteTokenizer(259));
    try {
        ByteTokenizer bad(100);
        FAIL() << "no error";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("100"), std::string::npos) << e.what();
        EXPECT_NE(std::string(e.what()).find("259"), std::string::npos) << e.what();
    }
}

TEST(ByteTokenizer, RejectsIdsOutsideTheVocabulary) {
    ByteTokenizer t(259);
    EXPECT_THROW(t.piece(-1), Error);
    EXPECT_THROW(t.piece(259), Error);
    EXPECT_THROW(t.tokenBytes(259, -1), Error);
    EXPECT_THROW(t.decode({1, 5, 1000}), Error);
}

}  // namespace
}  // namespace kvlens
