// A SentencePiece-style tokenizer.json read alone (no tokenizer.model), as
// Hugging Face's `tokenizers` runs it, on small files written here: merges by
// rank (not by score), byte fallback, a fused unknown token, the legacy
// Prepend normalizer against Metaspace's prepend schemes around added tokens,
// Metaspace's split and a Split's five behaviours, added tokens' lstrip and
// rstrip, decoding; and every field KV Lens does not run refused in one line
// naming it. The real vocabularies (Llama 2's and Phi-3's) are in
// VocabParityTest.
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>

#include "engine/hf/HfSentencePieceJson.h"
#include "support/OneLineError.h"

namespace kvlens {
namespace {

using json = nlohmann::json;
using test::errorOf;

const std::string kMarker = "\xE2\x96\x81";  // '▁'

// Ids: 0 <unk>, 1 <s>, 2 </s>, 3.. the pieces below, then the 256 byte tokens.
const std::vector<std::string> kPieces = {"a", "b", "c", "ab", "bc", kMarker, kMarker + "a", kMarker + "b",
                                          kMarker + kMarker, "x", "<tool>"};
int32_t id(const std::string& piece) {
    for (size_t i = 0; i < kPieces.size(); ++i)
        if (kPieces[i] == piece) return int32_t(i + 3);
    ADD_FAILURE() << "no piece " << piece;
    return -1;
}
int32_t byteId(int b) { return int32_t(3 + kPieces.size()) + b; }

json replace(const std::string& from, const std::string& to) {
    return {{"type", "Replace"}, {"pattern", {{"String", from}}}, {"content", to}};
}

// Llama 2's layout: normalizer Prepend + Replace, no pre-tokenizer, Strip decoder.
json legacyFile() {
    json vocab = {{"<unk>", 0}, {"<s>", 1}, {"</s>", 2}};
    for (size_t i = 0; i + 1 < kPieces.size(); ++i) vocab[kPieces[i]] = i + 3;
    char buf[8];
    for (int b = 0; b < 256; ++b) {
        std::snprintf(buf, sizeof buf, "<0x%02X>", b);
        vocab[buf] = byteId(b);
    }
    return {{"added_tokens", json::array({{{"id", 0}, {"content", "<unk>"}, {"special", true}, {"normalized", false}},
                                          {{"id", 1}, {"content", "<s>"}, {"special", true}, {"normalized", false}},
                                          {{"id", 2}, {"content", "</s>"}, {"special", true}, {"normalized", false}},
                                          {{"id", id("<tool>")}, {"content", "<tool>"}, {"special", false}, {"normalized", false}}})},
            {"normalizer", {{"type", "Sequence"}, {"normalizers", json::array({{{"type", "Prepend"}, {"prepend", kMarker}}, replace(" ", kMarker)})}}},
            {"pre_tokenizer", nullptr},
            {"decoder", {{"type", "Sequence"},
                         {"decoders", json::array({replace(kMarker, " "), {{"type", "ByteFallback"}}, {{"type", "Fuse"}},
                                                   {{"type", "Strip"}, {"content", " "}, {"start", 1}, {"stop", 0}}})}}},
            {"post_processor", {{"type", "TemplateProcessing"},
                                {"single", json::array({{{"SpecialToken", {{"id", "<s>"}, {"type_id", 0}}}},
                                                        {{"Sequence", {{"id", "A"}, {"type_id", 0}}}}})}}},
            {"model", {{"type", "BPE"}, {"unk_token", "<unk>"}, {"fuse_unk", true}, {"byte_fallback", true},
                       {"vocab", vocab},
                       {"merges", json::array({"b c", "a b", kMarker + " a", kMarker + " b", kMarker + " " + kMarker})}}}};
}

// The same vocabulary with Metaspace (prepend_scheme, split) in place of the normalizer.
json metaspaceFile(const std::string& scheme, bool split) {
    json j = legacyFile();
    j["normalizer"] = nullptr;
    j["pre_tokenizer"] = {{"type", "Metaspace"}, {"replacement", kMarker}, {"prepend_scheme", scheme}, {"split", split}};
    j["decoder"] = {{"type", "Metaspace"}, {"replacement", kMarker}, {"prepend_scheme", scheme}, {"split", split}};
    return j;
}

std::unique_ptr<SentencePieceBpe> parse(const json& j, HfTokenizerJson::Extras e = {}) {
    return HfSentencePieceJson::parse(j.dump(), "t/tokenizer.json", e);
}

using Ids = std::vector<int32_t>;

TEST(SentencePieceJson, MergesGoByRankNotByScore) {
    json j = legacyFile();
    // "b c" is ranked first, so "abc" is a + bc although "a b" would also merge.
    EXPECT_EQ(parse(j)->encode("abc", false), (Ids{id(kMarker + "a"), id("bc")}));
    j["model"]["merges"] = json::array({"a b", "b c"});
    EXPECT_EQ(parse(j)->encode("abc", false), (Ids{id(kMarker), id("ab"), id("c")}));
}

TEST(SentencePieceJson, ByteFallbackAndAFusedUnknown) {
    const auto t = parse(legacyFile());
    // é is no piece: its two bytes' tokens.
    EXPECT_EQ(t->encode("xé", false), (Ids{id(kMarker), id("x"), byteId(0xC3), byteId(0xA9)}));
    EXPECT_EQ(t->decode(t->encode("xé", true)), "xé");
    json j = legacyFile();
    j["model"]["byte_fallback"] = false;
    EXPECT_EQ(parse(j)->encode("xéé", false), (Ids{id(kMarker), id("x"), 0}));
    j["model"]["fuse_unk"] = false;
    EXPECT_EQ(parse(j)->encode("xéé", false), (Ids{id(kMarker), id("x"), 0, 0}));
    j["model"].erase("unk_token");
    EXPECT_EQ(errorOf([&] { parse(j)->encode("é", false); }),
              "t/tokenizer.json: cannot encode the character starting with byte <0xC3>: the vocabulary has neither a "
              "byte token for it nor an unknown token");
}

TEST(SentencePieceJson, LegacyPrependsAfterEveryAddedTokenMetaspaceFirstOnlyAtTheStart) {
    // Legacy: "▁" before the text and again after <tool>; " a" is "▁▁a" (▁ + ▁a, as Llama 2's " Hello").
    EXPECT_EQ(parse(legacyFile())->encode("a<tool>b", false), (Ids{id(kMarker + "a"), id("<tool>"), id(kMarker + "b")}));
    EXPECT_EQ(parse(legacyFile())->encode(" a", false), (Ids{id(kMarker), id(kMarker + "a")}));
    // Metaspace "first": only the text's start, and not when it starts with a space already.
    const auto first = parse(metaspaceFile("first", false));
    EXPECT_EQ(first->encode("a<tool>b", false), (Ids{id(kMarker + "a"), id("<tool>"), id("b")}));
    EXPECT_EQ(first->encode(" a", false), (Ids{id(kMarker + "a")}));
    EXPECT_EQ(first->encode("<tool>a", false), (Ids{id("<tool>"), id("a")}));
    EXPECT_EQ(parse(metaspaceFile("always", false))->encode("a<tool>b", false),
              (Ids{id(kMarker + "a"), id("<tool>"), id(kMarker + "b")}));
    EXPECT_EQ(parse(metaspaceFile("never", false))->encode("a b", false), (Ids{id("a"), id(kMarker + "b")}));
    // The older form: add_prefix_space true is "always".
    json old = metaspaceFile("always", false);
    old["pre_tokenizer"].erase("prepend_scheme");
    old["pre_tokenizer"]["add_prefix_space"] = true;
    EXPECT_EQ(parse(old)->encode("a<tool>b", false), (Ids{id(kMarker + "a"), id("<tool>"), id(kMarker + "b")}));
    old["pre_tokenizer"]["add_prefix_space"] = false;  // never
    EXPECT_EQ(parse(old)->encode("a b", false), (Ids{id("a"), id(kMarker + "b")}));
    json both = metaspaceFile("first", false);
    both["pre_tokenizer"]["add_prefix_space"] = false;
    EXPECT_EQ(errorOf([&] { parse(both); }),
              "t/tokenizer.json: pre_tokenizer.add_prefix_space is false but prepend_scheme is 'first' (Hugging Face "
              "refuses the pair)");
}

TEST(SentencePieceJson, MetaspaceSplitKeepsWordsApart) {
    // With "▁ ▁" ranked first, "a  b" as one word ▁a▁▁b is ▁a, ▁▁, b; split into the words
    // ▁a, ▁, ▁b it cannot merge the two markers.
    auto ranked = [](json j) {
        j["model"]["merges"] = json::array({kMarker + " " + kMarker, kMarker + " a", kMarker + " b", "b c", "a b"});
        return parse(j);
    };
    EXPECT_EQ(ranked(metaspaceFile("always", false))->encode("a  b", false), (Ids{id(kMarker + "a"), id(kMarker + kMarker), id("b")}));
    EXPECT_EQ(ranked(metaspaceFile("always", true))->encode("a  b", false), (Ids{id(kMarker + "a"), id(kMarker), id(kMarker + "b")}));
}

TEST(SentencePieceJson, SplitAtALiteralInEachBehaviour) {
    auto with = [](const std::string& behavior) {
        json j = legacyFile();
        j["normalizer"] = nullptr;
        j["pre_tokenizer"] = {{"type", "Split"}, {"pattern", {{"String", "b"}}}, {"behavior", behavior}, {"invert", false}};
        return parse(j)->encode("abbc", false);
    };
    EXPECT_EQ(with("Removed"), (Ids{id("a"), id("c")}));
    EXPECT_EQ(with("Isolated"), (Ids{id("a"), id("b"), id("b"), id("c")}));
    EXPECT_EQ(with("MergedWithPrevious"), (Ids{id("ab"), id("b"), id("c")}));
    EXPECT_EQ(with("MergedWithNext"), (Ids{id("a"), id("b"), id("bc")}));
    EXPECT_EQ(with("Contiguous"), (Ids{id("a"), id("b"), id("b"), id("c")}));
}

TEST(SentencePieceJson, AddedTokensStripWhitespaceAndControlTokensNeedSpecial) {
    json j = legacyFile();
    j["added_tokens"][3]["rstrip"] = true;
    j["added_tokens"][3]["lstrip"] = true;
    EXPECT_EQ(parse(j)->encode("a <tool>  b", false), (Ids{id(kMarker + "a"), id("<tool>"), id(kMarker + "b")}));
    const auto t = parse(legacyFile());
    // "</s>" is three pieces' worth of text unless --special.
    EXPECT_EQ(t->encode("a</s>", true, true), (Ids{1, id(kMarker + "a"), 2}));
    EXPECT_NE(t->encode("a</s>", false), (Ids{id(kMarker + "a"), 2}));
}

TEST(SentencePieceJson, ANormalizedAddedTokenIsMatchedByItsNormalizedContent) {
    // normalized: true (the default for a non-special token): Hugging Face normalizes the
    // content too, so under Prepend the pattern is "▁<tool>": it takes the space before it,
    // and "x<tool>" (no space) holds no such token.
    json j = legacyFile();
    j["added_tokens"][3]["normalized"] = true;
    const auto t = parse(j);
    EXPECT_EQ(t->encode("a <tool>", false), (Ids{id(kMarker + "a"), id("<tool>")}));
    const Ids glued = t->encode("x<tool>", false);
    EXPECT_EQ(std::count(glued.begin(), glued.end(), id("<tool>")), 0);
    // normalized: false matches the raw text: the space before it is a run of its own.
    EXPECT_EQ(parse(legacyFile())->encode("a <tool>", false), (Ids{id(kMarker + "a"), id(kMarker), id("<tool>")}));
}

TEST(SentencePieceJson, AnEmptyTextIsNoTokens) {
    for (const json& j : {legacyFile(), metaspaceFile("first", false), metaspaceFile("always", true)}) {
        const auto t = parse(j);
        EXPECT_EQ(t->encode("", false), Ids{});
        EXPECT_EQ(t->encode("", true), Ids{1});
        EXPECT_EQ(t->encode("<tool>", false), Ids{id("<tool>")});
    }
}

TEST(SentencePieceJson, DecodeDropsThePrefixAfterBos) {
    const auto t = parse(legacyFile());
    EXPECT_TRUE(t->addBosByDefault());
    EXPECT_EQ(t->bosId(), 1);
    const Ids ids = t->encode("a b<tool>c", true);
    EXPECT_EQ(t->decode(ids), "a b<tool> c");  // the legacy prefix after <tool> is part of the text
    EXPECT_EQ(t->piece(id(kMarker + "a")), " a");
    EXPECT_EQ(t->piece(byteId(0x41)), "<0x41>");
    HfTokenizerJson::Extras e;
    e.addBos = 0;
    e.vocabSize = 400;
    const auto padded = parse(legacyFile(), e);
    EXPECT_FALSE(padded->addBosByDefault());
    EXPECT_EQ(padded->vocabSize(), 400);
}

TEST(SentencePieceJson, WhatKvLensDoesNotRunIsOneLineNamingTheField) {
    auto err = [](const std::function<void(json&)>& edit) {
        json j = legacyFile();
        edit(j);
        return errorOf([&] { parse(j); });
    };
    EXPECT_EQ(err([](json& j) { j["model"]["type"] = "Unigram"; }),
              "t/tokenizer.json: model.type is 'Unigram'; KV Lens reads BPE tokenizer.json files (a Unigram model "
              "through its tokenizer.model)");
    EXPECT_EQ(err([](json& j) { j["model"]["dropout"] = 0.1; }), "t/tokenizer.json: model.dropout is set; BPE dropout is not supported");
    EXPECT_EQ(err([](json& j) { j["model"]["byte_fallback"] = "yes"; }), "t/tokenizer.json: model.byte_fallback is not true or false");
    EXPECT_EQ(err([](json& j) { j["model"]["unk_token"] = "<nope>"; }),
              "t/tokenizer.json: model.unk_token '<nope>' is not in the vocabulary");
    EXPECT_EQ(err([](json& j) { j["model"]["merges"].push_back("x a"); }),
              "t/tokenizer.json: model.merges[5] ('x' + 'a') needs 'xa', which is not in model.vocab");
    EXPECT_EQ(err([](json& j) { j["normalizer"]["normalizers"][1]["pattern"] = {{"Regex", " +"}}; }),
              "t/tokenizer.json: normalizer.normalizers[1].pattern is a Regex; KV Lens applies literal String patterns "
              "in SentencePiece-style tokenizers");
    EXPECT_EQ(err([](json& j) { j["normalizer"]["normalizers"][0] = {{"type", "NFKC"}}; }),
              "t/tokenizer.json: normalizer.normalizers[0] has type 'NFKC', which KV Lens does not apply (Prepend, "
              "Replace, NFC, Sequence)");
    EXPECT_EQ(err([](json& j) { j["normalizer"]["normalizers"][0].erase("prepend"); }),
              "t/tokenizer.json: normalizer.normalizers[0].prepend is missing or empty");
    EXPECT_EQ(err([](json& j) { j["normalizer"]["normalizers"][1].erase("content"); }),
              "t/tokenizer.json: normalizer.normalizers[1].content is missing or not a string");
    EXPECT_EQ(err([](json& j) { j["pre_tokenizer"] = {{"type", "Whitespace"}}; }),
              "t/tokenizer.json: pre_tokenizer has type 'Whitespace', which KV Lens does not run in a "
              "SentencePiece-style tokenizer (Metaspace, Split, Sequence)");
    EXPECT_EQ(err([](json& j) { j["pre_tokenizer"] = {{"type", "Metaspace"}, {"prepend_scheme", "sometimes"}}; }),
              "t/tokenizer.json: pre_tokenizer.prepend_scheme is 'sometimes'; one of first, always, never");
    EXPECT_EQ(err([](json& j) { j["pre_tokenizer"] = {{"type", "Metaspace"}, {"replacement", "ab"}}; }),
              "t/tokenizer.json: pre_tokenizer.replacement is not one character");
    EXPECT_EQ(err([](json& j) { j["pre_tokenizer"] = {{"type", "Metaspace"}, {"split", 1}}; }),
              "t/tokenizer.json: pre_tokenizer.split is not true or false");
    EXPECT_EQ(err([](json& j) {
                  j["pre_tokenizer"] = {{"type", "Sequence"},
                                        {"pretokenizers", json::array({{{"type", "Split"}, {"pattern", {{"String", " "}}}, {"behavior", "Odd"}}})}};
              }),
              "t/tokenizer.json: pre_tokenizer.pretokenizers[0].behavior is 'Odd'; one of Removed, Isolated, "
              "MergedWithPrevious, MergedWithNext, Contiguous");
    EXPECT_EQ(err([](json& j) { j["pre_tokenizer"] = {{"type", "Split"}, {"pattern", {{"String", " "}}}, {"behavior", "Isolated"}, {"invert", true}}; }),
              "t/tokenizer.json: pre_tokenizer.invert is true; inverted splits are not supported");
    EXPECT_EQ(err([](json& j) { j["decoder"]["decoders"][3]["start"] = -1; }),
              "t/tokenizer.json: decoder.decoders[3].start is not a count from 0 to 8");
    EXPECT_EQ(err([](json& j) { j["decoder"]["decoders"][0] = replace("x", "y"); }),
              "t/tokenizer.json: decoder.decoders[0] replaces 'x' with 'y'; KV Lens decodes '\xE2\x96\x81' as a space only");
    EXPECT_EQ(err([](json& j) { j["decoder"] = {{"type", "WordPiece"}}; }),
              "t/tokenizer.json: decoder has type 'WordPiece', which KV Lens does not decode with (Replace, "
              "ByteFallback, Fuse, Strip, Metaspace, Sequence)");
    EXPECT_EQ(err([](json& j) { j["added_tokens"][3]["single_word"] = true; }),
              "t/tokenizer.json: added_tokens[3].single_word is true; KV Lens does not match single-word tokens");
    EXPECT_EQ(err([](json& j) { j["added_tokens"][3]["rstrip"] = "no"; }), "t/tokenizer.json: added_tokens[3].rstrip is not true or false");
    EXPECT_EQ(errorOf([] { HfSentencePieceJson::parse("[1]", "t/tokenizer.json", {}); }), "t/tokenizer.json: not a JSON object");
    // A type with a line break in it stays one line; Sequences nest at most 16 deep.
    EXPECT_EQ(err([](json& j) { j["decoder"] = {{"type", "Odd\nType"}}; }),
              "t/tokenizer.json: decoder has type 'Odd\\x0aType', which KV Lens does not decode with (Replace, "
              "ByteFallback, Fuse, Strip, Metaspace, Sequence)");
    EXPECT_EQ(err([](json& j) {
                  json n = {{"type", "NFC"}};
                  for (int i = 0; i < 20; ++i) n = {{"type", "Sequence"}, {"normalizers", json::array({n})}};
                  j["normalizer"] = n;
              }).rfind("t/tokenizer.json: normalizer.normalizers[0]", 0),
              0u);
    EXPECT_NE(err([](json& j) {
                  json n = {{"type", "NFC"}};
                  for (int i = 0; i < 20; ++i) n = {{"type", "Sequence"}, {"normalizers", json::array({n})}};
                  j["normalizer"] = n;
              }).find("nests Sequences deeper than 16"),
              std::string::npos);
    HfTokenizerJson::Extras e;
    e.endIds = {5000};
    EXPECT_EQ(errorOf([&] { parse(legacyFile(), e); }),
              "t/tokenizer.json: EOS id 5000 (generation_config.json / config.json) is outside the vocabulary of 270");
}

TEST(SentencePieceJson, DescribeNamesThePipeline) {
    EXPECT_EQ(HfSentencePieceJson::describe(legacyFile().dump()),
              "SentencePiece-style BPE, normalizer Prepend, Replace, pre-tokenizer none, byte fallback");
    EXPECT_EQ(HfSentencePieceJson::describe(metaspaceFile("first", false).dump()),
              "SentencePiece-style BPE, normalizer none, pre-tokenizer Metaspace, byte fallback");
}

}  // namespace
}  // namespace kvlens
