// PCRE2 pre-tokenizers: one compiled pattern per regex, split in turn.
#define PCRE2_CODE_UNIT_WIDTH 8
#include "engine/tokenizer/PreTokenizer.h"

#include <pcre2.h>

#include <map>
#include <mutex>

#include "core/Error.h"
#include "engine/tokenizer/ByteLevel.h"

namespace kvlens {

namespace {

struct Family {
    std::vector<const char*> names;
    std::vector<const char*> patterns;
    bool ignoreMerges, addsBos;
};

// The regexes of each tokenizer.ggml.pre family. Where llama.cpp rewrote a
// Hugging Face regex for std::regex (Llama 3, Qwen2, Tekken) the model's own
// is used, which PCRE2 runs as written; the case-insensitive contractions of
// Llama 3 and Qwen2 are spelled per letter ('[sS]), as llama.cpp does, so
// that no non-ASCII case folding (U+017F for 's') creeps in.
const std::vector<Family>& families() {
    static const std::vector<Family> f = {
        {{"default"},
         {"[\\p{P}\\$\\+<=>\\^~\\|]+",
          "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)",
          "\\p{N}+", "[0-9][0-9][0-9]"},
         false,
         false},
        {{"gpt-2", "phi-2", "roberta-bpe", "mpt", "olmo", "jais", "jina-es", "jina-de",
          "jina-v1-en", "jina-v2-es", "jina-v2-de", "jina-v2-code", "gigachat"},
         {"'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)"},
         false,
         false},
        {{"llama3", "llama-v3", "llama-bpe", "falcon3"},
         {"(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|"
          "\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"},
         true,
         true},
        {{"dbrx", "smaug-bpe", "chatglm-bpe"},
         {"(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|"
          "\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"},
         false,
         false},
        {{"qwen2", "deepseek-r1-qwen", "megrez", "stablelm2"},
         {"(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|"
          "\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"},
         false,
         false},
        {{"deepseek-llm"},
         {"[\r\n]",
          "\\s?[A-Za-zµÀ-ÖØ-öø-ƺƼ-ƿǄ-ʓʕ-ʯͰ-ͳͶͷͻ-ͽͿΆΈ-ΊΌΎ-ΡΣ-ϵϷ-ҁҊ-ԯԱ-ՖႠ-ჅᎠ-Ᏽᏸ-ᏽᲐ-ᲺᲽ-"
          "Ჿᴀ-ᴫᵫ-ᵷᵹ-ᶚḀ-ἕἘ-Ἕἠ-ὅὈ-Ὅὐ-ὗὙὛὝὟ-ώᾀ-ᾴᾶ-ᾼιῂ-ῄῆ-ῌῐ-ΐῖ-Ίῠ-Ῥῲ-ῴῶ-ῼℂℇℊ-ℓℕℙ-ℝℤΩℨK-ℭℯ-ℴℹℼ-ℿⅅ-"
          "ⅉⅎↃↄⰀ-ⱻⱾ-ⳤⳫ-ⳮⳲⳳꙀ-ꙭꚀ-ꚛꜢ-ꝯꝱ-ꞇꞋ-ꞎꭰ-ꮿﬀ-ﬆﬓ-ﬗＡ-Ｚａ-ｚ𐐀-𐑏𐒰-𐓓𐓘-𐓻𐲀-"
          "𐲲𐳀-𐳲𑢠-𑣟𞤀-𞥃]+",
          "\\s?[!-/:-~！-／：-～‘-‟　-。]+", "\\s+$", "[一-龥ࠀ-一가-퟿]+", "\\p{N}+"},
         false,
         false},
        {{"deepseek-coder"},
         {"[\r\n]", "\\s?\\p{L}+", "\\s?\\p{P}+", "[一-龥ࠀ-一가-퟿]+", "\\p{N}"},
         false,
         false},
        {{"deepseek-v3"},
         {"\\p{N}{1,3}", "[一-龥぀-ゟ゠-ヿ]+",
          "[!\"#$%&'()*+,\\-./"
          ":;<=>?@\\[\\\\\\]^_`{|}~][A-Za-z]+|[^\r\n\\p{L}\\p{P}\\p{S}]?[\\p{L}\\p{M}]+| "
          "?[\\p{P}\\p{S}]+[\r\n]*|\\s*[\r\n]+|\\s+(?!\\S)|\\s+"},
         false,
         false},
        {{"falcon"},
         {"[\\p{P}\\$\\+<=>\\^~\\|`]+",
          "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)",
          "[0-9][0-9][0-9]"},
         false,
         false},
        {{"starcoder", "refact", "command-r", "smollm", "codeshell", "exaone", "minerva-7b"},
         {"\\p{N}",
          "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)"},
         false,
         false},
        {{"poro-chat", "bloom", "gpt3-finnish"}, {" ?[^(\\s|.,!?…。，、।۔،)]+"}, false, false},
        {{"viking"}, {" ?[^(\\s|.,!?…。，、।۔،)]+", "\\p{N}"}, false, false},
        {{"tekken"},
         {"[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]*[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]"
          "+|[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]+[\\p{Ll}\\p{Lm}\\p{Lo}\\p{"
          "M}]*|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"},
         true,
         true},

    };
    return f;
}

}  // namespace

struct PreTokenizer::Regex {
    pcre2_code* code = nullptr;
    bool jit = false;
    ~Regex() { pcre2_code_free(code); }
};

PreTokenizer::PreTokenizer(std::string name, const std::vector<const char*>& patterns,
                           bool ignoreMerges, bool addsBos, std::vector<bool> onByteLevel,
                           const std::vector<std::string>& fields)
    : name_(std::move(name)), onByteLevel_(std::move(onByteLevel)), ignoreMerges_(ignoreMerges), addsBos_(addsBos) {
    onByteLevel_.resize(patterns.size(), false);
    for (size_t pi = 0; pi < patterns.size(); ++pi) {
        const char* p = patterns[pi];
        auto r = std::make_unique<Regex>();
        int code = 0;
        PCRE2_SIZE offset = 0;
        r->code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(p), PCRE2_ZERO_TERMINATED,
                                PCRE2_UTF | PCRE2_UCP, &code, &offset, nullptr);
        if (r->code == nullptr) {
            PCRE2_UCHAR message[256];
            pcre2_get_error_message(code, message, sizeof message);
            if (pi < fields.size() && !fields[pi].empty()) {
                throw Error(name_ + ": " + fields[pi] + ": cannot compile the regex at offset " + std::to_string(offset) +
                            ": " + reinterpret_cast<const char*>(message));
            }
            throw Error("pre-tokenizer '" + name_ + "': cannot compile its regex at offset " +
                        std::to_string(offset) + ": " + reinterpret_cast<const char*>(message));
        }
        // Without JIT (a CPU or build PCRE2 has none for) the interpreter runs it.
        r->jit = pcre2_jit_compile(r->code, PCRE2_JIT_COMPLETE) == 0;
        regexes_.push_back(std::move(r));
    }
}

PreTokenizer::~PreTokenizer() = default;

std::vector<std::string> PreTokenizer::names() {
    std::vector<std::string> out;
    for (const Family& f : families())
        for (const char* n : f.names) out.push_back(n);
    return out;
}

std::shared_ptr<const PreTokenizer> PreTokenizer::forName(const std::string& name) {
    static std::mutex mutex;
    static std::map<std::string, std::shared_ptr<const PreTokenizer>> compiled;
    std::lock_guard<std::mutex> lock(mutex);
    if (auto it = compiled.find(name); it != compiled.end()) return it->second;
    for (const Family& f : families()) {
        for (const char* n : f.names) {
            if (name != n) continue;
            std::shared_ptr<const PreTokenizer> p(
                new PreTokenizer(name, f.patterns, f.ignoreMerges, f.addsBos));
            compiled[name] = p;
            return p;
        }
    }
    std::string known;
    for (const std::string& n : names()) known += (known.empty() ? "" : ", ") + n;
    throw Error("tokenizer.ggml.pre '" + name + "' is not a pre-tokenizer KV Lens knows (" + known +
                ")");
}

std::shared_ptr<const PreTokenizer> PreTokenizer::fromSteps(const std::string& name, const std::vector<Step>& steps,
                                                            bool ignoreMerges, bool addsBos) {
    std::vector<const char*> raw;
    std::vector<bool> onByteLevel;
    std::vector<std::string> fields;
    for (const Step& s : steps) {
        raw.push_back(s.regex.c_str());
        onByteLevel.push_back(s.onByteLevel);
        fields.push_back(s.field);
    }
    return std::shared_ptr<const PreTokenizer>(new PreTokenizer(name, raw, ignoreMerges, addsBos, onByteLevel, fields));
}

std::vector<std::string_view> PreTokenizer::split(std::string_view text) const {
    std::vector<std::string_view> pieces{text};
    if (text.empty()) return {};
    std::vector<std::string_view> next;
    std::string spelled;        // a piece's byte-level spelling, for regexes on it
    std::vector<size_t> rawAt;  // spelled byte -> the piece's byte it spells
    for (size_t ri = 0; ri < regexes_.size(); ++ri) {
        const auto& r = regexes_[ri];
        pcre2_match_data* match = pcre2_match_data_create_from_pattern(r->code, nullptr);
        next.clear();
        next.reserve(pieces.size() * 2);
        for (std::string_view piece : pieces) {
            // The subject: the piece itself, or its byte-level spelling (whose
            // character boundaries map back to the piece's bytes one to one).
            std::string_view subjectText = piece;
            if (onByteLevel_[ri]) {
                spelled.clear();
                rawAt.clear();
                for (size_t i = 0; i < piece.size(); ++i) {
                    const std::string ch = ByteLevel::encode(piece.substr(i, 1));
                    spelled += ch;
                    rawAt.insert(rawAt.end(), ch.size(), i);
                }
                rawAt.push_back(piece.size());
                subjectText = spelled;
            }
            auto raw = [&](size_t at) { return onByteLevel_[ri] ? rawAt[at] : at; };
            const auto* subject = reinterpret_cast<PCRE2_SPTR>(subjectText.data());
            size_t start = 0, from = 0;
            while (from < subjectText.size()) {
                const int rc =
                    r->jit
                        ? pcre2_jit_match(r->code, subject, subjectText.size(), from, 0, match, nullptr)
                        : pcre2_match(r->code, subject, subjectText.size(), from, 0, match, nullptr);
                if (rc == PCRE2_ERROR_NOMATCH) break;
                if (rc < 0) {  // a file's own regex may hit PCRE2's match or JIT stack limits
                    PCRE2_UCHAR message[256];
                    pcre2_get_error_message(rc, message, sizeof message);
                    pcre2_match_data_free(match);
                    throw Error(name_ + ": the pre-tokenizer's regex cannot match this text (" +
                                reinterpret_cast<const char*>(message) + ")");
                }
                const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(match);
                const size_t begin = ov[0], end = ov[1];
                if (end == begin) {  // an empty match: step one character on
                    from = begin + 1;
                    while (from < subjectText.size() &&
                           (static_cast<unsigned char>(subjectText[from]) & 0xC0) == 0x80)
                        ++from;
                    continue;
                }
                if (begin > start) next.push_back(piece.substr(raw(start), raw(begin) - raw(start)));
                next.push_back(piece.substr(raw(begin), raw(end) - raw(begin)));
                start = from = end;
            }
            if (start < subjectText.size()) next.push_back(piece.substr(raw(start)));
        }
        pcre2_match_data_free(match);
        pieces.swap(next);
    }
    return pieces;
}

}  // namespace kvlens
