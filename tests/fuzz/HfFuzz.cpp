// Mutation fuzzer for what a Hugging Face folder feeds the engine before any
// weight is used: safetensors headers (SafetensorsFile), config.json (HfConfig)
// and tokenizer.json (HfTokenizerJson and HfSentencePieceJson, then a few encodes). Valid seeds are
// corrupted byte- and token-wise; anything but a clean one-line kvlens::Error
// (or success) fails the run. Built with ASan/UBSan, so an out-of-bounds read
// or an overflow aborts it too. Deterministic for a given --seed; --verbose
// prints each iteration before it runs. A failing input is saved as
// hf_fuzz_failure.bin.
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "core/Error.h"
#include "engine/hf/HfConfig.h"
#include "engine/hf/HfSentencePieceJson.h"
#include "engine/hf/HfTokenizerJson.h"
#include "engine/hf/SafetensorsFile.h"
#include "support/HfFolderWriter.h"
#include "FuzzMutator.h"

namespace {

using kvlens::test::encodeValues;

const char* kConfig = R"({"architectures": ["LlamaForCausalLM"], "hidden_size": 64, "intermediate_size": 128,
 "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2, "vocab_size": 300,
 "max_position_embeddings": 256, "rms_norm_eps": 1e-5, "rope_theta": 500000.0, "tie_word_embeddings": true,
 "rope_scaling": {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
 "original_max_position_embeddings": 64}, "eos_token_id": [1, 2], "bos_token_id": 0})";

const char* kQwenConfig = R"({"architectures": ["Qwen2ForCausalLM"], "hidden_size": 64, "intermediate_size": 128,
 "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2, "vocab_size": 300, "head_dim": 16,
 "rope_scaling": {"type": "yarn", "factor": 4.0, "original_max_position_embeddings": 64},
 "use_sliding_window": true, "sliding_window": 128})";

// A small byte-level BPE tokenizer.json: the 256 byte-level characters, a few merges, added tokens.
std::string tokenizerSeed() {
    std::string vocab;
    int id = 0;
    auto add = [&](const std::string& t) {
        vocab += (vocab.empty() ? "" : ", ") + std::string("\"") + t + "\": " + std::to_string(id++);
    };
    for (int c = 33; c < 127; ++c) {
        if (c == '"' || c == '\\') continue;
        add(std::string(1, char(c)));
    }
    add("\\u0120");
    add("\\u0120t");
    add("he");
    add("\\u0120the");
    return std::string(R"({"version": "1.0", "added_tokens": [{"id": 200, "content": "<|end|>", "special": true},
 {"id": 201, "content": "<x>", "special": false}], "normalizer": {"type": "NFC"},
 "pre_tokenizer": {"type": "Sequence", "pretokenizers": [{"type": "Split", "pattern": {"Regex":
 "(?i:'s|'t)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s+(?!\\S)|\\s+"},
 "behavior": "Isolated", "invert": false}, {"type": "Digits", "individual_digits": true},
 {"type": "Punctuation", "behavior": "Contiguous"}, {"type": "ByteLevel", "add_prefix_space": false, "use_regex": false}]},
 "post_processor": {"type": "TemplateProcessing", "single": [{"SpecialToken": {"id": "<|end|>", "type_id": 0}},
 {"Sequence": {"id": "A", "type_id": 0}}]},
 "model": {"type": "BPE", "ignore_merges": true, "vocab": {)") +
           vocab + R"(}, "merges": ["\u0120 t", ["h", "e"], "\u0120t he"]}})";
}

// A small SentencePiece-style tokenizer.json: every step KV Lens runs, byte tokens, added tokens.
std::string sentencePieceSeed() {
    std::string vocab = R"("<unk>": 0, "<s>": 1, "</s>": 2)";
    int id = 3;
    auto add = [&](const std::string& t) { vocab += ", \"" + t + "\": " + std::to_string(id++); };
    for (const char* t : {"\u2581", "a", "b", "c", "x", "\u2581a", "ab", "\u2581ab", "bc"}) add(t);
    char buf[16];
    for (int b = 0; b < 256; ++b) {
        std::snprintf(buf, sizeof buf, "<0x%02X>", b);
        add(buf);
    }
    return std::string(R"({"version": "1.0", "added_tokens": [{"id": 0, "content": "<unk>", "special": true},
 {"id": 1, "content": "<s>", "special": true}, {"id": 2, "content": "</s>", "special": true, "rstrip": true},
 {"id": 300, "content": "<t>", "special": false, "lstrip": true, "normalized": true}],
 "normalizer": {"type": "Sequence", "normalizers": [{"type": "Prepend", "prepend": "\u2581"},
 {"type": "Replace", "pattern": {"String": " "}, "content": "\u2581"}, {"type": "NFC"}]},
 "pre_tokenizer": {"type": "Sequence", "pretokenizers": [{"type": "Metaspace", "replacement": "\u2581",
 "prepend_scheme": "first", "split": true}, {"type": "Split", "pattern": {"String": "x"}, "behavior": "MergedWithNext",
 "invert": false}]},
 "decoder": {"type": "Sequence", "decoders": [{"type": "Replace", "pattern": {"String": "\u2581"}, "content": " "},
 {"type": "ByteFallback"}, {"type": "Fuse"}, {"type": "Strip", "content": " ", "start": 1, "stop": 0}]},
 "post_processor": {"type": "TemplateProcessing", "single": [{"SpecialToken": {"id": "<s>", "type_id": 0}},
 {"Sequence": {"id": "A", "type_id": 0}}]},
 "model": {"type": "BPE", "unk_token": "<unk>", "fuse_unk": true, "byte_fallback": true, "vocab": {)") +
           vocab + R"(}, "merges": ["a b", "\u2581 a", "\u2581a b", ["b", "c"]]}})";
}

std::vector<uint8_t> safetensorsSeed() {
    std::vector<float> v(64);
    for (size_t i = 0; i < v.size(); ++i) v[i] = float(i) * 0.25f - 3.0f;
    return kvlens::test::buildSafetensors(
        {{"model.embed_tokens.weight", "BF16", {4, 16}, encodeValues(v, "BF16")},
         {"model.norm.weight", "F32", {16}, encodeValues(std::vector<float>(v.begin(), v.begin() + 16), "F32")},
         {"lm_head.weight", "F16", {2, 8}, encodeValues(std::vector<float>(v.begin(), v.begin() + 16), "F16")}},
        R"({"format": "pt"})");
}

void saveFailure(const std::string& bytes) {
    std::ofstream("hf_fuzz_failure.bin", std::ios::binary) << bytes;
}

}  // namespace

int main(int argc, char** argv) {
    uint64_t seed = 1, iterations = 30000;
    bool verbose = false;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        if (kvlens::test::fuzzCountFlag(argc, argv, i, seed, iterations)) {
            continue;
        } else if (a == "--verbose") {
            verbose = true;
        } else {
            std::fprintf(stderr, "usage: kvlens_hf_fuzz [--seed N] [--iterations N] [--verbose]\n");
            return 2;
        }
    }
    const auto start = std::chrono::steady_clock::now();
    const std::vector<uint8_t> st = safetensorsSeed();
    const std::string stSeed(st.begin(), st.end());
    const std::vector<std::string> configs = {kConfig, kQwenConfig};
    const std::string tok = tokenizerSeed(), spm = sentencePieceSeed();
    // The seeds themselves must parse.
    try {
        kvlens::SafetensorsFile f(st, "seed.safetensors");
        for (const std::string& c : configs) kvlens::HfConfig::parse(c, "seed/config.json");
        kvlens::HfTokenizerJson::parse(tok, "seed/tokenizer.json", {});
        kvlens::HfSentencePieceJson::parse(spm, "seed/tokenizer.json", {});
    } catch (const std::exception& e) {
        std::fprintf(stderr, "a seed does not parse: %s\n", e.what());
        return 1;
    }
    kvlens::test::FuzzMutator mut(seed);
    uint64_t accepted = 0, rejected = 0;
    for (uint64_t it = 0; it < iterations; ++it) {
        const size_t kind = it % 4;
        std::string input = kind == 0 ? stSeed : kind == 1 ? configs[mut.below(configs.size())] : kind == 2 ? tok : spm;
        mut.mutate(input);
        if (verbose) std::printf("iteration %llu kind %zu (%zu bytes)\n", (unsigned long long)it, kind, input.size());
        try {
            if (kind == 0) {
                kvlens::SafetensorsFile f(std::vector<uint8_t>(input.begin(), input.end()), "fuzz.safetensors");
                volatile uint64_t sum = 0;
                for (const kvlens::SafetensorsTensor& t : f.tensors())
                    for (uint64_t b = t.begin; b < t.end; ++b) sum = sum + f.data(t)[b - t.begin];
            } else if (kind == 1) {
                kvlens::HfConfig::parse(input, "fuzz/config.json");
            } else if (kind == 3) {
                kvlens::HfTokenizerJson::Extras extras;
                extras.vocabSize = 320;
                const auto t = kvlens::HfSentencePieceJson::parse(input, "fuzz/tokenizer.json", extras);
                for (const char* text : {"ab abc <t> x xa  b", " na\u00efve </s>  caf\u00e9 \xF0\x9F\xA6\x99", ""}) {
                    const std::vector<int32_t> ids = t->encode(text, true, true);
                    (void)t->decode(ids);
                }
            } else {
                kvlens::HfTokenizerJson::Extras extras;
                extras.vocabSize = 300;
                const auto t = kvlens::HfTokenizerJson::parse(input, "fuzz/tokenizer.json", extras);
                for (const char* text : {"the cat <x> sat 12345", "naïve <|end|> café", ""}) {
                    const std::vector<int32_t> ids = t->encode(text, true, true);
                    (void)t->decode(ids);
                }
            }
            ++accepted;
        } catch (const kvlens::Error& e) {
            const std::string m = e.what();
            if (m.empty() || m.find('\n') != std::string::npos) {
                std::fprintf(stderr, "iteration %llu: a message that is not one line: '%s'\n", (unsigned long long)it,
                             m.c_str());
                saveFailure(input);
                return 1;
            }
            ++rejected;
        } catch (const std::exception& e) {
            std::fprintf(stderr, "iteration %llu (kind %zu): %s thrown instead of kvlens::Error\n",
                         (unsigned long long)it, kind, e.what());
            saveFailure(input);
            return 1;
        }
    }
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::printf("hf fuzz: %llu iterations, %llu accepted, %llu rejected with one line, %.1f s\n",
                (unsigned long long)iterations, (unsigned long long)accepted, (unsigned long long)rejected, s);
    return 0;
}
