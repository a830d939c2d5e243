// Byte-level BPE: pre-tokenize, spell in GPT-2's alphabet, merge by rank.
#include "engine/tokenizer/BpeTokenizer.h"

#include <algorithm>
#include <climits>
#include <cstdio>
#include <queue>

#include "core/Error.h"
#include "engine/gguf/GgufFile.h"
#include "engine/tokenizer/ByteLevel.h"
#include "engine/tokenizer/GgufVocabKeys.h"
#include "engine/tokenizer/PreTokenizer.h"
#include "engine/tokenizer/SpecialTokenSplit.h"
#include "engine/tokenizer/SpecialTokens.h"
#include "engine/tokenizer/Utf8.h"

namespace kvlens {

namespace {

struct Symbol {
    int prev, next;
    uint32_t start, n;
};

struct Bigram {
    int32_t rank;
    int left, right;
    uint32_t size;
};

// Lowest rank first; among equal ranks the leftmost pair first.
struct BigramOrder {
    bool operator()(const Bigram& a, const Bigram& b) const {
        return a.rank > b.rank || (a.rank == b.rank && a.left > b.left);
    }
};

}  // namespace

BpeTokenizer::BpeTokenizer(BpeVocab vocab, const std::string& name)
    : vocab_(std::move(vocab)), name_(name) {
    const size_t n = vocab_.tokens.size();
    if (n == 0) throw Error(name_ + ": the vocabulary has no tokens");
    if (n > size_t(INT32_MAX)) throw Error(name_ + ": the vocabulary has too many tokens");
    if (vocab_.types.size() != n) {
        throw Error(name_ + ": " + std::to_string(vocab_.types.size()) + " token types for " +
                    std::to_string(n) + " tokens");
    }
    for (const auto& [id, what] :
         {std::pair<int32_t, const char*>{vocab_.bosId, "BOS"}, {vocab_.eosId, "EOS"}}) {
        if (id < -1 || id >= int32_t(n)) {
            throw Error(name_ + ": " + what + " token id " + std::to_string(id) +
                        " is outside the vocabulary of " + std::to_string(n) + " tokens");
        }
    }
    try {
        pre_ = vocab_.preTokenizer ? vocab_.preTokenizer : PreTokenizer::forName(vocab_.pre);
    } catch (const Error& e) {
        throw Error(name_ + ": " + e.what());
    }
    addBos_ = vocab_.addBos < 0 ? pre_->addsBos() : vocab_.addBos != 0;
    if (addBos_ && vocab_.bosId < 0)
        throw Error(name_ + ": BOS is to be added but the vocabulary has no BOS token");

    index_.reserve(n * 2);
    bytes_.resize(n);
    for (size_t i = 0; i < n; ++i) {
        const std::string& text = vocab_.tokens[i];
        const auto type = int32_t(vocab_.types[i]);
        if (type < 0 || type > 6) {
            throw Error(name_ + ": token " + std::to_string(i) + " has type " +
                        std::to_string(type) + "; token types are 0..6");
        }
        index_[std::string_view(text)] = int32_t(i);  // later duplicates win, as in llama.cpp
        switch (vocab_.types[i]) {
            case LlamaTokenType::Normal:
            case LlamaTokenType::Undefined:
                // Spelled in the byte-level alphabet; a token that is not is its own text.
                if (!ByteLevel::decode(text, bytes_[i])) bytes_[i] = text;
                break;
            case LlamaTokenType::UserDefined:
            case LlamaTokenType::Byte:
                bytes_[i] = text;
                break;
            default:  // control, unknown, unused: no text in a decoded stream
                break;
        }
    }
    SpecialTokens::Lists lists = SpecialTokens::of(vocab_.tokens, vocab_.types, vocab_.eosId, vocab_.endIds);
    userDefined_ = std::move(lists.userDefined);
    specials_ = std::move(lists.withControl);
    eog_ = std::move(lists.endOfGeneration);
    ranks_.reserve(vocab_.merges.size() * 2);
    for (size_t r = 0; r < vocab_.merges.size(); ++r) {
        const std::string& m = vocab_.merges[r];
        const size_t space = m.find(' ', 1);
        if (space == std::string::npos || space + 1 >= m.size()) {
            throw Error(name_ + ": merge " + std::to_string(r) +
                        " is not two tokens separated by a space");
        }
        ranks_.emplace(m, int32_t(r));  // the first (lowest) rank of a repeated merge wins
    }
}

BpeTokenizer::~BpeTokenizer() = default;

std::unique_ptr<BpeTokenizer> BpeTokenizer::fromGguf(const GgufFile& file) {
    const std::string& path = file.path();
    const std::string prefix = "tokenizer.ggml.";
    for (const char* key : {"tokens", "token_type", "merges"}) {
        if (!file.has(prefix + key)) throw Error(path + ": " + prefix + key + " is missing");
    }
    BpeVocab v;
    v.tokens = file.getStringArray(prefix + "tokens");
    const size_t n = v.tokens.size();
    if (n == 0) throw Error(path + ": tokenizer.ggml.tokens is empty");
    v.types = GgufVocabKeys::tokenTypes(file, n);
    v.merges = file.getStringArray(prefix + "merges");
    v.pre = file.getStringOr(prefix + "pre", "default");
    auto readId = [&](const char* key) { return GgufVocabKeys::tokenId(file, key, n, -1); };
    v.bosId = readId("bos_token_id");
    v.eosId = readId("eos_token_id");
    v.endIds = {readId("eot_token_id"), readId("eom_token_id")};
    if (file.has(prefix + "add_bos_token"))
        v.addBos = file.getBool(prefix + "add_bos_token") ? 1 : 0;
    return std::make_unique<BpeTokenizer>(std::move(v), path);
}

int32_t BpeTokenizer::tokenId(std::string_view text) const {
    auto it = index_.find(text);
    return it == index_.end() ? -1 : it->second;
}

int32_t BpeTokenizer::rank(std::string_view left, std::string_view right) const {
    thread_local std::string key;
    key.assign(left);
    key += ' ';
    key.append(right);
    auto it = ranks_.find(key);
    return it == ranks_.end() ? -1 : it->second;
}

void BpeTokenizer::checkId(int32_t id) const {
    if (id < 0 || id >= vocabSize()) {
        throw Error(name_ + ": token id " + std::to_string(id) + " is outside the vocabulary of " +
                    std::to_string(vocabSize()) + " tokens");
    }
}

void BpeTokenizer::encodePiece(std::string_view piece, std::vector<int32_t>& out) const {
    const std::string word = ByteLevel::encode(piece);
    if (pre_->ignoreMerges()) {
        const int32_t whole = tokenId(word);
        if (whole >= 0) {
            out.push_back(whole);
            return;
        }
    }
    std::vector<Symbol> symbols;
    symbols.reserve(word.size());
    uint32_t cp = 0;
    for (size_t at = 0; at < word.size();) {
        const size_t len = std::max<size_t>(1, Utf8::decode(word, at, cp));
        const int index = int(symbols.size());
        symbols.push_back(Symbol{index - 1, at + len == word.size() ? -1 : index + 1, uint32_t(at),
                                 uint32_t(len)});
        at += len;
    }
    std::priority_queue<Bigram, std::vector<Bigram>, BigramOrder> queue;
    auto tryAdd = [&](int left, int right) {
        if (left < 0 || right < 0) return;
        const Symbol& l = symbols[size_t(left)];
        const Symbol& r = symbols[size_t(right)];
        const int32_t k = rank(std::string_view(word).substr(l.start, l.n),
                               std::string_view(word).substr(r.start, r.n));
        if (k >= 0) queue.push(Bigram{k, left, right, l.n + r.n});
    };
    for (int i = 1; i < int(symbols.size()); ++i) tryAdd(i - 1, i);
    while (!queue.empty()) {
        const Bigram b = queue.top();
        queue.pop();
        Symbol& left = symbols[size_t(b.left)];
        Symbol& right = symbols[size_t(b.right)];
        // Stale: a side was merged away, or has grown since it was queued.
        if (left.n == 0 || right.n == 0 || left.n + right.n != b.size || left.next != b.right)
            continue;
        left.n += right.n;
        right.n = 0;
        left.next = right.next;
        if (right.next >= 0) symbols[size_t(right.next)].prev = b.left;
        tryAdd(left.prev, b.left);
        tryAdd(b.left, left.next);
    }
    for (int i = 0; i != -1; i = symbols[size_t(i)].next) {
        const Symbol& s = symbols[size_t(i)];
        const std::string_view text = std::string_view(word).substr(s.start, s.n);
        const int32_t id = tokenId(text);
        if (id >= 0) {
            out.push_back(id);
            continue;
        }
        // No such token: each byte of the spelling that is one (llama.cpp's fallback).
        for (char c : text) {
            const int32_t byte = tokenId(std::string_view(&c, 1));
            if (byte >= 0) out.push_back(byte);
        }
    }
}

std::vector<int32_t> BpeTokenizer::encode(const std::string& text, bool addBos, bool parseSpecial) const {
    const size_t bad = Utf8::firstInvalid(text);
    if (bad != std::string::npos) {
        char buf[16];
        std::snprintf(buf, sizeof buf, "0x%02X", unsigned(static_cast<unsigned char>(text[bad])));
        throw Error("the text is not valid UTF-8 (byte " + std::to_string(bad) + " is " + buf +
                    "); byte-level vocabularies read UTF-8 text");
    }
    std::vector<int32_t> out;
    if (addBos && vocab_.bosId >= 0) out.push_back(vocab_.bosId);
    for (const SpecialTokenSplit::Fragment& f :
         SpecialTokenSplit::split(text, parseSpecial ? specials_ : userDefined_, vocab_.tokens)) {
        if (f.token >= 0) {
            out.push_back(f.token);
            continue;
        }
        const std::string_view fragment = std::string_view(text).substr(f.offset, f.length);
        if (vocab_.nfc) {
            const std::string composed = Utf8::nfc(fragment);
            for (std::string_view piece : pre_->split(composed)) encodePiece(piece, out);
        } else {
            for (std::string_view piece : pre_->split(fragment)) encodePiece(piece, out);
        }
    }
    return out;
}

std::string BpeTokenizer::tokenBytes(int32_t id, int32_t /*previous*/) const {
    checkId(id);
    return bytes_[size_t(id)];
}

std::string BpeTokenizer::piece(int32_t id) const {
    checkId(id);
    const LlamaTokenType t = vocab_.types[size_t(id)];
    if (t == LlamaTokenType::Normal || t == LlamaTokenType::Undefined) return bytes_[size_t(id)];
    return vocab_.tokens[size_t(id)];
}

}  // namespace kvlens
