// kvlens info: describes a model from its metadata, without loading weights.
#include <cmath>
#include <cstdio>
#include <map>
#include <nlohmann/json.hpp>

#include "app/CommandLine.h"
#include "app/Commands.h"
#include "engine/gguf/Dequantize.h"
#include "engine/gguf/GgufFile.h"
#include "engine/hf/HfFolder.h"
#include "engine/tokenizer/GgufTokenizer.h"
#include "engine/model/ModelConfig.h"
#include "engine/model/ModelSpec.h"

namespace kvlens {
namespace {

const char* kInfoHelp =
    "usage: kvlens info [--model M] [--json]\n"
    "  the model's architecture, layers, heads, KV heads, head dim, context, vocabulary,\n"
    "  tensor types and KV-cache bytes per token, read from metadata (no weights loaded);\n"
    "  M is a GGUF file, a Hugging Face folder (config.json, safetensors, tokenizer) or random:<preset>\n";

std::string humanBytes(double b) {
    const char* units[] = {"B", "KB", "MB", "GB", "TB"};
    int u = 0;
    while (b >= 1000.0 && u < 4) {
        b /= 1000.0;
        ++u;
    }
    char buf[32];
    std::snprintf(buf, sizeof buf, u == 0 ? "%.0f %s" : "%.1f %s", b, units[u]);
    return buf;
}

std::string describeTokenizer(const GgufFile& file) {
    const std::string model = file.getString("tokenizer.ggml.model");
    return model == "gpt2" ? "gpt2 (byte-level BPE, pre-tokenizer " + file.getStringOr("tokenizer.ggml.pre", "default") + ")"
                           : "llama (SentencePiece)";
}

// A vocab-only file (llama.cpp's tokenizer test files): its tokenizer, and no model.
int printVocabOnly(const GgufFile& file, const std::string& modelText, bool json) {
    const auto tok = GgufTokenizer::fromGguf(file);
    const std::string kind = describeTokenizer(file);
    const std::string source = "GGUF v" + std::to_string(file.version()) + ", " + humanBytes(double(file.fileSize())) +
                               ", vocab-only (no tensors: nothing to run)";
    if (json) {
        nlohmann::json j = {{"model", modelText}, {"source", source},     {"vocab_only", true},
                            {"vocab", tok->vocabSize()}, {"tokenizer", kind}, {"bos_id", tok->bosId()},
                            {"eos_id", tok->eosId()}, {"architecture", file.getStringOr("general.architecture", "")}};
        std::printf("%s\n", j.dump().c_str());
        return 0;
    }
    std::printf("model         %s\n", modelText.c_str());
    std::printf("source        %s\n", source.c_str());
    std::printf("architecture  %s (metadata only)\n", file.getStringOr("general.architecture", "?").c_str());
    std::printf("vocabulary    %d (%s, BOS %d, EOS %d)\n", tok->vocabSize(), kind.c_str(), tok->bosId(), tok->eosId());
    return 0;
}

}  // namespace

int runInfo(const std::vector<std::string>& argv) {
    CommandLine args("info", argv, {"--model"}, {"--json", "--help"});
    if (args.has("--help")) {
        std::fputs(kInfoHelp, stdout);
        return 0;
    }
    const std::string modelText = ModelSpec::resolveDefault(args.get("--model"), args.has("--model"));
    const ModelSpec spec = ModelSpec::parse(modelText);

    ModelConfig c;
    nlohmann::json j;
    std::map<std::string, int64_t> types;
    int64_t parameters = 0;
    int32_t bos = -1, eos = -1;
    std::string tokenizerKind;
    std::string source;
    std::vector<std::string> notes;  // extra lines a folder adds
    bool noWeights = false;          // a tokenizer-only folder
    if (spec.kind == ModelSpec::Kind::File && HfFolder::isFolder(spec.path)) {
        const HfFolder folder(spec.path);
        const HfConfig& h = folder.config();
        c = h.model;
        for (const auto& shard : folder.shards()) {
            for (const SafetensorsTensor& t : shard->tensors()) {
                types[t.dtype]++;
                parameters += t.numel();
            }
        }
        auto tok = folder.tokenizer();
        bos = tok->bosId();
        eos = tok->eosId();
        tokenizerKind = folder.tokenizerDescription();
        const size_t n = folder.shards().size();
        source = "Hugging Face folder (" + h.hfArchitecture + "), " +
                 (folder.hasWeights() ? std::to_string(n) + " safetensors file" + (n == 1 ? "" : "s") + ", " +
                                            humanBytes(double(folder.weightBytes()))
                                      : std::string("tokenizer only (no weights: nothing to run)"));
        j["tokenizer_only"] = !folder.hasWeights();
        noWeights = !folder.hasWeights();
        j["hf_architecture"] = h.hfArchitecture;
        j["weight_files"] = folder.weightFiles();
        j["tied_embeddings"] = h.tiedEmbeddings;
        j["rope_scaling"] = h.ropeScalingType;
        j["torch_dtype"] = h.torchDtype;
        j["end_of_generation"] = tok->endOfGeneration();
        j["chat_template"] = folder.chatTemplate().has_value();
        if (!h.ropeScalingType.empty()) notes.push_back("rope scaling  " + h.ropeScalingType);
        notes.push_back(std::string("embeddings    ") + (h.tiedEmbeddings ? "tied to the output" : "separate lm_head"));
    } else if (spec.kind == ModelSpec::Kind::Random) {
        c = spec.randomConfig();
        const int64_t qd = c.nHeads * c.headDim, kvd = c.nKvHeads * c.headDim, E = c.embedDim;
        parameters = c.nLayers * (E * (qd + 2 * kvd) + qd * E + 3 * E * c.ffnDim + 2 * E) +
                     2 * c.vocabSize * E + E;
        types["random"] = 0;
        tokenizerKind = "bytes";
        bos = 1;
        eos = 2;
        source = "random weights (preset " + spec.preset + ", seed " + std::to_string(spec.seed) + ")";
    } else {
        GgufFile file(spec.path);
        if (file.tensors().empty() && file.has("tokenizer.ggml.model")) {
            return printVocabOnly(file, modelText, args.has("--json"));
        }
        c = ModelConfig::fromGguf(file);
        for (const GgufTensorInfo& t : file.tensors()) {
            types[ggmlTypeName(t.type)]++;
            parameters += t.numel();
        }
        auto tok = GgufTokenizer::fromGguf(file);
        bos = tok->bosId();
        eos = tok->eosId();
        tokenizerKind = describeTokenizer(file);
        source = "GGUF v" + std::to_string(file.version()) + ", " + humanBytes(double(file.fileSize()));
    }

    j["model"] = modelText;
    j["source"] = source;
    j["name"] = c.name;
    j["architecture"] = c.architecture;
    j["layers"] = c.nLayers;
    j["heads"] = c.nHeads;
    j["kv_heads"] = c.nKvHeads;
    j["head_dim"] = c.headDim;
    j["embedding"] = c.embedDim;
    j["ffn"] = c.ffnDim;
    j["context"] = c.contextLength;
    j["vocab"] = c.vocabSize;
    j["rope_theta"] = c.ropeTheta;
    j["rope_dim"] = c.ropeDim;
    j["rms_eps"] = c.rmsEps;
    j["tokenizer"] = tokenizerKind;
    j["bos_id"] = bos;
    j["eos_id"] = eos;
    j["parameters"] = noWeights ? nlohmann::json(nullptr) : nlohmann::json(parameters);
    j["tensor_types"] = types;
    j["sliding_window"] = c.slidingWindow;
    nlohmann::json local = nlohmann::json::array();
    for (int64_t l = 0; l < c.nLayers; ++l)
        if (c.windowAt(l) > 0) local.push_back(l);
    j["sliding_window_layers"] = local;
    if (c.slidingWindow > 0) {
        const std::string where =
            c.windowPeriod == 0 ? "every layer"
                                : std::to_string(local.size()) + " local layers of " + std::to_string(c.nLayers) +
                                      " (in each run of " + std::to_string(c.windowPeriod) + ", " +
                                      std::to_string(c.windowPeriod - 1) + " local then 1 global)";
        notes.push_back("sliding window " + std::to_string(c.slidingWindow) + " tokens on " + where +
                        ": applied by generate and by the compression methods, a local layer keeping at most its "
                        "window (--sliding-window ignore attends over all)");
    }
    if (c.architecture == "gemma2" || c.architecture == "gemma3") {
        auto number = [](double v) {
            char t[32];
            std::snprintf(t, sizeof t, "%.4g", v);
            return std::string(t);
        };
        auto cap = [&](double v) { return v > 0 ? number(v) : std::string("none"); };
        notes.push_back("gemma         GeGLU (tanh GELU), norms after attention and MLP, embeddings x " + number(c.embedScale) +
                        ", query scale " + number(c.queryScale > 0 ? c.queryScale : 1.0 / std::sqrt(double(c.headDim))) +
                        ", soft-caps " + cap(c.attnSoftcap) + " (attention), " + cap(c.finalSoftcap) + " (output)");
        if (c.localRopeTheta > 0) notes.push_back("local RoPE    base " + std::to_string(int64_t(c.localRopeTheta)) + " on local layers");
    }
    j["kv_bytes_per_token"] = {{"f32", c.kvBytesPerToken(4)}, {"bf16", c.kvBytesPerToken(2)},
                               {"f16", c.kvBytesPerToken(2)}};
    if (args.has("--json")) {
        std::printf("%s\n", j.dump().c_str());
        return 0;
    }
    std::string typeText;
    for (const auto& [name, count] : types) {
        typeText += (typeText.empty() ? "" : ", ") + name + (count ? " x" + std::to_string(count) : "");
    }
    std::printf("model         %s\n", modelText.c_str());
    std::printf("source        %s\n", source.c_str());
    if (!c.name.empty() && c.name != modelText) std::printf("name          %s\n", c.name.c_str());
    std::printf("architecture  %s\n", c.architecture.c_str());
    std::printf("layers        %lld\n", (long long)c.nLayers);
    std::printf("heads         %lld query, %lld KV (group of %lld)\n", (long long)c.nHeads,
                (long long)c.nKvHeads, (long long)c.groupSize());
    std::printf("head dim      %lld (RoPE on %lld dims, theta %g, %s)\n", (long long)c.headDim,
                (long long)c.ropeDim, c.ropeTheta,
                c.ropeStyle == RopeStyle::Adjacent ? "adjacent pairs" : "halves");
    std::printf("embedding     %lld, FFN %lld\n", (long long)c.embedDim, (long long)c.ffnDim);
    std::printf("context       %lld tokens\n", (long long)c.contextLength);
    std::printf("vocabulary    %lld (%s, BOS %d, EOS %d)\n", (long long)c.vocabSize,
                tokenizerKind.c_str(), bos, eos);
    if (noWeights) {
        std::printf("parameters    - (no weights)\ntensor types  - (no weights)\n");
    } else {
        std::printf("parameters    %lld\n", (long long)parameters);
        std::printf("tensor types  %s\n", typeText.c_str());
    }
    for (const std::string& line : notes) std::printf("%s\n", line.c_str());
    std::printf("KV bytes/token %lld in f32, %lld in bf16/f16 (%s per 1K tokens in bf16)\n",
                (long long)c.kvBytesPerToken(4), (long long)c.kvBytesPerToken(2),
                humanBytes(double(c.kvBytesPerToken(2)) * 1024).c_str());
    return 0;
}

}  // namespace kvlens
