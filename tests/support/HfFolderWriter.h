// Writes Hugging Face checkpoint folders for tests, the way a converter would
// from a GGUF file: config.json from the GGUF's metadata, every tensor
// dequantised and renamed (q and k rows un-permuted back to Hugging Face's
// rotate-half order for llama and mistral), safetensors in F32, F16 or BF16,
// one file or shards with an index, and the vocabulary as tokenizer.json
// (byte-level BPE, with the model's own pre_tokenizer) or tokenizer.model (a
// SentencePiece ModelProto, serialised here field by field) with
// tokenizer_config.json and generation_config.json. Also raw safetensors
// images (good or hostile) and a dense F32/BF16 copy of a GGUF file, for
// comparisons the quantised original would blur.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace kvlens {
class GgufFile;
}

namespace kvlens::test {

// One tensor of a safetensors image, written verbatim (tests lie with it).
struct SafetensorsEntry {
    std::string name;
    std::string dtype;  // "F32", "F16", "BF16", ...
    std::vector<int64_t> shape;
    std::vector<uint8_t> bytes;
};
// The header (with `metadataJson` as __metadata__ when not empty) and the data.
std::vector<uint8_t> buildSafetensors(const std::vector<SafetensorsEntry>& tensors,
                                      const std::string& metadataJson = "");
// `values` in dtype F32, F16 or BF16, as bytes.
std::vector<uint8_t> encodeValues(const std::vector<float>& values, const std::string& dtype);
void writeBytes(const std::string& path, const std::vector<uint8_t>& bytes);
void writeText(const std::string& path, const std::string& text);

// Llama 3's rope_scaling, written to config.json when the GGUF carries rope_freqs.
struct Llama3Rope {
    double factor = 8.0, lowFreqFactor = 1.0, highFreqFactor = 4.0;
    int64_t originalContext = 8192;
};

struct HfWriteOptions {
    std::string dtype = "F32";  // of the weights
    int shards = 1;             // >1: model-0000i-of-0000n.safetensors with an index
    bool sentencePiece = false; // a `llama` vocabulary as tokenizer.model (else no tokenizer written for it)
    bool sentencePieceJson = false;  // a `llama` vocabulary as tokenizer.json alone (the legacy form)
    Llama3Rope llama3;
};

// The folder `dir` (created) from `gguf`: see the head of this file. Throws
// std::runtime_error when the GGUF has something the writer does not map.
void writeHfFolder(const kvlens::GgufFile& gguf, const std::string& dir, const HfWriteOptions& options = {});

// tokenizer.json for a `gpt2` GGUF vocabulary, with the pre_tokenizer and
// normalizer the model family's own tokenizer.json has (by tokenizer.ggml.pre).
std::string tokenizerJsonFromGguf(const kvlens::GgufFile& gguf);
// tokenizer.json for a `llama` GGUF vocabulary as transformers' LlamaConverter
// writes it: model.vocab the SentencePiece pieces, merges from them as its
// SentencePieceExtractor makes them (each piece's splits into two pieces,
// ordered by the piece's score), byte_fallback, <unk> with fuse_unk, the
// control and user-defined tokens as added_tokens (Phi-3's rstrip as its own
// file sets it). Legacy: normalizer Prepend '▁' + Replace ' ' -> '▁' and the
// Strip decoder (Llama 2's file); Metaspace: the Metaspace pre-tokenizer with
// prepend_scheme "first" (legacy = false).
enum class SentencePieceJsonStyle { Legacy, Metaspace };
std::string sentencePieceTokenizerJsonFromGguf(const kvlens::GgufFile& gguf,
                                               SentencePieceJsonStyle style = SentencePieceJsonStyle::Legacy);
// A serialised SentencePiece ModelProto (BPE, byte fallback, identity
// normalisation, dummy prefix) for a `llama` GGUF vocabulary.
std::string sentencePieceModelFromGguf(const kvlens::GgufFile& gguf);

// `gguf` with every 2-D tensor dequantised and stored as `type` ("F32" or
// "BF16"; 1-D tensors as F32), the metadata copied.
void writeDenseGguf(const kvlens::GgufFile& gguf, const std::string& path, const std::string& type);

}  // namespace kvlens::test
