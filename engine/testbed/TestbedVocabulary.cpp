#include "engine/testbed/TestbedVocabulary.h"

#include <cctype>
#include <cstdio>
#include <set>

#include "engine/eval/NeedleTask.h"

namespace kvlens {
namespace {

const std::string kMarker = "\xE2\x96\x81";  // U+2581, SentencePiece's space

bool letter(char c) { return std::isalpha(static_cast<unsigned char>(c)) != 0; }

void addWord(std::set<std::string>& pieces, const std::string& w) {
    for (size_t n = 1; n <= w.size(); ++n) {
        pieces.insert(w.substr(0, n));
        pieces.insert(kMarker + w.substr(0, n));
    }
}

}  // namespace

LlamaVocab TestbedVocabulary::build(const std::string& corpus) {
    std::set<std::string> pieces;
    for (char c = 'a'; c <= 'z'; ++c) addWord(pieces, std::string(1, c));
    for (char c = 'A'; c <= 'Z'; ++c) addWord(pieces, std::string(1, c));
    for (char c = '0'; c <= '9'; ++c) addWord(pieces, std::string(1, c));
    pieces.insert(kMarker);
    for (const char* p : {".", ",", ":", ";", "?", "!", "-", "\"", "'", "(", ")", "{", "}", "=", "/"}) {
        pieces.insert(p);
        pieces.insert(kMarker + p);
    }
    std::string word;
    for (size_t i = 0; i <= corpus.size(); ++i) {
        if (i < corpus.size() && letter(corpus[i])) {
            word += corpus[i];
            continue;
        }
        if (!word.empty()) addWord(pieces, word);
        word.clear();
    }
    LlamaVocab v;
    auto add = [&](const std::string& piece, LlamaTokenType type) {
        v.tokens.push_back(piece);
        v.scores.push_back(type == LlamaTokenType::Normal ? -static_cast<float>(v.tokens.size()) : 0.0f);
        v.types.push_back(type);
    };
    add("<unk>", LlamaTokenType::Unknown);
    add("<s>", LlamaTokenType::Control);
    add("</s>", LlamaTokenType::Control);
    for (int b = 0; b < 256; ++b) {
        char name[8];
        std::snprintf(name, sizeof name, "<0x%02X>", b);
        add(name, LlamaTokenType::Byte);
    }
    for (const std::string& p : pieces) add(p, LlamaTokenType::Normal);
    v.bosId = 1;
    v.eosId = 2;
    v.unkId = 0;
    return v;
}

LlamaVocab TestbedVocabulary::standard() { return build(needleTaskBuiltInText()); }

}  // namespace kvlens
