#include "engine/tokenizer/LlamaTokenizer.h"

#include <algorithm>
#include <cctype>
#include <climits>
#include <cstdio>
#include <queue>
#include <utility>

#include "core/Error.h"
#include "engine/gguf/GgufFile.h"
#include "engine/tokenizer/GgufVocabKeys.h"
#include "engine/tokenizer/SpecialTokenSplit.h"
#include "engine/tokenizer/SpecialTokens.h"

namespace kvlens {

namespace {

const char kSpaceMarker[] = "\xE2\x96\x81";  // U+2581 '▁'
constexpr size_t kSpaceMarkerLen = 3;

std::string replaceAll(const std::string& s, std::string_view from, std::string_view to) {
    std::string out;
    out.reserve(s.size());
    size_t pos = 0;
    while (true) {
        size_t hit = s.find(from.data(), pos, from.size());
        if (hit == std::string::npos) break;
        out.append(s, pos, hit - pos);
        out.append(to.data(), to.size());
        pos = hit + from.size();
    }
    out.append(s, pos, std::string::npos);
    return out;
}

// Length of the UTF-8 character at p[0] (avail > 0 bytes readable): the length
// of a well-formed sequence, else 1 so that each stray byte stands alone.
size_t utf8CharLen(const unsigned char* p, size_t avail) {
    const unsigned c = p[0];
    size_t len;
    if (c < 0x80) return 1;
    if ((c & 0xE0) == 0xC0) {
        len = 2;
    } else if ((c & 0xF0) == 0xE0) {
        len = 3;
    } else if ((c & 0xF8) == 0xF0) {
        len = 4;
    } else {
        return 1;
    }
    if (len > avail) return 1;
    for (size_t k = 1; k < len; ++k) {
        if ((p[k] & 0xC0) != 0x80) return 1;
    }
    return len;
}

std::string byteTokenText(unsigned b) {
    char buf[8];
    std::snprintf(buf, sizeof buf, "<0x%02X>", b & 0xFFu);
    return buf;
}

int hexDigit(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;
}

// The byte of a token spelled <0xNN>, or -1.
int parseByteToken(const std::string& t) {
    if (t.size() != 6 || t.compare(0, 3, "<0x") != 0 || t[5] != '>') return -1;
    int hi = hexDigit(t[3]);
    int lo = hexDigit(t[4]);
    if (hi < 0 || lo < 0) return -1;
    return hi * 16 + lo;
}

// Printable, bounded rendering of a token for error messages.
std::string quoted(const std::string& s) {
    std::string shown = s.size() > 40 ? s.substr(0, 40) + "..." : s;
    std::string out = "'";
    for (unsigned char c : shown) {
        if (c < 0x20 || c == 0x7F) {
            char buf[8];
            std::snprintf(buf, sizeof buf, "\\x%02X", c);
            out += buf;
        } else {
            out += static_cast<char>(c);
        }
    }
    return out + "'";
}

struct Symbol {
    int prev;
    int next;
    uint32_t start;
    uint32_t n;
};

struct Bigram {
    float score;
    int left;
    int right;
    uint32_t size;
};

// Highest score first; among equal scores the leftmost pair first.
struct BigramOrder {
    bool operator()(const Bigram& a, const Bigram& b) const {
        return a.score < b.score || (a.score == b.score && a.left > b.left);
    }
};

}  // namespace

LlamaTokenizer::LlamaTokenizer(LlamaVocab vocab, const std::string& name)
    : vocab_(std::move(vocab)), name_(name) {
    const size_t n = vocab_.tokens.size();
    if (n == 0) throw Error(name_ + ": the vocabulary has no tokens");
    if (n > static_cast<size_t>(INT32_MAX)) throw Error(name_ + ": the vocabulary has too many tokens");
    if (vocab_.scores.size() != n) {
        throw Error(name_ + ": " + std::to_string(vocab_.scores.size()) + " token scores for " +
                    std::to_string(n) + " tokens");
    }
    if (vocab_.types.size() != n) {
        throw Error(name_ + ": " + std::to_string(vocab_.types.size()) + " token types for " +
                    std::to_string(n) + " tokens");
    }
    auto checkSpecial = [&](int32_t id, const char* what) {
        if (id < -1 || id >= static_cast<int32_t>(n)) {
            throw Error(name_ + ": " + what + " token id " + std::to_string(id) +
                        " is outside the vocabulary of " + std::to_string(n) + " tokens");
        }
    };
    checkSpecial(vocab_.bosId, "BOS");
    checkSpecial(vocab_.eosId, "EOS");
    checkSpecial(vocab_.unkId, "unknown");
    if (vocab_.addBos && vocab_.bosId < 0) {
        throw Error(name_ + ": add_bos_token is set but the vocabulary has no BOS token");
    }

    index_.reserve(n * 2);
    bytes_.resize(n);
    for (size_t i = 0; i < n; ++i) {
        const std::string& text = vocab_.tokens[i];
        const auto type = static_cast<int32_t>(vocab_.types[i]);
        if (type < 0 || type > 6) {
            throw Error(name_ + ": token " + std::to_string(i) + " (" + quoted(text) + ") has type " +
                        std::to_string(type) + "; token types are 0..6");
        }
        // Later duplicates win, as in llama.cpp's token_to_id.
        index_[std::string_view(text)] = static_cast<int32_t>(i);
        switch (vocab_.types[i]) {
            case LlamaTokenType::Normal:
                bytes_[i] = replaceAll(text, std::string_view(kSpaceMarker, kSpaceMarkerLen), " ");
                break;
            case LlamaTokenType::UserDefined:
                bytes_[i] = text;
                break;
            case LlamaTokenType::Byte: {
                int b = parseByteToken(text);
                if (b < 0) {
                    throw Error(name_ + ": byte token " + std::to_string(i) + " is " + quoted(text) +
                                "; byte tokens must be spelled <0xNN>");
                }
                bytes_[i] = std::string(1, static_cast<char>(b));
                break;
            }
            default:  // undefined, unknown, control, unused: no text
                break;
        }
    }
    SpecialTokens::Lists lists = SpecialTokens::of(vocab_.tokens, vocab_.types, vocab_.eosId, vocab_.endIds);
    userDefined_ = std::move(lists.userDefined);
    specials_ = std::move(lists.withControl);
    eog_ = std::move(lists.endOfGeneration);
    if (vocab_.rstripSpecials) {
        rstrip_.assign(n, false);
        for (int32_t id : specials_) {
            const std::string& t = vocab_.tokens[size_t(id)];
            rstrip_[size_t(id)] = t != "<unk>" && t != "<s>" && t != "<|endoftext|>";
        }
    }

    for (unsigned b = 0; b < 256; ++b) {
        int32_t id = tokenId(byteTokenText(b));
        if (id < 0) id = tokenId(std::string(1, static_cast<char>(b)));
        if (id < 0) id = vocab_.unkId;
        byteToId_[b] = id;
    }
}

std::unique_ptr<LlamaTokenizer> LlamaTokenizer::fromGguf(const GgufFile& file) {
    const std::string& path = file.path();
    const std::string prefix = "tokenizer.ggml.";

    if (!file.has(prefix + "model")) {
        throw Error(path + ": tokenizer.ggml.model is missing; the file has no tokenizer");
    }
    const std::string model = file.getString(prefix + "model");
    if (model != "llama") {
        throw Error(path + ": tokenizer.ggml.model is " + quoted(model) +
                    "; only 'llama' (SentencePiece) vocabularies are supported");
    }
    for (const char* key : {"tokens", "scores", "token_type"}) {
        if (!file.has(prefix + key)) throw Error(path + ": " + prefix + key + " is missing");
    }

    LlamaVocab vocab;
    vocab.tokens = file.getStringArray(prefix + "tokens");
    const size_t n = vocab.tokens.size();
    if (n == 0) throw Error(path + ": tokenizer.ggml.tokens is empty");
    if (n > static_cast<size_t>(INT32_MAX)) throw Error(path + ": tokenizer.ggml.tokens has too many entries");

    const std::vector<double> scores = file.getNumberArray(prefix + "scores");
    if (scores.size() != n) {
        throw Error(path + ": tokenizer.ggml.scores has " + std::to_string(scores.size()) +
                    " entries but tokenizer.ggml.tokens has " + std::to_string(n));
    }
    vocab.scores.assign(scores.begin(), scores.end());

    vocab.types = GgufVocabKeys::tokenTypes(file, n);
    // Special ids: absent keys take llama.cpp's SentencePiece defaults.
    auto readId = [&](const char* key, int32_t absent) { return GgufVocabKeys::tokenId(file, key, n, absent); };
    vocab.bosId = readId("bos_token_id", 1);
    vocab.eosId = readId("eos_token_id", 2);
    vocab.unkId = readId("unknown_token_id", 0);
    vocab.endIds = {readId("eot_token_id", -1), readId("eom_token_id", -1)};
    std::string name = file.getStringOr("general.name", "");
    for (char& ch : name) ch = char(std::tolower(static_cast<unsigned char>(ch)));
    vocab.rstripSpecials = name.find("phi-3") != std::string::npos || name.find("phi3") != std::string::npos;
    vocab.addBos = file.getBoolOr(prefix + "add_bos_token", true);
    vocab.addSpacePrefix = file.getBoolOr(prefix + "add_space_prefix", true);
    if (vocab.addBos && vocab.bosId < 0) {
        throw Error(path + ": tokenizer.ggml.add_bos_token is true but there is no tokenizer.ggml.bos_token_id");
    }
    return std::make_unique<LlamaTokenizer>(std::move(vocab), path);
}

int32_t LlamaTokenizer::tokenId(std::string_view text) const {
    auto it = index_.find(text);
    return it == index_.end() ? -1 : it->second;
}

void LlamaTokenizer::checkId(int32_t id) const {
    if (id < 0 || id >= vocabSize()) {
        throw Error(name_ + ": token id " + std::to_string(id) + " is outside the vocabulary of " +
                    std::to_string(vocabSize()) + " tokens");
    }
}

LlamaTokenType LlamaTokenizer::tokenType(int32_t id) const {
    checkId(id);
    return vocab_.types[id];
}

float LlamaTokenizer::score(int32_t id) const {
    checkId(id);
    return vocab_.scores[id];
}

void LlamaTokenizer::encodeRun(const std::string& run, std::vector<int32_t>& out) const {
    if (run.empty()) return;
    const auto* data = reinterpret_cast<const unsigned char*>(run.data());
    std::vector<Symbol> symbols;
    symbols.reserve(run.size());
    for (size_t offs = 0; offs < run.size();) {
        const size_t len = utf8CharLen(data + offs, run.size() - offs);
        const int index = static_cast<int>(symbols.size());
        symbols.push_back(Symbol{index - 1, offs + len == run.size() ? -1 : index + 1,
                                 static_cast<uint32_t>(offs), static_cast<uint32_t>(len)});
        offs += len;
    }

    std::vector<Bigram> storage;
    storage.reserve(symbols.size() * 2);
    std::priority_queue<Bigram, std::vector<Bigram>, BigramOrder> queue(BigramOrder{}, std::move(storage));
    auto tryAdd = [&](int left, int right) {
        if (left < 0 || right < 0) return;
        const uint32_t size = symbols[left].n + symbols[right].n;
        const int32_t id = tokenId(std::string_view(run.data() + symbols[left].start, size));
        if (id < 0) return;
        queue.push(Bigram{vocab_.scores[id], left, right, size});
    };

    for (int i = 1; i < static_cast<int>(symbols.size()); ++i) tryAdd(i - 1, i);

    while (!queue.empty()) {
        const Bigram bigram = queue.top();
        queue.pop();
        Symbol& left = symbols[bigram.left];
        Symbol& right = symbols[bigram.right];
        // Stale entry: one side was merged away or has grown since.
        if (left.n == 0 || right.n == 0 || left.n + right.n != bigram.size) continue;
        left.n += right.n;
        right.n = 0;
        left.next = right.next;
        if (right.next >= 0) symbols[right.next].prev = bigram.left;
        tryAdd(left.prev, bigram.left);
        tryAdd(bigram.left, left.next);
    }

    for (int i = 0; i != -1; i = symbols[i].next) {
        const Symbol& s = symbols[i];
        const int32_t id = tokenId(std::string_view(run.data() + s.start, s.n));
        if (id >= 0) {
            out.push_back(id);
            continue;
        }
        for (uint32_t k = 0; k < s.n; ++k) {
            const unsigned b = data[s.start + k];
            const int32_t byteId = byteToId_[b];
            if (byteId < 0) {
                throw Error(name_ + ": cannot encode byte " + byteTokenText(b) +
                            ": the vocabulary has neither a byte token for it nor an unknown token");
            }
            out.push_back(byteId);
        }
    }
}

std::vector<int32_t> LlamaTokenizer::encode(const std::string& text, bool addBos, bool parseSpecial) const {
    std::vector<int32_t> out;
    if (addBos && vocab_.bosId >= 0) out.push_back(vocab_.bosId);
    if (text.empty()) return out;
    out.reserve(out.size() + text.size() / 3 + 4);

    // Cut user-defined tokens out of the text, longest first (llama.cpp's
    // tokenizer_st_partition with parse_special = false).
    const std::vector<SpecialTokenSplit::Fragment> fragments =
        SpecialTokenSplit::split(text, parseSpecial ? specials_ : userDefined_, vocab_.tokens, rstrip_);

    bool previousSpecial = true;  // the first run gets the space prefix
    const std::string marker(kSpaceMarker, kSpaceMarkerLen);
    for (const SpecialTokenSplit::Fragment& f : fragments) {
        if (f.token >= 0) {
            out.push_back(f.token);
            previousSpecial = true;
            continue;
        }
        std::string run;
        run.reserve(f.length + f.length / 2 + kSpaceMarkerLen);
        if (vocab_.addSpacePrefix && previousSpecial) run += marker;
        for (size_t k = f.offset; k < f.offset + f.length; ++k) {
            if (text[k] == ' ') {
                run += marker;
            } else {
                run += text[k];
            }
        }
        encodeRun(run, out);
        previousSpecial = false;
    }
    return out;
}

std::string LlamaTokenizer::tokenBytes(int32_t id, int32_t previous) const {
    checkId(id);
    const std::string& b = bytes_[id];
    if (vocab_.addSpacePrefix && vocab_.bosId >= 0 && previous == vocab_.bosId && !b.empty() && b[0] == ' ') {
        return b.substr(1);
    }
    return b;
}

std::string LlamaTokenizer::piece(int32_t id) const {
    checkId(id);
    if (vocab_.types[id] == LlamaTokenType::Normal) return bytes_[id];
    return vocab_.tokens[id];
}

}  // namespace kvlens
