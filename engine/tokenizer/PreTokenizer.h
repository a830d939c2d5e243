// The pre-tokenizer of a byte-level BPE vocabulary, chosen by GGUF's
// tokenizer.ggml.pre: a list of Unicode regexes, applied in turn, each
// splitting every piece the previous one left into its matches and the text
// between them (Hugging Face's Split with "Isolated" behaviour; llama.cpp's
// unicode_regex_split). The regexes are the models' own (their tokenizer.json,
// as llama.cpp's src/llama-vocab.cpp lists them per name), run by PCRE2 in
// UTF + UCP mode, JIT-compiled where the CPU allows.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace kvlens {

class PreTokenizer {
public:
    // Throws kvlens::Error naming `name` (and the known ones) when there is no
    // such pre-tokenizer: never a silent fallback to another regex.
    static std::shared_ptr<const PreTokenizer> forName(const std::string& name);
    static std::vector<std::string> names();
    // One regex of a tokenizer.json's pre_tokenizer; `onByteLevel` when it comes after
    // a ByteLevel step and so matches the piece's byte-level spelling (GPT-2's
    // alphabet, one character per byte), not its text.
    struct Step {
        std::string regex;
        bool onByteLevel = false;
        std::string field;  // where the file has it ("pre_tokenizer.pretokenizers[0].pattern.Regex"), for messages
    };
    // A pre-tokenizer from a tokenizer.json's own steps (HfTokenizerJson); `name`
    // stands for it in messages. Throws kvlens::Error naming `name` when a regex
    // does not compile.
    static std::shared_ptr<const PreTokenizer> fromSteps(const std::string& name, const std::vector<Step>& steps,
                                                         bool ignoreMerges, bool addsBos);

    ~PreTokenizer();
    PreTokenizer(const PreTokenizer&) = delete;
    PreTokenizer& operator=(const PreTokenizer&) = delete;

    // The pieces of `text` (valid UTF-8), in order; together they are `text`.
    std::vector<std::string_view> split(std::string_view text) const;

    const std::string& name() const { return name_; }
    // Llama 3 and Tekken look a whole piece up before merging (ignore_merges)
    // and add BOS unless the file says otherwise.
    bool ignoreMerges() const { return ignoreMerges_; }
    bool addsBos() const { return addsBos_; }

private:
    struct Regex;
    PreTokenizer(std::string name, const std::vector<const char*>& patterns, bool ignoreMerges,
                 bool addsBos, std::vector<bool> onByteLevel = {}, const std::vector<std::string>& fields = {});

    std::string name_;
    std::vector<std::unique_ptr<Regex>> regexes_;
    std::vector<bool> onByteLevel_;  // per regex
    bool ignoreMerges_ = false, addsBos_ = false;
};

}  // namespace kvlens
