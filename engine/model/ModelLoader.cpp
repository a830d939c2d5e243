#include "engine/model/ModelLoader.h"

#include <cstdio>
#include <fstream>
#include <sstream>

#include "engine/tokenizer/ByteTokenizer.h"
#include "core/Error.h"
#include "engine/gguf/GgufFile.h"
#include "engine/hf/HfFolder.h"
#include "engine/hf/HfWeightLoader.h"
#include "engine/tokenizer/GgufTokenizer.h"

namespace kvlens {
namespace {

std::string gigabytes(int64_t bytes) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.1f GB", double(bytes) / 1e9);
    return buf;
}

void checkFits(const std::string& what, int64_t needed, c10::Device device) {
    if (!device.is_cpu()) return;
    const int64_t available = availableMemoryBytes();
    if (available > 0 && needed > available) {
        throw Error(what + ": the weights need " + gigabytes(needed) + " but only " +
                    gigabytes(available) +
                    " of memory is available (try --dtype bf16, or :layers=N for a random preset)");
    }
}

}  // namespace

int64_t availableMemoryBytes() {
    std::ifstream meminfo("/proc/meminfo");
    std::string line;
    while (std::getline(meminfo, line)) {
        if (line.rfind("MemAvailable:", 0) == 0) {
            std::istringstream in(line.substr(13));
            int64_t kb = 0;
            in >> kb;
            return kb * 1024;
        }
    }
    return -1;
}

std::unique_ptr<Tokenizer> loadTokenizer(const std::string& specText) {
    const ModelSpec spec = ModelSpec::parse(specText);
    if (spec.kind == ModelSpec::Kind::Random) {
        return std::make_unique<ByteTokenizer>(static_cast<int32_t>(spec.randomConfig().vocabSize));
    }
    if (HfFolder::isFolder(spec.path)) return HfFolder(spec.path).tokenizer();
    GgufFile file(spec.path);
    return GgufTokenizer::fromGguf(file);
}

std::optional<std::string> loadChatTemplate(const std::string& specText) {
    const ModelSpec spec = ModelSpec::parse(specText);
    if (spec.kind == ModelSpec::Kind::Random) return std::nullopt;
    if (HfFolder::isFolder(spec.path)) return HfFolder(spec.path).chatTemplate();
    GgufFile file(spec.path);
    if (!file.has("tokenizer.chat_template")) return std::nullopt;
    return file.getString("tokenizer.chat_template");
}

LoadedModel loadModel(const std::string& specText, c10::Device device, c10::ScalarType dtype,
                      const ProgressFn& progress) {
    LoadedModel loaded;
    loaded.spec = ModelSpec::parse(specText);
    if (loaded.spec.kind == ModelSpec::Kind::Random) {
        ModelConfig config = loaded.spec.randomConfig();
        checkFits(specText, ModelWeights::estimateBytes(config, dtype), device);
        loaded.tokenizer = std::make_unique<ByteTokenizer>(static_cast<int32_t>(config.vocabSize));
        ModelWeights weights = ModelWeights::random(config, loaded.spec.seed, device, dtype, progress);
        loaded.model = std::make_unique<LlamaModel>(config, std::move(weights), device, dtype);
        return loaded;
    }
    if (HfFolder::isFolder(loaded.spec.path)) {
        const HfFolder folder(loaded.spec.path);
        if (!folder.hasWeights()) {
            throw Error(folder.dir() + ": no weights (model.safetensors or model.safetensors.index.json) to run; "
                                       "kvlens tokenize and kvlens info read a tokenizer-only folder");
        }
        const ModelConfig& config = folder.config().model;
        loaded.tokenizer = folder.tokenizer();
        loaded.chatTemplate = folder.chatTemplate();
        checkFits(folder.dir(), HfWeightLoader::denseBytes(folder, device, dtype), device);
        ModelWeights weights = HfWeightLoader::load(folder, device, dtype, progress);
        loaded.model = std::make_unique<LlamaModel>(config, std::move(weights), device, dtype);
        return loaded;
    }
    const auto filePtr = std::make_shared<GgufFile>(loaded.spec.path);
    const GgufFile& file = *filePtr;
    if (file.tensors().empty() && file.has("tokenizer.ggml.model")) {
        throw Error(file.path() + ": a vocab-only GGUF (tokenizer metadata, no tensors) has no weights to "
                                  "run; kvlens tokenize and kvlens info read it");
    }
    ModelConfig config = ModelConfig::fromGguf(file);
    auto tokenizer = GgufTokenizer::fromGguf(file);
    if (tokenizer->vocabSize() != config.vocabSize) {
        throw Error(file.path() + ": tokenizer.ggml.tokens has " +
                    std::to_string(tokenizer->vocabSize()) + " entries but the model's vocabulary is " +
                    std::to_string(config.vocabSize));
    }
    checkFits(file.path(), ModelWeights::denseBytes(file, config, device, dtype), device);
    // CPU weights are read in place: from a copy in (huge-page) memory, which decode
    // streams faster than the file's mapping.
    if (ModelWeights::readsInPlace(file, device)) {
        filePtr->loadIntoMemory([&](double f) {
            if (progress) progress(0.0, "reading " + std::to_string(static_cast<int>(100 * f)) + "% of the file");
        });
    }
    ModelWeights weights = ModelWeights::fromGguf(filePtr, config, device, dtype, progress);
    loaded.tokenizer = std::move(tokenizer);
    loaded.model = std::make_unique<LlamaModel>(config, std::move(weights), device, dtype);
    if (file.has("tokenizer.chat_template")) loaded.chatTemplate = file.getString("tokenizer.chat_template");
    return loaded;
}

}  // namespace kvlens
