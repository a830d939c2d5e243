// Opening a Hugging Face folder: config, weight index, shards, tokenizer files.
#include "engine/hf/HfFolder.h"

#include <cctype>

#include <sys/stat.h>

#include <algorithm>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "core/Error.h"
#include "engine/hf/HfSentencePieceJson.h"
#include "engine/hf/HfTokenizerJson.h"
#include "engine/hf/Quoted.h"
#include "engine/tokenizer/SentencePieceTokenizer.h"

namespace kvlens {
namespace {

using json = nlohmann::json;

constexpr int64_t kMaxJsonBytes = int64_t(256) << 20;

bool exists(const std::string& path) {
    struct stat st;
    return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

std::string readText(const std::string& path) {
    std::ifstream in(path, std::ios::binary | std::ios::ate);
    if (!in) throw Error(path + ": cannot open");
    const std::streamoff size = in.tellg();
    if (size > kMaxJsonBytes) throw Error(path + ": " + std::to_string(size) + " bytes is too large for a JSON file");
    in.seekg(0);
    std::string text(static_cast<size_t>(size), '\0');
    in.read(text.data(), size);
    if (!in) throw Error(path + ": cannot read");
    return text;
}

json readJson(const std::string& path) {
    const std::string text = readText(path);
    try {
        json j = json::parse(text);
        if (!j.is_object()) throw Error(path + ": not a JSON object");
        return j;
    } catch (const json::exception& e) {
        std::string what = e.what();
        if (const size_t p = what.find("] "); p != std::string::npos) what = what.substr(p + 2);
        throw Error(path + ": not valid JSON: " + what);
    }
}

// tokenizer_config.json's bos_token / eos_token: a string or {"content": ...}.
std::string tokenText(const json& config, const char* field, const std::string& path) {
    const auto it = config.find(field);
    if (it == config.end() || it->is_null()) return "";
    if (it->is_string()) return it->get<std::string>();
    if (it->is_object() && it->contains("content") && (*it)["content"].is_string()) {
        return (*it)["content"].get<std::string>();
    }
    throw Error(path + ": field '" + field + "' is neither a token text nor {\"content\": ...}");
}

std::vector<int32_t> idList(const json& j, const char* field, const std::string& path) {
    std::vector<int32_t> ids;
    const auto it = j.find(field);
    if (it == j.end() || it->is_null()) return ids;
    auto one = [&](const json& x) {
        if (!x.is_number_integer() || x.get<int64_t>() < 0 || x.get<int64_t>() > INT32_MAX) {
            throw Error(path + ": field '" + field + "' must be a token id or a list of them");
        }
        ids.push_back(static_cast<int32_t>(x.get<int64_t>()));
    };
    if (it->is_array()) {
        for (const json& x : *it) one(x);
    } else {
        one(*it);
    }
    return ids;
}

}  // namespace

bool HfFolder::isFolder(const std::string& path) {
    struct stat st;
    return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

HfFolder::HfFolder(const std::string& dirIn) : dir_(dirIn) {
    while (dir_.size() > 1 && dir_.back() == '/') dir_.pop_back();
    if (!isFolder(dir_)) throw Error(dir_ + ": not a folder");
    if (!exists(file("config.json"))) {
        throw Error(dir_ + ": no config.json; a Hugging Face model folder holds config.json, "
                           "the weights as safetensors and the tokenizer");
    }
    config_ = HfConfig::parse(readText(file("config.json")), file("config.json"));

    // The weights: one file, or the shards the index names.
    std::vector<std::string> names;
    std::map<std::string, std::string> listed;  // tensor -> shard file, from the index
    const std::string index = "model.safetensors.index.json";
    if (exists(file(index))) {
        const json j = readJson(file(index));
        const auto map = j.find("weight_map");
        if (map == j.end() || !map->is_object()) {
            throw Error(file(index) + ": field 'weight_map' is missing or not an object");
        }
        for (auto it = map->begin(); it != map->end(); ++it) {
            if (!it.value().is_string()) throw Error(file(index) + ": weight_map entry " + quotedText(it.key()) + " is not a file name");
            const std::string shard = it.value().get<std::string>();
            if (shard.empty() || shard.find('/') != std::string::npos || shard == "." || shard == "..") {
                throw Error(file(index) + ": weight_map entry " + quotedText(it.key()) + " names " + quotedText(shard) +
                            ", not a file in the folder");
            }
            if (std::find(names.begin(), names.end(), shard) == names.end()) names.push_back(shard);
            listed[it.key()] = shard;
        }
        if (names.empty()) throw Error(file(index) + ": weight_map lists no tensors");
        std::sort(names.begin(), names.end());
        for (const std::string& n : names) {
            if (!exists(file(n))) {
                std::string example;
                for (const auto& [tensor, shard] : listed)
                    if (shard == n) { example = tensor; break; }
                throw Error(file(n) + ": missing shard (" + index + " puts " + quotedText(example) + " in it)");
            }
        }
    } else if (exists(file("model.safetensors"))) {
        names.push_back("model.safetensors");
    } else if (exists(file("pytorch_model.bin")) || exists(file("pytorch_model.bin.index.json"))) {
        throw Error(dir_ + ": the weights are PyTorch pickles (pytorch_model.bin); KV Lens reads safetensors "
                           "(model.safetensors or model.safetensors.index.json)");
    } else if (!exists(file("tokenizer.json")) && !exists(file("tokenizer.model"))) {
        throw Error(dir_ + ": no weights (model.safetensors or model.safetensors.index.json)");
    }
    // No weights but a tokenizer: a tokenizer-only folder (tokenize and info read it; loading
    // the model says there are no weights).
    for (size_t i = 0; i < names.size(); ++i) {
        shards_.push_back(std::make_shared<const SafetensorsFile>(file(names[i])));
        for (const SafetensorsTensor& t : shards_.back()->tensors()) {
            const auto [it, added] = where_.emplace(t.name, i);
            if (!added) {
                throw Error(file(names[i]) + ": tensor " + quotedText(t.name) + " is also in " + file(names[it->second]));
            }
        }
    }
    for (const auto& [tensor, shard] : listed) {
        const auto it = where_.find(tensor);
        if (it == where_.end() || names[it->second] != shard) {
            throw Error(file(shard) + ": tensor " + quotedText(tensor) + " is not in it, though " + index + " says so");
        }
    }
    checkLayerCount();
}

// config.json's num_hidden_layers against the layers the weights hold ("...layers.<i>."
// in the tensors' names), when they are named so: info (which reads no weights) and
// generate (which would miss the first absent layer) refuse the same folder alike.
void HfFolder::checkLayerCount() const {
    int64_t highest = -1;
    for (const auto& [name, shard] : where_) {
        // A multimodal checkpoint's vision tower has layers of its own: the text model's only.
        if (config_.multimodal && name.rfind("model.language_model.", 0) != 0 && name.rfind("language_model.", 0) != 0)
            continue;
        for (size_t at = name.find("layers."); at != std::string::npos; at = name.find("layers.", at + 1)) {
            if (at > 0 && name[at - 1] != '.') continue;
            size_t digits = at + 7, end = digits;
            while (end < name.size() && end - digits < 12 && std::isdigit(static_cast<unsigned char>(name[end]))) ++end;
            if (end == digits || end >= name.size() || name[end] != '.') continue;
            highest = std::max<int64_t>(highest, std::stoll(name.substr(digits, end - digits)));
            break;
        }
    }
    if (highest < 0) return;  // another naming: the loader names the first tensor it misses
    const int64_t layers = config_.model.nLayers;
    if (layers != highest + 1) {
        throw Error(file("config.json") + ": " + (config_.multimodal ? "text_config." : "") + "num_hidden_layers is " +
                    std::to_string(layers) +
                    ", but the weights hold layers 0-" + std::to_string(highest) + " (" + std::to_string(highest + 1) +
                    ")");
    }
}

std::vector<std::string> HfFolder::weightFiles() const {
    std::vector<std::string> out;
    for (const auto& s : shards_) out.push_back(s->path());
    return out;
}

const SafetensorsTensor* HfFolder::findTensor(const std::string& name,
                                              std::shared_ptr<const SafetensorsFile>* shard) const {
    const auto it = where_.find(name);
    if (it == where_.end()) return nullptr;
    if (shard) *shard = shards_[it->second];
    return shards_[it->second]->find(name);
}

int64_t HfFolder::weightBytes() const {
    int64_t total = 0;
    for (const auto& s : shards_) total += static_cast<int64_t>(s->fileSize());
    return total;
}

std::unique_ptr<Tokenizer> HfFolder::tokenizer() const {
    json tokConfig = json::object();
    if (exists(file("tokenizer_config.json"))) tokConfig = readJson(file("tokenizer_config.json"));
    std::vector<int32_t> endIds = config_.eosIds;
    if (exists(file("generation_config.json"))) {
        const json gen = readJson(file("generation_config.json"));
        for (int32_t id : idList(gen, "eos_token_id", file("generation_config.json"))) {
            if (std::find(endIds.begin(), endIds.end(), id) == endIds.end()) endIds.push_back(id);
        }
    }
    int addBos = -1;
    if (const auto it = tokConfig.find("add_bos_token"); it != tokConfig.end() && !it->is_null()) {
        if (!it->is_boolean()) throw Error(file("tokenizer_config.json") + ": field 'add_bos_token' is not true or false");
        addBos = it->get<bool>() ? 1 : 0;
    }
    const bool haveJson = exists(file("tokenizer.json")), haveModel = exists(file("tokenizer.model"));
    const std::string jsonText = haveJson ? readText(file("tokenizer.json")) : std::string();
    // A SentencePiece-style tokenizer.json beside a tokenizer.model: the model file is read
    // (libsentencepiece itself); without one, tokenizer.json is read as Hugging Face runs it.
    const bool sentencePieceStyle = haveJson && HfTokenizerJson::sentencePieceStyle(jsonText);
    HfTokenizerJson::Extras e;
    if (haveJson && !(sentencePieceStyle && haveModel)) {
        e.bosToken = tokenText(tokConfig, "bos_token", file("tokenizer_config.json"));
        e.eosToken = tokenText(tokConfig, "eos_token", file("tokenizer_config.json"));
        e.addBos = addBos;
        e.endIds = endIds;
        e.vocabSize = config_.model.vocabSize;
    }
    auto checkSize = [&](auto t) {
        if (t->vocabSize() != config_.model.vocabSize) {
            throw Error(file("tokenizer.json") + ": " + std::to_string(t->vocabSize()) +
                        " tokens, more than config.json's vocab_size " + std::to_string(config_.model.vocabSize));
        }
        return std::unique_ptr<Tokenizer>(std::move(t));
    };
    if (haveJson && !sentencePieceStyle) return checkSize(HfTokenizerJson::parse(jsonText, file("tokenizer.json"), e));
    if (haveJson && !haveModel) return checkSize(HfSentencePieceJson::parse(jsonText, file("tokenizer.json"), e));
    if (haveModel) {
        SentencePieceTokenizer::Options o;
        o.addBos = addBos;
        o.endIds = endIds;
        o.vocabSize = config_.model.vocabSize;
        auto t = SentencePieceTokenizer::fromFile(file("tokenizer.model"), o);
        if (t->vocabSize() != config_.model.vocabSize) {
            throw Error(file("tokenizer.model") + ": " + std::to_string(t->vocabSize()) +
                        " pieces, more than config.json's vocab_size " + std::to_string(config_.model.vocabSize));
        }
        return t;
    }
    throw Error(dir_ + ": no tokenizer (tokenizer.json or tokenizer.model)");
}

std::string HfFolder::tokenizerDescription() const {
    const bool haveModel = exists(file("tokenizer.model"));
    if (exists(file("tokenizer.json"))) {
        const std::string text = readText(file("tokenizer.json"));
        if (!HfTokenizerJson::sentencePieceStyle(text)) return "tokenizer.json (" + HfTokenizerJson::describe(text) + ")";
        if (!haveModel) return "tokenizer.json (" + HfSentencePieceJson::describe(text) + ")";
    }
    if (haveModel) return "tokenizer.model (SentencePiece)";
    return "none";
}

std::optional<std::string> HfFolder::chatTemplate() const {
    // transformers gives chat_template.jinja precedence over tokenizer_config.json's.
    if (exists(file("chat_template.jinja"))) return readText(file("chat_template.jinja"));
    if (!exists(file("tokenizer_config.json"))) return std::nullopt;
    const json j = readJson(file("tokenizer_config.json"));
    const auto it = j.find("chat_template");
    if (it == j.end() || it->is_null()) return std::nullopt;
    if (it->is_string()) return it->get<std::string>();
    if (it->is_array()) {  // [{"name": "default", "template": ...}, ...]
        for (const json& t : *it) {
            if (t.is_object() && t.contains("name") && t["name"] == "default" && t.contains("template") &&
                t["template"].is_string()) {
                return t["template"].get<std::string>();
            }
        }
    }
    throw Error(file("tokenizer_config.json") + ": field 'chat_template' is neither a template nor a list with a default");
}

}  // namespace kvlens
