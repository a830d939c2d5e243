// tokenizer.json's SentencePiece-style BPE: added tokens, normalizer, pre-tokenizer, merges by rank.
#include "engine/tokenizer/SentencePieceBpe.h"

#include <algorithm>
#include <cctype>
#include <climits>
#include <cstdio>
#include <queue>

#include "core/Error.h"
#include "engine/tokenizer/SpecialTokenSplit.h"
#include "engine/tokenizer/SpecialTokens.h"
#include "engine/tokenizer/Utf8.h"

namespace kvlens {

namespace {

using Vocab = SentencePieceBpeVocab;

std::string replaceAll(std::string_view s, std::string_view from, std::string_view to) {
    if (from.empty()) return std::string(s);
    std::string out;
    out.reserve(s.size());
    for (size_t pos = 0;;) {
        const size_t hit = s.find(from, pos);
        if (hit == std::string_view::npos) {
            out.append(s.substr(pos));
            return out;
        }
        out.append(s.substr(pos, hit - pos));
        out.append(to);
        pos = hit + from.size();
    }
}

int hexDigit(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;
}

// The byte of a token spelled <0xNN>, or -1.
int byteOfToken(const std::string& t) {
    if (t.size() != 6 || t.compare(0, 3, "<0x") != 0 || t[5] != '>') return -1;
    const int hi = hexDigit(t[3]), lo = hexDigit(t[4]);
    return hi < 0 || lo < 0 ? -1 : hi * 16 + lo;
}

// `text` cut at each occurrence of `delimiter`, the pieces joined as Hugging Face's
// SplitDelimiterBehavior says; empty pieces dropped. Each piece: (offset, length).
std::vector<std::pair<size_t, size_t>> splitAt(std::string_view text, std::string_view delimiter,
                                               Vocab::SplitBehavior behavior) {
    struct Segment {
        size_t start, end;
        bool match;
    };
    std::vector<Segment> segments;
    size_t pos = 0;
    if (!delimiter.empty()) {
        for (size_t hit; (hit = text.find(delimiter, pos)) != std::string_view::npos; pos = hit + delimiter.size()) {
            if (hit > pos) segments.push_back({pos, hit, false});
            segments.push_back({hit, hit + delimiter.size(), true});
        }
    }
    if (pos < text.size()) segments.push_back({pos, text.size(), false});
    std::vector<Segment> joined;
    using B = Vocab::SplitBehavior;
    bool previousMatch = false;
    switch (behavior) {
        case B::Removed:
            for (const Segment& s : segments)
                if (!s.match) joined.push_back(s);
            break;
        case B::Isolated:
            joined = segments;
            break;
        case B::MergedWithPrevious:
            for (const Segment& s : segments) {
                if (s.match && !previousMatch && !joined.empty()) {
                    joined.back().end = s.end;
                } else {
                    joined.push_back(s);
                }
                previousMatch = s.match;
            }
            break;
        case B::MergedWithNext:
            for (auto it = segments.rbegin(); it != segments.rend(); ++it) {
                if (it->match && !previousMatch && !joined.empty()) {
                    joined.back().start = it->start;
                } else {
                    joined.push_back(*it);
                }
                previousMatch = it->match;
            }
            std::reverse(joined.begin(), joined.end());
            break;
        case B::Contiguous:
            for (const Segment& s : segments) {
                if (s.match == previousMatch && !joined.empty()) {
                    joined.back().end = s.end;
                } else {
                    joined.push_back(s);
                }
                previousMatch = s.match;
            }
            break;
    }
    std::vector<std::pair<size_t, size_t>> out;
    for (const Segment& s : joined)
        if (s.end > s.start) out.emplace_back(s.start, s.end - s.start);
    return out;
}

uint64_t pairKey(int32_t left, int32_t right) { return (uint64_t(uint32_t(left)) << 32) | uint32_t(right); }

struct Symbol {
    int32_t id;
    int prev, next;
    bool alive;
};

struct Merge {
    int32_t rank, pos, newId;
};

// Lowest rank first; among equal ranks the leftmost pair first.
struct MergeOrder {
    bool operator()(const Merge& a, const Merge& b) const {
        return a.rank > b.rank || (a.rank == b.rank && a.pos > b.pos);
    }
};

}  // namespace

SentencePieceBpe::SentencePieceBpe(SentencePieceBpeVocab vocab, const std::string& name)
    : vocab_(std::move(vocab)), name_(name) {
    const size_t n = vocab_.tokens.size();
    if (n == 0) throw Error(name_ + ": the vocabulary has no tokens");
    if (n > size_t(INT32_MAX)) throw Error(name_ + ": the vocabulary has too many tokens");
    if (vocab_.types.size() != n) {
        throw Error(name_ + ": " + std::to_string(vocab_.types.size()) + " token types for " + std::to_string(n) +
                    " tokens");
    }
    for (const auto& [id, what] : {std::pair<int32_t, const char*>{vocab_.bosId, "BOS"},
                                   {vocab_.eosId, "EOS"},
                                   {vocab_.unkId, "unknown"}}) {
        if (id < -1 || id >= int32_t(n)) {
            throw Error(name_ + ": " + what + " token id " + std::to_string(id) + " is outside the vocabulary of " +
                        std::to_string(n) + " tokens");
        }
    }
    if (vocab_.addBos && vocab_.bosId < 0) throw Error(name_ + ": BOS is to be added but the vocabulary has no BOS token");

    index_.reserve(n * 2);
    bytes_.resize(n);
    byteToId_.fill(-1);
    for (size_t i = 0; i < n; ++i) {
        const std::string& text = vocab_.tokens[i];
        index_.emplace(std::string_view(text), int32_t(i));  // the first of a repeated text wins
        switch (vocab_.types[i]) {
            case LlamaTokenType::Normal:
                bytes_[i] = vocab_.decodeMarker ? replaceAll(text, "\xE2\x96\x81", " ") : text;
                break;
            case LlamaTokenType::UserDefined:
                bytes_[i] = text;
                break;
            case LlamaTokenType::Byte: {
                const int b = byteOfToken(text);
                if (b < 0) throw Error(name_ + ": byte token " + std::to_string(i) + " is not spelled <0xNN>");
                bytes_[i] = std::string(1, char(b));
                if (byteToId_[size_t(b)] < 0) byteToId_[size_t(b)] = int32_t(i);
                break;
            }
            default:  // control, unknown, unused: no text
                break;
        }
    }
    merges_.reserve(vocab_.merges.size() * 2);
    for (size_t r = 0; r < vocab_.merges.size(); ++r) {
        const auto& [a, b] = vocab_.merges[r];
        const int32_t left = tokenId(a), right = tokenId(b), merged = tokenId(a + b);
        if (left < 0 || right < 0 || merged < 0) {
            throw Error(name_ + ": merge " + std::to_string(r) + " needs a token the vocabulary does not have");
        }
        merges_[pairKey(left, right)] = {int32_t(r), merged};  // a repeated merge takes its last rank
    }

    lstrip_.assign(n, false);
    rstrip_.assign(n, false);
    // A normalized added token is matched in the normalized text by its content normalized
    // too, as Hugging Face's added vocabulary does (with Prepend, "<tool>" is "▁<tool>").
    normalizedTexts_ = vocab_.tokens;
    for (const auto& [id, a] : vocab_.added) {
        if (id < 0 || size_t(id) >= n) throw Error(name_ + ": added token id " + std::to_string(id) + " is outside the vocabulary");
        const bool control = vocab_.types[size_t(id)] == LlamaTokenType::Control;
        (a.normalized ? normAddedControl_ : rawAddedControl_).push_back(id);
        if (!control) (a.normalized ? normAdded_ : rawAdded_).push_back(id);
        if (a.normalized) normalizedTexts_[size_t(id)] = normalize(vocab_.tokens[size_t(id)]);
        lstrip_[size_t(id)] = a.lstrip;
        rstrip_[size_t(id)] = a.rstrip;
    }
    for (std::vector<int32_t>* list : {&rawAdded_, &rawAddedControl_, &normAdded_, &normAddedControl_}) {
        std::stable_sort(list->begin(), list->end(), [&](int32_t x, int32_t y) {
            return normalizedTexts_[size_t(x)].size() > normalizedTexts_[size_t(y)].size();
        });
    }
    eog_ = SpecialTokens::endOfGeneration(vocab_.tokens, vocab_.types, {vocab_.eosId});
    for (int32_t id : vocab_.endIds) {
        if (id < 0 || size_t(id) >= n) {
            throw Error(name_ + ": end-of-generation id " + std::to_string(id) + " is outside the vocabulary");
        }
        if (std::find(eog_.begin(), eog_.end(), id) == eog_.end()) eog_.push_back(id);
    }
    std::sort(eog_.begin(), eog_.end());
}

int32_t SentencePieceBpe::tokenId(std::string_view text) const {
    const auto it = index_.find(text);
    return it == index_.end() ? -1 : it->second;
}

void SentencePieceBpe::checkId(int32_t id) const {
    if (id < 0 || id >= vocabSize()) {
        throw Error(name_ + ": token id " + std::to_string(id) + " is outside the vocabulary of " +
                    std::to_string(vocabSize()) + " tokens");
    }
}

std::string SentencePieceBpe::normalize(std::string_view fragment) const {
    std::string s(fragment);
    for (const Vocab::NormalizerStep& step : vocab_.normalizer) {
        switch (step.kind) {
            case Vocab::NormalizerStep::Kind::Prepend:
                if (!s.empty()) s = step.text + s;
                break;
            case Vocab::NormalizerStep::Kind::Replace:
                s = replaceAll(s, step.text, step.with);
                break;
            case Vocab::NormalizerStep::Kind::Nfc:
                s = Utf8::nfc(s);
                break;
        }
    }
    return s;
}

std::vector<SentencePieceBpe::Word> SentencePieceBpe::preTokenize(Word fragment) const {
    std::vector<Word> words{std::move(fragment)};
    for (const Vocab::PreTokenizerStep& step : vocab_.preTokenizer) {
        std::vector<Word> next;
        for (Word& w : words) {
            Vocab::SplitBehavior behavior = step.behavior;
            if (w.text.empty()) continue;  // Hugging Face drops empty splits (and prepends nothing to them)
            if (step.kind == Vocab::PreTokenizerStep::Kind::Metaspace) {
                w.text = replaceAll(w.text, " ", step.text);
                const bool needsPrefix = w.text.compare(0, step.text.size(), step.text) != 0;
                if (needsPrefix && (step.prepend == Vocab::Prepend::Always ||
                                    (step.prepend == Vocab::Prepend::First && w.atStart))) {
                    w.text = step.text + w.text;
                }
                if (!step.split) {
                    next.push_back(std::move(w));
                    continue;
                }
                behavior = Vocab::SplitBehavior::MergedWithNext;
            }
            for (const auto& [offset, length] : splitAt(w.text, step.text, behavior)) {
                next.push_back(Word{w.text.substr(offset, length), w.atStart && offset == 0});
            }
        }
        words.swap(next);
    }
    return words;
}

void SentencePieceBpe::encodeWord(const std::string& word, std::vector<int32_t>& out) const {
    if (word.empty()) return;
    if (vocab_.ignoreMerges) {
        if (const int32_t whole = tokenId(word); whole >= 0) {
            out.push_back(whole);
            return;
        }
    }
    std::vector<Symbol> symbols;
    symbols.reserve(word.size());
    bool pendingUnk = false;
    auto add = [&](int32_t id) {
        const int at = int(symbols.size());
        if (at > 0) symbols.back().next = at;
        symbols.push_back(Symbol{id, at - 1, -1, true});
    };
    auto flushUnk = [&] {
        if (pendingUnk) add(vocab_.unkId);
        pendingUnk = false;
    };
    uint32_t cp = 0;
    for (size_t at = 0; at < word.size();) {
        const size_t len = std::max<size_t>(1, Utf8::decode(word, at, cp));
        const std::string_view ch = std::string_view(word).substr(at, len);
        at += len;
        if (const int32_t id = tokenId(ch); id >= 0) {
            flushUnk();
            add(id);
            continue;
        }
        if (vocab_.byteFallback &&
            std::all_of(ch.begin(), ch.end(), [&](char c) { return byteToId_[size_t(uint8_t(c))] >= 0; })) {
            flushUnk();
            for (char c : ch) add(byteToId_[size_t(uint8_t(c))]);
            continue;
        }
        if (vocab_.unkId < 0) {
            char buf[8];
            std::snprintf(buf, sizeof buf, "<0x%02X>", unsigned(uint8_t(ch[0])));
            throw Error(name_ + ": cannot encode the character starting with byte " + buf +
                        ": the vocabulary has neither a byte token for it nor an unknown token");
        }
        if (pendingUnk && vocab_.fuseUnk) continue;
        flushUnk();
        pendingUnk = true;
    }
    flushUnk();

    std::priority_queue<Merge, std::vector<Merge>, MergeOrder> queue;
    auto tryAdd = [&](int left) {
        if (left < 0 || symbols[size_t(left)].next < 0) return;
        const auto it = merges_.find(pairKey(symbols[size_t(left)].id, symbols[size_t(symbols[size_t(left)].next)].id));
        if (it != merges_.end()) queue.push(Merge{it->second.first, left, it->second.second});
    };
    for (int i = 0; i + 1 < int(symbols.size()); ++i) tryAdd(i);
    while (!queue.empty()) {
        const Merge m = queue.top();
        queue.pop();
        Symbol& left = symbols[size_t(m.pos)];
        if (!left.alive || left.next < 0) continue;
        Symbol& right = symbols[size_t(left.next)];
        // Stale: the pair at this position is no longer the one queued.
        const auto it = merges_.find(pairKey(left.id, right.id));
        if (it == merges_.end() || it->second.second != m.newId) continue;
        left.id = m.newId;
        right.alive = false;
        left.next = right.next;
        if (left.next >= 0) symbols[size_t(left.next)].prev = m.pos;
        tryAdd(left.prev);
        tryAdd(m.pos);
    }
    for (const Symbol& s : symbols)
        if (s.alive) out.push_back(s.id);
}

void SentencePieceBpe::encodeFragment(std::string_view fragment, bool atStart, bool parseSpecial,
                                      std::vector<int32_t>& out) const {
    const std::string normalized = normalize(fragment);
    const std::vector<int32_t>& added = parseSpecial ? normAddedControl_ : normAdded_;
    for (const SpecialTokenSplit::Fragment& f :
         SpecialTokenSplit::split(normalized, added, normalizedTexts_, rstrip_, lstrip_)) {
        if (f.token >= 0) {
            out.push_back(f.token);
            continue;
        }
        for (const Word& w : preTokenize(Word{normalized.substr(f.offset, f.length), atStart && f.offset == 0})) {
            encodeWord(w.text, out);
        }
    }
}

std::vector<int32_t> SentencePieceBpe::encode(const std::string& text, bool addBos, bool parseSpecial) const {
    const size_t bad = Utf8::firstInvalid(text);
    if (bad != std::string::npos) {
        char buf[16];
        std::snprintf(buf, sizeof buf, "0x%02X", unsigned(static_cast<unsigned char>(text[bad])));
        throw Error("the text is not valid UTF-8 (byte " + std::to_string(bad) + " is " + buf +
                    "); tokenizer.json vocabularies read UTF-8 text");
    }
    std::vector<int32_t> out;
    if (addBos && vocab_.bosId >= 0) out.push_back(vocab_.bosId);
    const std::vector<int32_t>& added = parseSpecial ? rawAddedControl_ : rawAdded_;
    for (const SpecialTokenSplit::Fragment& f : SpecialTokenSplit::split(text, added, vocab_.tokens, rstrip_, lstrip_)) {
        if (f.token >= 0) {
            out.push_back(f.token);
        } else {
            encodeFragment(std::string_view(text).substr(f.offset, f.length), f.offset == 0, parseSpecial, out);
        }
    }
    return out;
}

std::string SentencePieceBpe::tokenBytes(int32_t id, int32_t previous) const {
    checkId(id);
    const std::string& b = bytes_[size_t(id)];
    // The prefix the normalizer adds is no part of the text after BOS (as for SentencePiece's dummy prefix).
    if (vocab_.stripLeading > 0 && vocab_.bosId >= 0 && previous == vocab_.bosId) {
        size_t k = 0;
        while (k < b.size() && k < size_t(vocab_.stripLeading) && b[k] == ' ') ++k;
        return b.substr(k);
    }
    return b;
}

std::string SentencePieceBpe::piece(int32_t id) const {
    checkId(id);
    if (vocab_.types[size_t(id)] == LlamaTokenType::Normal) return bytes_[size_t(id)];
    return vocab_.tokens[size_t(id)];
}

}  // namespace kvlens
