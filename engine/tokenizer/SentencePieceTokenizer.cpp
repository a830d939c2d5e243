// libsentencepiece behind the Tokenizer interface.
#include "engine/tokenizer/SentencePieceTokenizer.h"

#include <fstream>
#include <sstream>

#include "core/Error.h"
#include "engine/tokenizer/SpecialTokenSplit.h"
#include "engine/tokenizer/sentencepiece/SentencePieceLibrary.h"
#include "engine/tokenizer/SpecialTokens.h"

namespace kvlens {
namespace {

const std::string kMarker = "\xe2\x96\x81";  // U+2581, SentencePiece's space

std::string spaces(std::string s) {
    for (size_t at = s.find(kMarker); at != std::string::npos; at = s.find(kMarker, at + 1)) s.replace(at, kMarker.size(), " ");
    return s;
}

// "<0xNN>" -> the byte, or -1.
int byteValue(const std::string& piece) {
    if (piece.size() != 6 || piece.compare(0, 3, "<0x") != 0 || piece[5] != '>') return -1;
    try {
        return std::stoi(piece.substr(3, 2), nullptr, 16);
    } catch (...) {
        return -1;
    }
}

}  // namespace

SentencePieceTokenizer::SentencePieceTokenizer(const std::string& serialized, const std::string& source,
                                               const Options& options)
    : source_(source) {
    const SentencePieceLibrary& lib = SentencePieceLibrary::get();
    char error[512] = {0};
    void* sp = lib.load(serialized.data(), serialized.size(), error, sizeof error);
    if (!sp) throw Error(source + ": not a SentencePiece model the library can load (" + error + ")");
    sp_ = std::shared_ptr<void>(sp, lib.free);
    const int n = lib.pieceSize(sp);
    if (n <= 0) throw Error(source + ": the SentencePiece model has no pieces");
    const int64_t total = std::max<int64_t>(n, options.vocabSize);
    tokens_.resize(static_cast<size_t>(total));
    types_.assign(static_cast<size_t>(total), LlamaTokenType::Unused);
    bytes_.resize(static_cast<size_t>(total));
    for (int i = 0; i < total; ++i) {
        if (i >= n) {
            tokens_[size_t(i)] = "[PAD" + std::to_string(i) + "]";
            continue;
        }
        size_t length = 0;
        const char* text = lib.piece(sp, i, &length);
        const std::string p(text, length);
        tokens_[size_t(i)] = p;
        const auto t = static_cast<LlamaTokenType>(lib.type(sp, i));
        types_[size_t(i)] = t;
        if (t == LlamaTokenType::Byte) {
            const int b = byteValue(p);
            if (b >= 0) bytes_[size_t(i)] = std::string(1, static_cast<char>(b));
        } else if (t == LlamaTokenType::Normal) {
            bytes_[size_t(i)] = spaces(p);
        }
    }
    bos_ = lib.special(sp, 0);
    eos_ = lib.special(sp, 1);
    for (int32_t id : options.endIds) {
        if (id < 0 || id >= total) {
            throw Error(source + ": EOS id " + std::to_string(id) + " is outside the vocabulary of " +
                        std::to_string(total));
        }
    }
    eog_ = SpecialTokens::endOfGeneration(tokens_, types_, [&] {
        std::vector<int32_t> declared = options.endIds;
        declared.push_back(eos_);
        return declared;
    }());
    controls_ = SpecialTokens::longestFirst(tokens_, types_, true);
    addBos_ = options.addBos < 0 ? bos_ >= 0 : options.addBos != 0;
    if (addBos_ && bos_ < 0) throw Error(source + ": BOS is to be added but the model has no BOS piece");
}

SentencePieceTokenizer::~SentencePieceTokenizer() = default;

std::unique_ptr<SentencePieceTokenizer> SentencePieceTokenizer::fromFile(const std::string& path,
                                                                         const Options& options) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw Error(path + ": cannot open");
    std::ostringstream bytes;
    bytes << in.rdbuf();
    return std::make_unique<SentencePieceTokenizer>(bytes.str(), path, options);
}

void SentencePieceTokenizer::checkId(int32_t id) const {
    if (id < 0 || id >= vocabSize()) {
        throw Error(source_ + ": token id " + std::to_string(id) + " is outside the vocabulary of " +
                    std::to_string(vocabSize()) + " tokens");
    }
}

void SentencePieceTokenizer::encodeRun(const std::string& run, std::vector<int32_t>& out) const {
    const SentencePieceLibrary& lib = SentencePieceLibrary::get();
    std::vector<int> ids(run.size() + 8);
    char error[512] = {0};
    long n = lib.encode(sp_.get(), run.data(), run.size(), ids.data(), ids.size(), error, sizeof error);
    if (n > static_cast<long>(ids.size())) {
        ids.resize(static_cast<size_t>(n));
        n = lib.encode(sp_.get(), run.data(), run.size(), ids.data(), ids.size(), error, sizeof error);
    }
    if (n < 0) throw Error(source_ + ": cannot encode the text (" + error + ")");
    out.insert(out.end(), ids.begin(), ids.begin() + n);
}

std::vector<int32_t> SentencePieceTokenizer::encode(const std::string& text, bool addBos, bool parseSpecial) const {
    std::vector<int32_t> out;
    if (addBos && bos_ >= 0) out.push_back(bos_);
    if (text.empty()) return out;
    if (!parseSpecial) {
        encodeRun(text, out);
        return out;
    }
    for (const SpecialTokenSplit::Fragment& f : SpecialTokenSplit::split(text, controls_, tokens_)) {
        if (f.token >= 0) {
            out.push_back(f.token);
        } else {
            encodeRun(text.substr(f.offset, f.length), out);
        }
    }
    return out;
}

std::string SentencePieceTokenizer::tokenBytes(int32_t id, int32_t previous) const {
    checkId(id);
    const std::string& b = bytes_[size_t(id)];
    // The dummy prefix SentencePiece adds after BOS is no part of the text (as for GGUF's llama vocabulary).
    if (bos_ >= 0 && previous == bos_ && !b.empty() && b[0] == ' ') return b.substr(1);
    return b;
}

std::string SentencePieceTokenizer::piece(int32_t id) const {
    checkId(id);
    const LlamaTokenType t = types_[size_t(id)];
    if (t == LlamaTokenType::Normal) return bytes_[size_t(id)];
    return tokens_[size_t(id)];
}

}  // namespace kvlens
