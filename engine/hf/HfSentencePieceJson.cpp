// tokenizer.json (SentencePiece-style BPE) -> SentencePieceBpeVocab, each refusal naming its field.
#include "engine/hf/HfSentencePieceJson.h"

#include <algorithm>
#include <cctype>

#include "core/Error.h"
#include "engine/hf/Quoted.h"
#include "engine/hf/TokenizerJsonFields.h"
#include "engine/tokenizer/Utf8.h"

namespace kvlens {
namespace {

using json = nlohmann::json;
using Fields = TokenizerJsonFields;
using Vocab = SentencePieceBpeVocab;

// The parts a component list names, for `kvlens info`.
struct Reader {
    std::string source;
    Vocab& v;
    std::vector<std::string> normalizerParts, preParts;
    int depth = 0;  // Sequences inside Sequences: bounded, so a hostile file cannot exhaust the stack

    // Enters a Sequence at `field`; the returned guard leaves it.
    struct Nesting {
        int& depth;
        ~Nesting() { --depth; }
    };
    Nesting enter(const std::string& field) {
        if (++depth > 16) {
            --depth;
            fail(field, "nests Sequences deeper than 16");
        }
        return Nesting{depth};
    }

    [[noreturn]] void fail(const std::string& field, const std::string& what) const {
        throw Error(source + ": " + field + " " + what);
    }
    std::string type(const json& o, const std::string& field, const char* what) const {
        if (!o.is_object() || !o.contains("type") || !o["type"].is_string()) {
            fail(field, std::string("is not a ") + what + " object with a type");
        }
        return o["type"].get<std::string>();
    }
    // A Replace's or Split's pattern: only a literal String.
    std::string literal(const json& o, const std::string& field) const {
        const auto p = o.find("pattern");
        if (p == o.end() || !p->is_object()) fail(field + ".pattern", "is missing");
        if (p->contains("String") && (*p)["String"].is_string()) return (*p)["String"].get<std::string>();
        if (p->contains("Regex")) fail(field + ".pattern", "is a Regex; KV Lens applies literal String patterns in SentencePiece-style tokenizers");
        fail(field + ".pattern", "has no String");
    }
    void normalizer(const json& n, const std::string& field) {
        if (n.is_null()) return;
        const std::string t = type(n, field, "normalizer");
        normalizerParts.push_back(t);
        if (t == "Sequence") {
            const Nesting in = enter(field);
            normalizerParts.pop_back();
            const auto items = n.find("normalizers");
            if (items == n.end() || !items->is_array()) fail(field + ".normalizers", "is not a list");
            for (size_t i = 0; i < items->size(); ++i) normalizer((*items)[i], field + ".normalizers[" + std::to_string(i) + "]");
        } else if (t == "Prepend") {
            v.normalizer.push_back({Vocab::NormalizerStep::Kind::Prepend, Fields::text(n, "prepend", "", field, source), ""});
            if (v.normalizer.back().text.empty()) fail(field + ".prepend", "is missing or empty");
        } else if (t == "Replace") {
            const std::string from = literal(n, field);
            if (from.empty()) fail(field + ".pattern.String", "is empty");
            if (!n.contains("content") || !n["content"].is_string()) fail(field + ".content", "is missing or not a string");
            v.normalizer.push_back({Vocab::NormalizerStep::Kind::Replace, from, n["content"].get<std::string>()});
        } else if (t == "NFC") {
            v.normalizer.push_back({Vocab::NormalizerStep::Kind::Nfc, "", ""});
        } else {
            fail(field, "has type " + quotedText(t) + ", which KV Lens does not apply (Prepend, Replace, NFC, Sequence)");
        }
    }

    void preTokenizer(const json& p, const std::string& field) {
        if (p.is_null()) return;
        const std::string t = type(p, field, "pre-tokenizer");
        preParts.push_back(t);
        Vocab::PreTokenizerStep step;
        if (t == "Sequence") {
            const Nesting in = enter(field);
            preParts.pop_back();
            const auto items = p.find("pretokenizers");
            if (items == p.end() || !items->is_array()) fail(field + ".pretokenizers", "is not a list");
            for (size_t i = 0; i < items->size(); ++i) preTokenizer((*items)[i], field + ".pretokenizers[" + std::to_string(i) + "]");
            return;
        } else if (t == "Metaspace") {
            step.kind = Vocab::PreTokenizerStep::Kind::Metaspace;
            step.text = replacement(p, field);
            step.prepend = prependScheme(p, field);
            step.split = Fields::flag(p, "split", true, field, source);
        } else if (t == "Split") {
            step.kind = Vocab::PreTokenizerStep::Kind::Split;
            step.text = literal(p, field);
            if (step.text.empty()) fail(field + ".pattern.String", "is empty");
            if (Fields::flag(p, "invert", false, field, source)) fail(field + ".invert", "is true; inverted splits are not supported");
            const std::string b = Fields::text(p, "behavior", "", field, source);
            using B = Vocab::SplitBehavior;
            static const std::vector<std::pair<std::string, B>> behaviors = {
                {"Removed", B::Removed}, {"Isolated", B::Isolated}, {"MergedWithPrevious", B::MergedWithPrevious},
                {"MergedWithNext", B::MergedWithNext}, {"Contiguous", B::Contiguous}};
            const auto it = std::find_if(behaviors.begin(), behaviors.end(), [&](const auto& e) { return e.first == b; });
            if (it == behaviors.end()) {
                fail(field + ".behavior", "is " + quotedText(b) +
                                              "; one of Removed, Isolated, MergedWithPrevious, MergedWithNext, Contiguous");
            }
            step.behavior = it->second;
        } else {
            fail(field, "has type " + quotedText(t) + ", which KV Lens does not run in a SentencePiece-style tokenizer (Metaspace, Split, Sequence)");
        }
        v.preTokenizer.push_back(step);
    }

    std::string replacement(const json& o, const std::string& field) const {
        const std::string r = Fields::text(o, "replacement", "\xE2\x96\x81", field, source);
        uint32_t cp = 0;
        if (r.empty() || Utf8::decode(r, 0, cp) != r.size()) fail(field + ".replacement", "is not one character");
        return r;
    }
    // As Hugging Face reads Metaspace: prepend_scheme (default always); add_prefix_space false
    // (the older field) means never, and contradicts a scheme that prepends.
    Vocab::Prepend prependScheme(const json& o, const std::string& field) const {
        const bool prefix = Fields::flag(o, "add_prefix_space", true, field, source);
        Vocab::Prepend scheme = prefix ? Vocab::Prepend::Always : Vocab::Prepend::Never;
        if (o.contains("prepend_scheme") && !o["prepend_scheme"].is_null()) {
            const std::string s = Fields::text(o, "prepend_scheme", "", field, source);
            if (s == "first") {
                scheme = Vocab::Prepend::First;
            } else if (s == "always") {
                scheme = Vocab::Prepend::Always;
            } else if (s == "never") {
                scheme = Vocab::Prepend::Never;
            } else {
                fail(field + ".prepend_scheme", "is " + quotedText(s) + "; one of first, always, never");
            }
            if (!prefix && scheme != Vocab::Prepend::Never) {
                fail(field + ".add_prefix_space", "is false but prepend_scheme is " + quotedText(s) + " (Hugging Face refuses the pair)");
            }
        }
        return scheme;
    }

    void decoder(const json& d, const std::string& field) {
        if (d.is_null()) return;
        const std::string t = type(d, field, "decoder");
        if (t == "Sequence") {
            const Nesting in = enter(field);
            const auto items = d.find("decoders");
            if (items == d.end() || !items->is_array()) fail(field + ".decoders", "is not a list");
            for (size_t i = 0; i < items->size(); ++i) decoder((*items)[i], field + ".decoders[" + std::to_string(i) + "]");
        } else if (t == "Replace") {
            const std::string from = literal(d, field);
            const std::string to = Fields::text(d, "content", "", field, source);
            if (from != replacementChar_ || to != " ") {
                fail(field, "replaces " + quotedText(from) + " with " + quotedText(to) + "; KV Lens decodes '\xE2\x96\x81' as a space only");
            }
            v.decodeMarker = true;
        } else if (t == "Strip") {
            if (Fields::text(d, "content", " ", field, source) != " ") fail(field + ".content", "is not a space");
            const auto start = d.find("start");
            if (start != d.end() && (!start->is_number_integer() || start->get<int64_t>() < 0 || start->get<int64_t>() > 8)) {
                fail(field + ".start", "is not a count from 0 to 8");
            }
            v.stripLeading = start == d.end() ? 0 : int(start->get<int64_t>());
        } else if (t == "Metaspace") {
            v.decodeMarker = true;
            if (prependScheme(d, field) != Vocab::Prepend::Never) v.stripLeading = 1;
        } else if (t != "ByteFallback" && t != "Fuse") {
            fail(field, "has type " + quotedText(t) + ", which KV Lens does not decode with (Replace, ByteFallback, Fuse, Strip, Metaspace, Sequence)");
        }
    }
    std::string replacementChar_ = "\xE2\x96\x81";
};

std::string joined(const std::vector<std::string>& parts) {
    std::string s;
    for (const std::string& p : parts) s += (s.empty() ? "" : ", ") + p;
    return s.empty() ? "none" : s;
}

}  // namespace

std::unique_ptr<SentencePieceBpe> HfSentencePieceJson::parse(const std::string& text, const std::string& source,
                                                             const HfTokenizerJson::Extras& extras) {
    const json j = Fields::parseObject(text, source);
    const json& model = Fields::bpeModel(j, source);
    const Fields::Vocabulary vocabulary = Fields::vocabulary(j, model, source);

    Vocab v;
    v.byteFallback = Fields::flag(model, "byte_fallback", false, "model", source);
    v.fuseUnk = Fields::flag(model, "fuse_unk", false, "model", source);
    v.ignoreMerges = Fields::flag(model, "ignore_merges", false, "model", source);
    const int64_t n = std::max<int64_t>(vocabulary.byId.rbegin()->first + 1, extras.vocabSize);
    v.tokens.resize(size_t(n));
    v.types.assign(size_t(n), LlamaTokenType::Unused);
    for (int64_t i = 0; i < n; ++i) v.tokens[size_t(i)] = "[PAD" + std::to_string(i) + "]";
    for (const auto& [id, entry] : vocabulary.byId) {
        v.tokens[size_t(id)] = entry.first;
        v.types[size_t(id)] = entry.second;
        const std::string& t = entry.first;
        if (v.byteFallback && entry.second == LlamaTokenType::Normal && t.size() == 6 && t.compare(0, 3, "<0x") == 0 &&
            t[5] == '>' && std::isxdigit(static_cast<unsigned char>(t[3])) && std::isxdigit(static_cast<unsigned char>(t[4]))) {
            v.types[size_t(id)] = LlamaTokenType::Byte;
        }
    }
    for (const Fields::AddedToken& a : vocabulary.added) v.added[int32_t(a.id)] = {a.lstrip, a.rstrip, a.normalized};
    v.merges = Fields::merges(model, source);
    const std::string unk = Fields::text(model, "unk_token", "", "model", source);
    v.unkId = Fields::idOf(vocabulary, unk, "model.unk_token", source);

    Reader r{source, v, {}, {}};
    v.decodeMarker = false;
    r.normalizer(j.value("normalizer", json()), "normalizer");
    r.preTokenizer(j.value("pre_tokenizer", json()), "pre_tokenizer");
    r.decoder(j.value("decoder", json()), "decoder");

    v.bosId = Fields::idOf(vocabulary, extras.bosToken, "tokenizer_config.json's bos_token", source);
    v.eosId = Fields::idOf(vocabulary, extras.eosToken, "tokenizer_config.json's eos_token", source);
    for (int32_t id : extras.endIds) {
        if (id < 0 || id >= n) {
            throw Error(source + ": EOS id " + std::to_string(id) +
                        " (generation_config.json / config.json) is outside the vocabulary of " + std::to_string(n));
        }
        v.endIds.push_back(id);
    }
    if (v.eosId < 0 && !extras.endIds.empty()) v.eosId = extras.endIds[0];
    const std::string lead = Fields::leadingSpecial(j.value("post_processor", json()));
    if (!lead.empty() && v.bosId < 0) v.bosId = Fields::idOf(vocabulary, lead, "post_processor's special token", source);
    v.addBos = extras.addBos >= 0 ? extras.addBos == 1 : !lead.empty();
    return std::make_unique<SentencePieceBpe>(std::move(v), source);
}

std::string HfSentencePieceJson::describe(const std::string& text) {
    const json j = Fields::parseObject(text, "tokenizer.json");
    Vocab v;
    Reader r{"tokenizer.json", v, {}, {}};
    r.normalizer(j.value("normalizer", json()), "normalizer");
    r.preTokenizer(j.value("pre_tokenizer", json()), "pre_tokenizer");
    const json model = j.value("model", json::object());
    const bool fallback = model.is_object() && model.value("byte_fallback", false) == true;
    return "SentencePiece-style BPE, normalizer " + joined(r.normalizerParts) + ", pre-tokenizer " +
           joined(r.preParts) + (fallback ? ", byte fallback" : "");
}

}  // namespace kvlens
