// LlamaTokenizer: the SentencePiece merge order on vocabularies built in memory
// (expected ids worked out by hand), byte fallback, decoding, the GGUF error
// paths, and the real stories260K vocabulary against llama.cpp's reference.
#include "engine/tokenizer/LlamaTokenizer.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "core/Error.h"
#include "engine/gguf/GgufFile.h"
#include "tests/support/GgufBuilder.h"

namespace kvlens {
namespace {

using Ids = std::vector<int32_t>;
using Type = LlamaTokenType;

const std::string kMark = "\xE2\x96\x81";  // '▁'

// ids 0 <unk>, 1 <s>, 2 </s>, then (withBytes) 3..258 <0x00>..<0xFF>, then
// whatever add() appends.
struct VocabBuilder {
    LlamaVocab vocab;

    explicit VocabBuilder(bool withBytes = true) {
        add("<unk>", 0.0f, Type::Unknown);
        add("<s>", 0.0f, Type::Control);
        add("</s>", 0.0f, Type::Control);
        if (withBytes) {
            for (int b = 0; b < 256; ++b) {
                char buf[8];
                std::snprintf(buf, sizeof buf, "<0x%02X>", b);
                add(buf, 0.0f, Type::Byte);
            }
        }
    }
    int32_t add(const std::string& text, float score, Type type = Type::Normal) {
        vocab.tokens.push_back(text);
        vocab.scores.push_back(score);
        vocab.types.push_back(type);
        return static_cast<int32_t>(vocab.tokens.size() - 1);
    }
    std::unique_ptr<LlamaTokenizer> build() const { return std::make_unique<LlamaTokenizer>(vocab); }
};

int32_t byteId(unsigned b) { return 3 + static_cast<int32_t>(b); }

// The message of the kvlens::Error that `f` throws ("" when it throws none).
template <typename F>
std::string errorOf(F&& f) {
    try {
        f();
    } catch (const Error& e) {
        return e.what();
    }
    return "";
}

// ----------------------------------------------------------------- merge order

TEST(LlamaTokenizer, MergesTheHighestScoringPairFirst) {
    {
        VocabBuilder v;
        v.vocab.addSpacePrefix = false;
        const int32_t a = v.add("a", -10), b = v.add("b", -10), c = v.add("c", -10);
        const int32_t ab = v.add("ab", -1), bc = v.add("bc", -2);
        (void)a;
        (void)b;
        (void)bc;
        EXPECT_EQ(v.build()->encode("abc", false), (Ids{ab, c}));
    }
    {
        VocabBuilder v;
        v.vocab.addSpacePrefix = false;
        const int32_t a = v.add("a", -10), b = v.add("b", -10), c = v.add("c", -10);
        const int32_t ab = v.add("ab", -2), bc = v.add("bc", -1);
        (void)b;
        (void)c;
        (void)ab;
        EXPECT_EQ(v.build()->encode("abc", false), (Ids{a, bc}));
    }
}

TEST(LlamaTokenizer, EqualScoresMergeTheLeftmostPairFirst) {
    {
        VocabBuilder v;
        v.vocab.addSpacePrefix = false;
        const int32_t a = v.add("a", -10);
        const int32_t aa = v.add("aa", -1);
        EXPECT_EQ(v.build()->encode("aaa", false), (Ids{aa, a}));
        EXPECT_EQ(v.build()->encode("aaaaa", false), (Ids{aa, aa, a}));
    }
    {
        VocabBuilder v;
        v.vocab.addSpacePrefix = false;
        v.add("a", -10);
        v.add("b", -10);
        const int32_t c = v.add("c", -10);
        // bc comes first in the vocabulary: position, not id, breaks the tie.
        v.add("bc", -3);
        const int32_t ab = v.add("ab", -3);
        EXPECT_EQ(v.build()->encode("abc", false), (Ids{ab, c}));
    }
}

TEST(LlamaTokenizer, PairsFormedByMergesCompeteByScore) {
    // "abcd": ab (-1) merges first, then abc (-3) competes with cd (-2).
    {
        VocabBuilder v;
        v.vocab.addSpacePrefix = false;
        v.add("a", -10);
        v.add("b", -10);
        v.add("c", -10);
        v.add("d", -10);
        const int32_t ab = v.add("ab", -1);
        const int32_t cd = v.add("cd", -2);
        v.add("abc", -3);
        // cd wins; the queued abc is stale once c has grown into cd.
        EXPECT_EQ(v.build()->encode("abcd", false), (Ids{ab, cd}));
    }
    {
        VocabBuilder v;
        v.vocab.addSpacePrefix = false;
        v.add("a", -10);
        v.add("b", -10);
        v.add("c", -10);
        const int32_t d = v.add("d", -10);
        v.add("ab", -1);
        v.add("cd", -2);
        const int32_t abc = v.add("abc", -1.5f);
        EXPECT_EQ(v.build()->encode("abcd", false), (Ids{abc, d}));
    }
    {
        // Merges build a long token through intermediate pieces.
        VocabBuilder v;
        v.vocab.addSpacePrefix = false;
        for (const char* s : {"h", "e", "l", "o"}) v.add(s, -10);
        v.add("ll", -1);
        v.add("he", -2);
        v.add("hell", -3);
        const int32_t hello = v.add("hello", -4);
        EXPECT_EQ(v.build()->encode("hello", false), (Ids{hello}));
    }
}

TEST(LlamaTokenizer, SpacesBecomeTheMarkerWithAPrefix) {
    VocabBuilder v;
    const int32_t mark = v.add(kMark, -5);
    const int32_t a = v.add("a", -10);
    v.add("b", -10);
    const int32_t markA = v.add(kMark + "a", -1);
    const int32_t markB = v.add(kMark + "b", -2);
    const int32_t markMark = v.add(kMark + kMark, -3);
    auto t = v.build();
    EXPECT_EQ(t->encode("a b", false), (Ids{markA, markB}));
    EXPECT_EQ(t->encode("a b", true), (Ids{1, markA, markB}));
    // "▁▁▁a": ▁a (-1) first, then the leftmost ▁▁ (-3); the other ▁▁ is stale.
    EXPECT_EQ(t->encode("  a", false), (Ids{markMark, markA}));
    EXPECT_EQ(t->encode(" ", false), (Ids{markMark}));
    EXPECT_EQ(t->encode("a ", false), (Ids{markA, mark}));

    v.vocab.addSpacePrefix = false;
    auto noPrefix = v.build();
    EXPECT_EQ(noPrefix->encode("a b", false), (Ids{a, markB}));
    EXPECT_FALSE(noPrefix->addSpacePrefix());
}

TEST(LlamaTokenizer, EmptyTextIsJustBos) {
    VocabBuilder v;
    v.add(kMark, -1);
    auto t = v.build();
    EXPECT_EQ(t->encode("", true), (Ids{1}));
    EXPECT_EQ(t->encode("", false), (Ids{}));
    EXPECT_EQ(t->decode({}), "");
    EXPECT_EQ(t->decode({1}), "");
}

// ---------------------------------------------------------------- byte fallback

TEST(LlamaTokenizer, CharactersOutsideTheVocabularyFallBackToBytes) {
    VocabBuilder v;
    const int32_t mark = v.add(kMark, -5);
    v.add("a", -10);
    const int32_t markA = v.add(kMark + "a", -1);
    const int32_t eAcute = v.add("\xC3\xA9", -10);  // é is a token, è is not
    auto t = v.build();
    // è = C3 A8
    EXPECT_EQ(t->encode("\xC3\xA8", false), (Ids{mark, byteId(0xC3), byteId(0xA8)}));
    EXPECT_EQ(t->encode("a\xC3\xA8", false), (Ids{markA, byteId(0xC3), byteId(0xA8)}));
    EXPECT_EQ(t->encode("a\xC3\xA9", false), (Ids{markA, eAcute}));
    // 🙂 = F0 9F 99 82, 東 = E6 9D B1
    EXPECT_EQ(t->encode("\xF0\x9F\x99\x82\xE6\x9D\xB1", false),
              (Ids{mark, byteId(0xF0), byteId(0x9F), byteId(0x99), byteId(0x82), byteId(0xE6), byteId(0x9D),
                   byteId(0xB1)}));
    // Control characters too.
    EXPECT_EQ(t->encode("\n", false), (Ids{mark, byteId(0x0A)}));
}

TEST(LlamaTokenizer, InvalidUtf8BytesAreSymbolsOfTheirOwn) {
    VocabBuilder v;
    v.vocab.addSpacePrefix = false;
    v.add("a", -10);
    v.add("b", -10);
    const int32_t ab = v.add("ab", -1);
    auto t = v.build();
    // A lead byte without its continuation bytes does not swallow "ab".
    EXPECT_EQ(t->encode("\xE6" "ab", false), (Ids{byteId(0xE6), ab}));
    EXPECT_EQ(t->encode("\xF0\x9F" "ab", false), (Ids{byteId(0xF0), byteId(0x9F), ab}));
    EXPECT_EQ(t->encode("\x80" "ab\xFF", false), (Ids{byteId(0x80), ab, byteId(0xFF)}));
    // Truncated at the end of the text.
    EXPECT_EQ(t->encode("ab\xE6\x9D", false), (Ids{ab, byteId(0xE6), byteId(0x9D)}));
    EXPECT_EQ(t->decode(t->encode("\xE6" "ab\xC3", true)), "\xE6" "ab\xC3");
}

TEST(LlamaTokenizer, WithoutByteTokensUnknownBytesBecomeUnk) {
    VocabBuilder v(false);
    v.add(kMark, -5);
    v.add("a", -10);
    const int32_t markA = v.add(kMark + "a", -1);
    auto t = v.build();
    EXPECT_EQ(t->encode("a\xC3\xA8", false), (Ids{markA, 0, 0}));
    EXPECT_EQ(t->decode({1, markA, 0, 0}), "a");

    v.vocab.unkId = -1;
    auto noUnk = v.build();
    EXPECT_NE(errorOf([&] { noUnk->encode("a\xC3\xA8", false); }).find("<0xC3>"), std::string::npos);
}

// ------------------------------------------------------------- special tokens

TEST(LlamaTokenizer, ControlTokenTextInTheInputIsPlainText) {
    VocabBuilder v;
    v.vocab.addSpacePrefix = false;
    const int32_t lt = v.add("<", -10);
    const int32_t s = v.add("s", -10);
    const int32_t gt = v.add(">", -10);
    auto t = v.build();
    EXPECT_EQ(t->encode("<s>", false), (Ids{lt, s, gt}));
    EXPECT_EQ(t->encode("</s>", false), (Ids{lt, byteId('/'), s, gt}));
}

TEST(LlamaTokenizer, UserDefinedTokensAreCutOutFirst) {
    VocabBuilder v;
    v.add(kMark, -5);
    v.add("a", -10);
    v.add("b", -10);
    const int32_t markA = v.add(kMark + "a", -1);
    const int32_t markB = v.add(kMark + "b", -2);
    const int32_t ud = v.add("<|x|>", 0, Type::UserDefined);
    const int32_t xy = v.add("xy", 0, Type::UserDefined);
    const int32_t xyz = v.add("xyz", 0, Type::UserDefined);
    auto t = v.build();
    // Each text run after a user-defined token gets the space prefix again.
    EXPECT_EQ(t->encode("a<|x|>b", true), (Ids{1, markA, ud, markB}));
    EXPECT_EQ(t->encode("<|x|><|x|>", false), (Ids{ud, ud}));
    // Longest first: xyz is cut before xy can match inside it.
    EXPECT_EQ(t->encode("xyzxy", false), (Ids{xyz, xy}));
    // User-defined tokens decode to their text.
    EXPECT_EQ(t->decode({1, markA, ud, markB}), "a<|x|> b");
}

// -------------------------------------------------------------------- decoding

TEST(LlamaTokenizer, PieceShowsSpacesControlTextAndByteNames) {
    VocabBuilder v;
    const int32_t markA = v.add(kMark + "a" + kMark + "b", -1);
    auto t = v.build();
    EXPECT_EQ(t->piece(markA), " a b");
    EXPECT_EQ(t->piece(0), "<unk>");
    EXPECT_EQ(t->piece(1), "<s>");
    EXPECT_EQ(t->piece(2), "</s>");
    EXPECT_EQ(t->piece(byteId(0x0A)), "<0x0A>");
    EXPECT_EQ(t->tokenType(byteId(0x0A)), Type::Byte);
    EXPECT_EQ(t->tokenId("<s>"), 1);
    EXPECT_EQ(t->tokenId("nope"), -1);
}

TEST(LlamaTokenizer, TokenBytesDropsTheLeadingSpaceOnlyAfterBos) {
    VocabBuilder v;
    const int32_t markA = v.add(kMark + "a", -1);
    const int32_t markB = v.add(kMark + "b", -2);
    auto t = v.build();
    EXPECT_EQ(t->tokenBytes(markA, -1), " a");
    EXPECT_EQ(t->tokenBytes(markA, 1), "a");
    EXPECT_EQ(t->tokenBytes(markA, markB), " a");
    EXPECT_EQ(t->tokenBytes(markA, 2), " a");
    EXPECT_EQ(t->decode({1, markA, markB}), "a b");
    EXPECT_EQ(t->decode({markA, markB}), " a b");
    EXPECT_EQ(t->decode({markA, 1, markB}), " ab");

    // Without a space prefix nothing was added, so nothing is dropped.
    v.vocab.addSpacePrefix = false;
    auto noPrefix = v.build();
    EXPECT_EQ(noPrefix->tokenBytes(markA, 1), " a");
}

TEST(LlamaTokenizer, DecodeDropsControlTokensAndEmitsRawBytes) {
    VocabBuilder v;
    const int32_t markA = v.add(kMark + "a", -1);
    const int32_t markB = v.add(kMark + "b", -2);
    auto t = v.build();
    EXPECT_EQ(t->tokenBytes(2, -1), "");
    EXPECT_EQ(t->tokenBytes(0, -1), "");
    EXPECT_EQ(t->tokenBytes(byteId(0xC3), -1), "\xC3");
    EXPECT_EQ(t->decode({1, markA, 2, byteId(0xC3), byteId(0xA8), markB, 2}), "a\xC3\xA8 b");
    // Byte tokens are raw bytes: the marker spelled as bytes stays a marker.
    EXPECT_EQ(t->decode({byteId(0xE2), byteId(0x96), byteId(0x81)}), kMark);
    EXPECT_NE(errorOf([&] { t->decode({markA, t->vocabSize()}); }).find("outside the vocabulary"),
              std::string::npos);
    EXPECT_NE(errorOf([&] { t->piece(-1); }), "");
}

TEST(LlamaTokenizer, RoundTripsArbitraryBytes) {
    VocabBuilder v;
    v.add(kMark, -5);
    for (const char* s : {"a", "b", "c", "ab", "bc", "abc"}) v.add(s, -static_cast<float>(std::string(s).size()));
    v.add(kMark + "a", -0.5f);
    v.add("\xC3\xA9", -3);
    auto t = v.build();
    std::mt19937 rng(1234);
    const std::string alphabet = "abc \n\xC3\xA9\xE6\x9D\xB1\xF0\x9F\x99\x82\x80\xFF";
    for (int trial = 0; trial < 500; ++trial) {
        std::string text;
        const int len = static_cast<int>(rng() % 24);
        for (int k = 0; k < len; ++k) {
            text += (trial % 2) ? static_cast<char>(rng() % 256) : alphabet[rng() % alphabet.size()];
        }
        if (text.find(kMark) != std::string::npos) continue;  // the marker itself decodes to a space
        EXPECT_EQ(t->decode(t->encode(text, true)), text) << "trial " << trial;
        if (!text.empty()) {
            EXPECT_EQ(t->decode(t->encode(text, false)), " " + text) << "trial " << trial;
        }
    }
}

// ------------------------------------------------------------ vocabulary checks

TEST(LlamaTokenizer, RejectsInconsistentVocabularies) {
    auto fails = [](const LlamaVocab& vocab) {
        return errorOf([&] { LlamaTokenizer t(vocab, "test-vocab"); });
    };
    const VocabBuilder good;
    EXPECT_EQ(fails(good.vocab), "");

    LlamaVocab v = good.vocab;
    v.scores.pop_back();
    EXPECT_NE(fails(v).find("258 token scores for 259 tokens"), std::string::npos) << fails(v);

    v = good.vocab;
    v.types.push_back(Type::Normal);
    EXPECT_NE(fails(v).find("260 token types for 259 tokens"), std::string::npos) << fails(v);

    v = good.vocab;
    v.bosId = 259;
    EXPECT_NE(fails(v).find("BOS token id 259 is outside the vocabulary of 259 tokens"), std::string::npos)
        << fails(v);

    v = good.vocab;
    v.unkId = -2;
    EXPECT_NE(fails(v).find("unknown token id -2"), std::string::npos) << fails(v);

    v = good.vocab;
    v.types[7] = static_cast<Type>(9);
    EXPECT_NE(fails(v).find("token 7 ('<0x04>') has type 9"), std::string::npos) << fails(v);

    v = good.vocab;
    v.tokens[10] = "<0xZZ>";
    EXPECT_NE(fails(v).find("byte token 10 is '<0xZZ>'"), std::string::npos) << fails(v);

    v = good.vocab;
    v.bosId = -1;
    EXPECT_NE(fails(v).find("no BOS token"), std::string::npos) << fails(v);
    v.addBos = false;
    EXPECT_EQ(fails(v), "");

    EXPECT_NE(fails(LlamaVocab{}).find("test-vocab: "), std::string::npos);
}

// --------------------------------------------------------------------- fromGguf

// A valid little `llama` vocabulary in GGUF form; `skip` leaves out one key and
// the caller adds its own version of it.
test::GgufBuilder tokenizerGguf(const std::string& skip = "") {
    test::GgufBuilder b;
    const std::string k = "tokenizer.ggml.";
    b.addString("general.architecture", "llama");
    if (skip != "model") b.addString(k + "model", "llama");
    if (skip != "tokens") b.addStringArray(k + "tokens", {"<unk>", "<s>", "</s>", kMark, "a", kMark + "a"});
    if (skip != "scores") b.addFloat32Array(k + "scores", {0, 0, 0, -5, -10, -1});
    if (skip != "token_type") b.addInt32Array(k + "token_type", {2, 3, 3, 1, 1, 1});
    if (skip != "bos_token_id") b.addUInt32(k + "bos_token_id", 1);
    if (skip != "eos_token_id") b.addUInt32(k + "eos_token_id", 2);
    if (skip != "unknown_token_id") b.addUInt32(k + "unknown_token_id", 0);
    return b;
}

std::string fromGgufError(const test::GgufBuilder& b) {
    GgufFile file(b.build(), "m.gguf");
    return errorOf([&] { LlamaTokenizer::fromGguf(file); });
}

TEST(LlamaTokenizer, FromGgufReadsTheVocabulary) {
    auto b = tokenizerGguf();
    b.addBool("tokenizer.ggml.add_bos_token", false);
    GgufFile file(b.build(), "m.gguf");
    auto t = LlamaTokenizer::fromGguf(file);
    EXPECT_EQ(t->vocabSize(), 6);
    EXPECT_EQ(t->bosId(), 1);
    EXPECT_EQ(t->eosId(), 2);
    EXPECT_EQ(t->unkId(), 0);
    EXPECT_FALSE(t->addBosByDefault());
    EXPECT_TRUE(t->addSpacePrefix());
    EXPECT_EQ(t->encode("a a", true), (Ids{1, 5, 5}));
    EXPECT_EQ(t->score(5), -1.0f);

    // Defaults: add_bos_token and add_space_prefix true, ids 1/2/0.
    auto d = tokenizerGguf("bos_token_id");
    d.addBool("tokenizer.ggml.add_space_prefix", false);
    GgufFile file2(d.build(), "d.gguf");
    auto t2 = LlamaTokenizer::fromGguf(file2);
    EXPECT_TRUE(t2->addBosByDefault());
    EXPECT_FALSE(t2->addSpacePrefix());
    EXPECT_EQ(t2->bosId(), 1);
    EXPECT_EQ(t2->encode("a a", true), (Ids{1, 4, 5}));
}

TEST(LlamaTokenizer, FromGgufRejectsOtherTokenizerModels) {
    auto b = tokenizerGguf("model");
    b.addString("tokenizer.ggml.model", "gpt2");
    EXPECT_EQ(fromGgufError(b),
              "m.gguf: tokenizer.ggml.model is 'gpt2'; only 'llama' (SentencePiece) vocabularies are supported");
    EXPECT_EQ(fromGgufError(tokenizerGguf("model")), "m.gguf: tokenizer.ggml.model is missing; the file has no tokenizer");
}

TEST(LlamaTokenizer, FromGgufNamesMissingAndMismatchedArrays) {
    for (const char* key : {"tokens", "scores", "token_type"}) {
        EXPECT_EQ(fromGgufError(tokenizerGguf(key)), std::string("m.gguf: tokenizer.ggml.") + key + " is missing");
    }
    auto shortScores = tokenizerGguf("scores");
    shortScores.addFloat32Array("tokenizer.ggml.scores", {0, 0, 0, 0, 0});
    EXPECT_EQ(fromGgufError(shortScores),
              "m.gguf: tokenizer.ggml.scores has 5 entries but tokenizer.ggml.tokens has 6");

    auto longTypes = tokenizerGguf("token_type");
    longTypes.addInt32Array("tokenizer.ggml.token_type", {2, 3, 3, 1, 1, 1, 1});
    EXPECT_EQ(fromGgufError(longTypes),
              "m.gguf: tokenizer.ggml.token_type has 7 entries but tokenizer.ggml.tokens has 6");

    auto badType = tokenizerGguf("token_type");
    badType.addInt32Array("tokenizer.ggml.token_type", {2, 3, 3, 1, 7, 1});
    EXPECT_EQ(fromGgufError(badType), "m.gguf: tokenizer.ggml.token_type[4] is 7; token types are 0..6");

    auto wrongKind = tokenizerGguf("tokens");
    wrongKind.addFloat32Array("tokenizer.ggml.tokens", {1, 2, 3, 4, 5, 6});
    const std::string msg = fromGgufError(wrongKind);
    EXPECT_EQ(msg.rfind("m.gguf: ", 0), 0u) << msg;
    EXPECT_NE(msg.find("tokenizer.ggml.tokens"), std::string::npos) << msg;

    auto empty = tokenizerGguf("tokens");
    empty.addStringArray("tokenizer.ggml.tokens", {});
    EXPECT_EQ(fromGgufError(empty), "m.gguf: tokenizer.ggml.tokens is empty");
}

TEST(LlamaTokenizer, FromGgufRejectsOutOfRangeIds) {
    auto bos = tokenizerGguf("bos_token_id");
    bos.addUInt32("tokenizer.ggml.bos_token_id", 6);
    EXPECT_EQ(fromGgufError(bos), "m.gguf: tokenizer.ggml.bos_token_id is 6, outside the vocabulary of 6 tokens");

    auto eos = tokenizerGguf("eos_token_id");
    eos.addInt32("tokenizer.ggml.eos_token_id", -7);
    EXPECT_EQ(fromGgufError(eos), "m.gguf: tokenizer.ggml.eos_token_id is -7, outside the vocabulary of 6 tokens");

    auto unk = tokenizerGguf("unknown_token_id");
    unk.addString("tokenizer.ggml.unknown_token_id", "0");
    EXPECT_EQ(fromGgufError(unk), "m.gguf: tokenizer.ggml.unknown_token_id is a string, not an integer token id");

    // 0xFFFFFFFF is "none"; without a BOS, add_bos_token must be false.
    auto none = tokenizerGguf("bos_token_id");
    none.addUInt32("tokenizer.ggml.bos_token_id", 0xFFFFFFFFu);
    EXPECT_EQ(fromGgufError(none),
              "m.gguf: tokenizer.ggml.add_bos_token is true but there is no tokenizer.ggml.bos_token_id");
    none.addBool("tokenizer.ggml.add_bos_token", false);
    GgufFile file(none.build(), "none.gguf");
    auto t = LlamaTokenizer::fromGguf(file);
    EXPECT_EQ(t->bosId(), -1);
    EXPECT_EQ(t->encode("a", true), (Ids{5}));
}

TEST(LlamaTokenizer, FromGgufRejectsMisspelledByteTokens) {
    auto b = tokenizerGguf("token_type");
    b.addInt32Array("tokenizer.ggml.token_type", {2, 3, 3, 1, 6, 1});
    EXPECT_EQ(fromGgufError(b), "m.gguf: byte token 4 is 'a'; byte tokens must be spelled <0xNN>");
}

// ----------------------------------------------------------- stories260K.gguf

class Stories260KTokenizer : public ::testing::Test {
protected:
    void SetUp() override {
        const std::string model = KVLENS_SHARED_DIR "/models/stories260K.gguf";
        const std::string reference = KVLENS_SHARED_DIR "/reference/stories260K_greedy_once_upon_a_time.json";
        if (!std::ifstream(model).good()) GTEST_SKIP() << model << " is absent";
        std::ifstream in(reference);
        if (!in.good()) GTEST_SKIP() << reference << " is absent";
        ref_ = nlohmann::json::parse(in);
        file_ = std::make_unique<GgufFile>(model);
        tok_ = LlamaTokenizer::fromGguf(*file_);
    }

    nlohmann::json ref_;
    std::unique_ptr<GgufFile> file_;
    std::unique_ptr<LlamaTokenizer> tok_;
};

TEST_F(Stories260KTokenizer, VocabularyMetadata) {
    EXPECT_EQ(tok_->vocabSize(), 512);
    EXPECT_EQ(tok_->bosId(), 1);
    EXPECT_EQ(tok_->eosId(), 2);
    EXPECT_EQ(tok_->unkId(), 0);
    EXPECT_TRUE(tok_->addBosByDefault());
    EXPECT_TRUE(tok_->addSpacePrefix());
}

TEST_F(Stories260KTokenizer, EncodesTheReferencePrompt) {
    const auto expected = ref_.at("prompt_token_ids").get<Ids>();
    EXPECT_EQ(expected, (Ids{1, 403, 407, 261, 378}));
    const Ids ids = tok_->encode(ref_.at("prompt").get<std::string>(), tok_->addBosByDefault());
    EXPECT_EQ(ids, expected);
    const auto pieces = ref_.at("prompt_token_pieces").get<std::vector<std::string>>();
    ASSERT_EQ(pieces.size(), ids.size());
    for (size_t i = 0; i < ids.size(); ++i) EXPECT_EQ(tok_->piece(ids[i]), pieces[i]) << "token " << i;
}

TEST_F(Stories260KTokenizer, PiecesOfTheGeneratedTokensMatchTheReference) {
    const auto ids = ref_.at("generated_token_ids").get<Ids>();
    const auto pieces = ref_.at("generated_token_pieces").get<std::vector<std::string>>();
    ASSERT_EQ(ids.size(), pieces.size());
    size_t byteTokens = 0;
    for (size_t i = 0; i < ids.size(); ++i) {
        // The reference pieces are llama.cpp's token_to_piece: raw bytes for
        // byte tokens, which piece() instead names <0xNN> (Tokenizer.h).
        EXPECT_EQ(tok_->tokenBytes(ids[i], -1), pieces[i]) << "token " << i << " id " << ids[i];
        if (tok_->tokenType(ids[i]) == LlamaTokenType::Byte) {
            ++byteTokens;
            char name[8];
            std::snprintf(name, sizeof name, "<0x%02X>", static_cast<unsigned char>(pieces[i].at(0)));
            EXPECT_EQ(tok_->piece(ids[i]), name) << "token " << i;
        } else {
            EXPECT_EQ(tok_->piece(ids[i]), pieces[i]) << "token " << i << " id " << ids[i];
        }
    }
    EXPECT_GT(byteTokens, 0u);  // the newlines (<0x0A>)
}

TEST_F(Stories260KTokenizer, DecodesTheReferenceGeneration) {
    const auto ids = ref_.at("generated_token_ids").get<Ids>();
    const std::string text = ref_.at("generated_text").get<std::string>();
    EXPECT_EQ(tok_->decode(ids), text);

    std::string streamed;
    int32_t previous = -1;
    for (int32_t id : ids) {
        streamed += tok_->tokenBytes(id, previous);
        previous = id;
    }
    EXPECT_EQ(streamed, text);

    Ids all = ref_.at("prompt_token_ids").get<Ids>();
    all.insert(all.end(), ids.begin(), ids.end());
    EXPECT_EQ(tok_->decode(all), ref_.at("prompt").get<std::string>() + text);
}

TEST_F(Stories260KTokenizer, RoundTripsVariedText) {
    const std::vector<std::string> texts = {
        "Once upon a time",
        "Hello world",
        "Lily's mom said, \"Let's go to the park.\"\nThey went.\n\nThe end.",
        "Digits 0123456789, 3.14159 and 1e-9; 100% (approx.) [ok] {yes} <no> a+b=c",
        "naïve — 東京 🙂",
        "  leading spaces, trailing spaces  ",
        "\ttabs\tand\r\nCRLF",
        "x",
        " ",
        "ÜBER façade café Ελληνικά кириллица",
        ref_.at("generated_text").get<std::string>(),
    };
    for (const std::string& text : texts) {
        const Ids ids = tok_->encode(text, true);
        ASSERT_FALSE(ids.empty());
        EXPECT_EQ(ids.front(), 1);
        EXPECT_EQ(tok_->decode(ids), text);
        for (int32_t id : ids) {
            ASSERT_GE(id, 0);
            ASSERT_LT(id, tok_->vocabSize());
        }
    }
    // Non-ASCII falls back to bytes: 東 = E6 9D B1.
    const Ids tokyo = tok_->encode("東", false);
    EXPECT_EQ(tokyo.size(), 4u);
    EXPECT_EQ(tok_->piece(tokyo[1]), "<0xE6>");
}

}  // namespace
}  // namespace kvlens
