// tokenizer.json read the way Hugging Face runs it, on small files written here:
// both merge spellings, added tokens (special: control; others: cut out of every
// text), NFC, steps after ByteLevel on the byte-level spelling, BOS from the
// post_processor or tokenizer_config.json, padding to config.json's vocab_size;
// and every field that KV Lens does not run refused in one line naming it. Then
// tokenizer.model through the SentencePiece library, and a broken one.
#include <gtest/gtest.h>

#include <functional>
#include <nlohmann/json.hpp>
#include <string>

#include "core/Error.h"
#include "support/OneLineError.h"
#include "engine/hf/HfTokenizerJson.h"
#include "engine/tokenizer/ByteLevel.h"
#include "engine/tokenizer/PreTokenizer.h"
#include "engine/tokenizer/SentencePieceTokenizer.h"

namespace kvlens {
namespace {

using json = nlohmann::json;

using test::errorOf;

// The 256 byte-level characters (ids 0..255 by byte value), then merged tokens.
json baseVocab(std::vector<std::string> extra) {
    json vocab = json::object();
    for (int b = 0; b < 256; ++b) vocab[ByteLevel::encode(std::string(1, char(b)))] = b;
    int id = 256;
    for (const std::string& t : extra) vocab[t] = id++;
    return vocab;
}

json file(json preTokenizer) {
    return {{"added_tokens", json::array({{{"id", 300}, {"content", "<|end|>"}, {"special", true}},
                                          {{"id", 301}, {"content", "<tool>"}, {"special", false}}})},
            {"normalizer", nullptr},
            {"pre_tokenizer", preTokenizer},
            {"post_processor", nullptr},
            {"model",
             {{"type", "BPE"},
              {"vocab", baseVocab({"Ġt", "he", "Ġthe", "ca", "Ġca"})},
              {"merges", json::array({"Ġ t", json::array({"h", "e"}), "Ġt he", "c a", "Ġ ca"})}}}};
}

json gpt2Pre() { return {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"use_regex", true}}; }

std::unique_ptr<BpeTokenizer> parse(const json& j, HfTokenizerJson::Extras extras = {}) {
    return HfTokenizerJson::parse(j.dump(), "t/tokenizer.json", extras);
}

TEST(HfTokenizerJson, MergesAddedTokensAndDecode) {
    const auto t = parse(file(gpt2Pre()));
    EXPECT_EQ(t->vocabSize(), 302);
    // " the" merges to Ġthe (258); "<tool>" is cut out whole; "<|end|>" only with --special.
    const std::vector<int32_t> ids = t->encode("a the<tool> ca", false);
    EXPECT_EQ(ids, (std::vector<int32_t>{'a', 258, 301, 260}));
    EXPECT_EQ(t->decode(ids), "a the<tool> ca");
    EXPECT_EQ(t->encode("<|end|>", false, true), (std::vector<int32_t>{300}));
    EXPECT_NE(t->encode("<|end|>", false, false), (std::vector<int32_t>{300}));
    EXPECT_FALSE(t->addBosByDefault());
}

TEST(HfTokenizerJson, NfcComposesBeforeSplitting) {
    json j = file(gpt2Pre());
    const std::string composed = "caf\xc3\xa9", decomposed = "cafe\xcc\x81";
    const auto plain = parse(j);
    EXPECT_NE(plain->encode(composed, false), plain->encode(decomposed, false));
    j["normalizer"] = {{"type", "NFC"}};
    const auto nfc = parse(j);
    EXPECT_EQ(nfc->encode(composed, false), nfc->encode(decomposed, false));
    j["normalizer"] = {{"type", "Sequence"}, {"normalizers", json::array({{{"type", "NFC"}}})}};
    EXPECT_EQ(parse(j)->encode(decomposed, false), nfc->encode(composed, false));
}

TEST(HfTokenizerJson, StepsAfterByteLevelSeeTheByteLevelSpelling) {
    // Digits after ByteLevel: " ½" is spelled "ĠÂ½" and '½' (U+00BD) is a number
    // there, so the piece splits after 'Â'; before ByteLevel it splits after ' '.
    json after = file({{"type", "Sequence"},
                       {"pretokenizers", json::array({gpt2Pre(), {{"type", "Digits"}, {"individual_digits", false}}})}});
    json before = file({{"type", "Sequence"},
                        {"pretokenizers", json::array({{{"type", "Digits"}, {"individual_digits", false}}, gpt2Pre()})}});
    const auto a = parse(after), b = parse(before);
    const std::vector<std::string_view> pa = a->preTokenizer().split(" \xc2\xbd"), pb = b->preTokenizer().split(" \xc2\xbd");
    ASSERT_EQ(pa.size(), 2u);
    EXPECT_EQ(pa[0], " \xc2");
    EXPECT_EQ(pa[1], "\xbd");
    ASSERT_EQ(pb.size(), 2u);
    EXPECT_EQ(pb[0], " ");
    EXPECT_EQ(pb[1], "\xc2\xbd");
}

TEST(HfTokenizerJson, BosEosAndPadding) {
    json j = file(gpt2Pre());
    j["post_processor"] = {{"type", "TemplateProcessing"},
                           {"single", json::array({{{"SpecialToken", {{"id", "<|end|>"}, {"type_id", 0}}}},
                                                   {{"Sequence", {{"id", "A"}, {"type_id", 0}}}}})}};
    HfTokenizerJson::Extras e;
    e.vocabSize = 320;
    e.endIds = {300, 301};
    auto t = parse(j, e);
    EXPECT_TRUE(t->addBosByDefault());
    EXPECT_EQ(t->bosId(), 300);
    EXPECT_EQ(t->eosId(), 300);
    EXPECT_EQ(t->vocabSize(), 320);
    EXPECT_EQ(t->piece(310), "[PAD310]");
    EXPECT_EQ(t->encode("a", true), (std::vector<int32_t>{300, 'a'}));
    e.addBos = 0;
    e.bosToken = "<|end|>";
    e.eosToken = "<tool>";
    t = parse(j, e);
    EXPECT_FALSE(t->addBosByDefault());
    EXPECT_EQ(t->eosId(), 301);
    const std::vector<int32_t> eog = t->endOfGeneration();
    EXPECT_NE(std::find(eog.begin(), eog.end(), 300), eog.end());
    e.eosToken = "<missing>";
    EXPECT_EQ(errorOf([&] { parse(j, e); }),
              "t/tokenizer.json: tokenizer_config.json's eos_token '<missing>' is not in the vocabulary");
    e.eosToken.clear();
    e.endIds = {999};
    EXPECT_EQ(errorOf([&] { parse(j, e); }),
              "t/tokenizer.json: EOS id 999 (generation_config.json / config.json) is outside the vocabulary of 320");
}

TEST(HfTokenizerJson, WhatKvLensDoesNotRunIsOneLineNamingTheField) {
    auto err = [](const std::function<void(json&)>& edit) {
        json j = file(gpt2Pre());
        edit(j);
        return errorOf([&] { parse(j); });
    };
    EXPECT_EQ(errorOf([] { HfTokenizerJson::parse("{", "t/tokenizer.json", {}); }).rfind("t/tokenizer.json: not valid JSON: ", 0), 0u);
    EXPECT_EQ(err([](json& j) { j.erase("model"); }), "t/tokenizer.json: model is missing");
    EXPECT_EQ(err([](json& j) { j["model"]["type"] = "Unigram"; }),
              "t/tokenizer.json: model.type is 'Unigram'; KV Lens reads BPE tokenizer.json files (a Unigram model "
              "through its tokenizer.model)");
    EXPECT_EQ(err([](json& j) { j["model"]["byte_fallback"] = true; }),
              "t/tokenizer.json: model.byte_fallback is true: a SentencePiece-style BPE, not byte-level");
    EXPECT_EQ(err([](json& j) { j["model"]["dropout"] = 0.1; }), "t/tokenizer.json: model.dropout is set; BPE dropout is not supported");
    EXPECT_EQ(err([](json& j) { j["model"]["vocab"]["dup"] = 256; }),
              "t/tokenizer.json: model.vocab gives id 256 to both 'dup' and '\xc4\xa0t'");
    EXPECT_EQ(err([](json& j) { j["model"]["vocab"]["big"] = 1 << 30; }),
              "t/tokenizer.json: model.vocab entry 'big' is not a token id below 4194304: 1073741824");
    EXPECT_EQ(err([](json& j) { j["model"]["merges"][1] = 7; }),
              "t/tokenizer.json: model.merges[1] is neither \"a b\" nor [\"a\", \"b\"]");
    // A merge into (or of) a token the vocabulary lacks, and an empty vocabulary, are
    // refused as Hugging Face's loader refuses them: they were taken and changed how words
    // split, or tokenized every text to BOS alone.
    EXPECT_EQ(err([](json& j) { j["model"]["merges"].push_back("Ġth e"); }),
              "t/tokenizer.json: model.merges[5] ('\xc4\xa0th' + 'e') needs '\xc4\xa0th', which is not in model.vocab");
    EXPECT_EQ(err([](json& j) { j["model"]["merges"].push_back("t h"); }),
              "t/tokenizer.json: model.merges[5] ('t' + 'h') needs 'th', which is not in model.vocab");
    EXPECT_EQ(err([](json& j) { j["model"]["merges"].push_back(json::array({"c", "a", "t"})); }),
              "t/tokenizer.json: model.merges[5] is neither \"a b\" nor [\"a\", \"b\"]");
    EXPECT_EQ(err([](json& j) { j["model"]["merges"].push_back("c a t"); }),
              "t/tokenizer.json: model.merges[5] 'c a t' is not two tokens parted by one space");
    EXPECT_EQ(err([](json& j) { j["model"]["vocab"] = json::object(); }), "t/tokenizer.json: model.vocab is empty");
    EXPECT_EQ(err([](json& j) { j["added_tokens"][0].erase("content"); }), "t/tokenizer.json: added_tokens[0] has no id and content");
    EXPECT_EQ(err([](json& j) { j["normalizer"] = {{"type", "Lowercase"}}; }),
              "t/tokenizer.json: normalizer has type 'Lowercase', which KV Lens does not apply (NFC is supported)");
    EXPECT_EQ(err([](json& j) { j["pre_tokenizer"] = {{"type", "Whitespace"}}; }),
              "t/tokenizer.json: pre_tokenizer has type 'Whitespace', which KV Lens does not run (Split, ByteLevel, "
              "Digits, Punctuation, Sequence)");
    EXPECT_EQ(err([](json& j) { j["pre_tokenizer"] = {{"type", "Metaspace"}}; }),
              "t/tokenizer.json: pre_tokenizer is Metaspace: a SentencePiece-style tokenizer, not byte-level");
    EXPECT_EQ(err([](json& j) {
                  j["pre_tokenizer"] = {{"type", "Sequence"},
                                        {"pretokenizers", json::array({{{"type", "Split"},
                                                                        {"pattern", {{"Regex", "\\s+"}}},
                                                                        {"behavior", "MergedWithPrevious"}}})}};
              }),
              "t/tokenizer.json: pre_tokenizer.pretokenizers[0].behavior is 'MergedWithPrevious'; KV Lens splits with Isolated only");
    EXPECT_EQ(err([](json& j) { j["pre_tokenizer"] = {{"type", "ByteLevel"}, {"add_prefix_space", true}}; }),
              "t/tokenizer.json: pre_tokenizer.add_prefix_space is true; KV Lens does not prepend a space");
    const std::string bad = err([](json& j) {
        j["pre_tokenizer"] = {{"type", "Split"}, {"pattern", {{"Regex", "[z-a]"}}}, {"behavior", "Isolated"}};
    });
    EXPECT_EQ(bad, "t/tokenizer.json: pre_tokenizer.pattern.Regex: cannot compile the regex at offset 3: range out of order in "
                   "character class")
        << bad;
    EXPECT_EQ(err([](json& j) { j["pre_tokenizer"] = {{"type", "Split"}, {"pattern", {{"Regex", "a"}}}, {"behavior", 1}}; }),
              "t/tokenizer.json: pre_tokenizer.behavior is not a string");
    EXPECT_EQ(err([](json& j) { j["model"]["ignore_merges"] = "yes"; }), "t/tokenizer.json: model.ignore_merges is not true or false");
    EXPECT_EQ(err([](json& j) { j["added_tokens"][1]["content"] = "<|end|>\nx"; j["added_tokens"][1]["special"] = 2; }),
              "t/tokenizer.json: added_tokens[1].special is not true or false");
}

TEST(SentencePieceTokenizer, ABrokenModelIsOneLine) {
    EXPECT_EQ(errorOf([] { SentencePieceTokenizer t("not a protobuf", "m/tokenizer.model", {}); })
                  .rfind("m/tokenizer.model: not a SentencePiece model the library can load (", 0),
              0u);
    EXPECT_EQ(errorOf([] { SentencePieceTokenizer::fromFile("/nonexistent/tokenizer.model", {}); }),
              "/nonexistent/tokenizer.model: cannot open");
}

}  // namespace
}  // namespace kvlens
