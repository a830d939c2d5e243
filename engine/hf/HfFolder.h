// A Hugging Face checkpoint folder: config.json (HfConfig), the weights
// (model.safetensors, or the shards model.safetensors.index.json lists, all
// mapped and their headers checked when the folder is opened), the tokenizer
// (tokenizer.json, or tokenizer.model through SentencePiece), and what
// tokenizer_config.json and generation_config.json add (BOS/EOS, add_bos_token,
// chat_template, the EOS list). Every problem is one line naming the file.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "engine/hf/HfConfig.h"
#include "engine/hf/SafetensorsFile.h"
#include "engine/tokenizer/Tokenizer.h"

namespace kvlens {

class HfFolder {
public:
    // Throws kvlens::Error: no config.json, an unsupported architecture, neither weights nor
    // a tokenizer, a missing shard, a tensor the index puts in a shard that lacks it.
    explicit HfFolder(const std::string& dir);

    // Whether `path` names a directory (a --model that is a folder).
    static bool isFolder(const std::string& path);

    const std::string& dir() const { return dir_; }
    const HfConfig& config() const { return config_; }
    // The weight files, sorted by name (paths in the folder).
    std::vector<std::string> weightFiles() const;
    const std::vector<std::shared_ptr<const SafetensorsFile>>& shards() const { return shards_; }
    // The tensor and the shard that holds it, or nullptr.
    const SafetensorsTensor* findTensor(const std::string& name,
                                        std::shared_ptr<const SafetensorsFile>* shard = nullptr) const;
    int64_t weightBytes() const;  // of all shards
    // False for a tokenizer-only folder: config.json and a tokenizer, no weight files.
    bool hasWeights() const { return !shards_.empty(); }

    // The tokenizer, its vocabulary padded to config.json's vocab_size with unused
    // entries where the model has more rows than the tokenizer has tokens.
    std::unique_ptr<Tokenizer> tokenizer() const;
    // "tokenizer.json (byte-level BPE)" / "tokenizer.model (SentencePiece)".
    std::string tokenizerDescription() const;
    // tokenizer_config.json's chat_template (a string, or the "default" of a list).
    std::optional<std::string> chatTemplate() const;

private:
    std::string file(const std::string& name) const { return dir_ + "/" + name; }
    // Throws when config.json's layer count is not the layers the weights hold.
    void checkLayerCount() const;

    std::string dir_;
    HfConfig config_;
    std::vector<std::shared_ptr<const SafetensorsFile>> shards_;
    std::map<std::string, size_t> where_;  // tensor -> shard
};

}  // namespace kvlens
