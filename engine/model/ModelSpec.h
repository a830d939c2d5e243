// What `--model` names: a GGUF path, or
// `random:<preset>[:layers=N][:seed=S][:ctx=N][:window=W[:window-period=P]]` for random
// weights of a real model's shape, so long-prompt work needs no download (window: a sliding
// window of W tokens on every layer, or with a period P on all but every P-th, as Gemma's).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "engine/model/ModelConfig.h"

namespace kvlens {

struct ModelSpec {
    enum class Kind { File, Random };
    Kind kind = Kind::File;
    std::string text;    // as the user wrote it
    std::string path;    // Kind::File
    std::string preset;  // Kind::Random
    int64_t layers = 0;  // 0: the preset's own
    uint64_t seed = 0;
    int64_t context = 0;  // 0: the preset's own
    int64_t window = 0;        // a sliding window (ModelConfig::slidingWindow); 0: none
    int64_t windowPeriod = 0;  // ModelConfig::windowPeriod; 0: every layer local

    // Throws kvlens::Error for an unknown preset or option.
    static ModelSpec parse(const std::string& text);

    // The model to use: `flag` when given, else $KVLENS_MODEL, else the project's
    // retrieval testbed models/kvlens-testbed.gguf (of the source tree, or
    // $KVLENS_MODELS_DIR), else the shared stories260K.gguf when present (in
    // ../shared, or $KVLENS_SHARED_DIR, else the shared folder beside the source
    // tree); throws kvlens::Error saying how to pass one.
    // An empty `flag` that was given (`--model ''`) is an error.
    static std::string resolveDefault(const std::string& flag, bool given);

    static std::vector<std::string> presetNames();

    // The shape of a Kind::Random spec (layers, context applied).
    ModelConfig randomConfig() const;
};

}  // namespace kvlens
