#include "engine/model/ModelSpec.h"

#include <cerrno>
#include <cstdlib>
#include <fstream>
#include <map>

#include "core/Error.h"

#ifndef KVLENS_DEFAULT_SHARED_DIR
#define KVLENS_DEFAULT_SHARED_DIR "../shared"
#endif
#ifndef KVLENS_DEFAULT_MODELS_DIR
#define KVLENS_DEFAULT_MODELS_DIR "models"
#endif

namespace kvlens {
namespace {

struct Preset {
    const char* name;
    int64_t layers, embed, heads, kvHeads, ffn, vocab, context;
    double theta;
    double eps;
};

// Shapes of the published models (their config.json); weights are random.
const Preset kPresets[] = {
    {"tiny", 4, 256, 8, 4, 688, 512, 4096, 10000.0, 1e-5},
    {"tinyllama-1.1b", 22, 2048, 32, 4, 5632, 32000, 2048, 10000.0, 1e-5},
    {"llama2-7b", 32, 4096, 32, 32, 11008, 32000, 4096, 10000.0, 1e-5},
    {"llama3-8b", 32, 4096, 32, 8, 14336, 128256, 8192, 500000.0, 1e-5},
    {"mistral-7b", 32, 4096, 32, 8, 14336, 32000, 32768, 1000000.0, 1e-5},
};

const Preset* findPreset(const std::string& name) {
    for (const Preset& p : kPresets) {
        if (name == p.name) return &p;
    }
    return nullptr;
}

int64_t parseCount(const std::string& spec, const std::string& key, const std::string& value) {
    char* end = nullptr;
    errno = 0;
    const unsigned long long v = std::strtoull(value.c_str(), &end, 10);
    if (value.empty() || *end != '\0' || errno != 0 || value[0] == '-' || v > (1ull << 40)) {
        throw Error("--model " + spec + ": '" + key + "=" + value + "' is not a valid number");
    }
    return static_cast<int64_t>(v);
}

bool fileExists(const std::string& path) { return std::ifstream(path).good(); }

}  // namespace

std::vector<std::string> ModelSpec::presetNames() {
    std::vector<std::string> names;
    for (const Preset& p : kPresets) names.emplace_back(p.name);
    return names;
}

ModelSpec ModelSpec::parse(const std::string& text) {
    ModelSpec spec;
    spec.text = text;
    if (text.empty()) throw Error("--model is empty");
    if (text.rfind("random:", 0) != 0) {
        spec.kind = Kind::File;
        spec.path = text;
        return spec;
    }
    spec.kind = Kind::Random;
    std::vector<std::string> parts;
    size_t start = 7;
    while (true) {
        const size_t colon = text.find(':', start);
        parts.push_back(text.substr(start, colon == std::string::npos ? std::string::npos : colon - start));
        if (colon == std::string::npos) break;
        start = colon + 1;
    }
    spec.preset = parts[0];
    if (!findPreset(spec.preset)) {
        std::string names;
        for (const std::string& n : presetNames()) names += (names.empty() ? "" : ", ") + n;
        throw Error("--model " + text + ": unknown preset '" + spec.preset + "' (presets: " + names + ")");
    }
    for (size_t i = 1; i < parts.size(); ++i) {
        const size_t eq = parts[i].find('=');
        const std::string key = parts[i].substr(0, eq);
        const std::string value = eq == std::string::npos ? "" : parts[i].substr(eq + 1);
        if (key == "layers") {
            spec.layers = parseCount(text, key, value);
            if (spec.layers == 0) throw Error("--model " + text + ": layers must be at least 1");
        } else if (key == "seed") {
            spec.seed = static_cast<uint64_t>(parseCount(text, key, value));
        } else if (key == "ctx") {
            spec.context = parseCount(text, key, value);
            if (spec.context == 0) throw Error("--model " + text + ": ctx must be at least 1");
        } else if (key == "window") {
            spec.window = parseCount(text, key, value);
            if (spec.window < 2) throw Error("--model " + text + ": window must be at least 2");
        } else if (key == "window-period") {
            spec.windowPeriod = parseCount(text, key, value);
            if (spec.windowPeriod < 2) throw Error("--model " + text + ": window-period must be at least 2");
        } else {
            throw Error("--model " + text + ": unknown option '" + parts[i] +
                        "' (options: layers=N, seed=S, ctx=N, window=W, window-period=P)");
        }
    }
    if (spec.windowPeriod > 0 && spec.window == 0)
        throw Error("--model " + text + ": window-period needs a window=W");
    return spec;
}

ModelConfig ModelSpec::randomConfig() const {
    const Preset* p = findPreset(preset);
    if (!p) throw Error("--model " + text + ": unknown preset '" + preset + "'");
    ModelConfig c;
    c.architecture = std::string(preset).find("mistral") == 0 ? "mistral" : "llama";
    c.name = text;
    c.nLayers = layers > 0 ? layers : p->layers;
    c.embedDim = p->embed;
    c.nHeads = p->heads;
    c.nKvHeads = p->kvHeads;
    c.headDim = p->embed / p->heads;
    c.ffnDim = p->ffn;
    c.vocabSize = p->vocab;
    c.contextLength = context > 0 ? context : p->context;
    c.ropeDim = c.headDim;
    c.ropeTheta = p->theta;
    c.rmsEps = p->eps;
    c.slidingWindow = window;
    c.windowPeriod = windowPeriod;
    c.validate(text);
    return c;
}

std::string ModelSpec::resolveDefault(const std::string& flag, bool given) {
    if (given && flag.empty()) throw Error("--model is empty");
    if (!flag.empty()) return flag;
    if (const char* env = std::getenv("KVLENS_MODEL")) {
        if (*env) return env;
    }
    // The project's own retrieval testbed (models/, trained by `kvlens train-testbed`),
    // then the shared stories260K.
    const char* modelsEnv = std::getenv("KVLENS_MODELS_DIR");
    const std::string models = modelsEnv && *modelsEnv ? modelsEnv : KVLENS_DEFAULT_MODELS_DIR;
    const char* sharedEnv = std::getenv("KVLENS_SHARED_DIR");
    const std::string shared = sharedEnv && *sharedEnv ? sharedEnv : KVLENS_DEFAULT_SHARED_DIR;
    for (const std::string& candidate : {models + "/kvlens-testbed.gguf", std::string("../shared/models/stories260K.gguf"),
                                         shared + "/models/stories260K.gguf"}) {
        if (fileExists(candidate)) return candidate;
    }
    throw Error(
        "no model given: pass --model PATH.gguf (or random:<preset>, e.g. random:tiny), or set "
        "KVLENS_MODEL");
}

}  // namespace kvlens
