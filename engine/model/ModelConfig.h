// The shape and hyper-parameters of a Llama-family model, read from GGUF
// metadata or taken from a random-weight preset.
#pragma once

#include <cstdint>
#include <string>

#include "core/ModelShape.h"
#include "engine/model/ArchitectureTraits.h"

namespace kvlens {

class GgufFile;

enum class RopeScaling { None, Linear, Yarn };

struct ModelConfig {
    std::string architecture = "llama";  // llama | mistral | qwen2 | qwen3 | phi3
    std::string name;                    // general.name or the preset
    int64_t nLayers = 0;
    int64_t nHeads = 0;
    int64_t nKvHeads = 0;
    int64_t headDim = 0;
    int64_t embedDim = 0;
    int64_t ffnDim = 0;
    int64_t vocabSize = 0;
    int64_t contextLength = 0;
    int64_t ropeDim = 0;  // rotated dimensions per head (<= headDim)
    double ropeTheta = 10000.0;
    double rmsEps = 1e-5;
    RopeStyle ropeStyle = RopeStyle::Adjacent;
    bool qkvBias = false;  // qwen2
    bool qkNorm = false;   // qwen3: RMSNorm of each q and k head before RoPE
    // rope.scaling.*: the type, its factor, the context the model was trained at
    // before the extension (yarn) and the attention factor (yarn); RopeFrequencies
    // turns them into frequencies.
    RopeScaling ropeScaling = RopeScaling::None;
    double ropeScaleFactor = 1.0;
    int64_t ropeOriginalContext = 0;
    double ropeAttnFactor = 1.0;
    // A sliding window of attention (Phi-3's attention.sliding_window, a Hugging Face
    // config's sliding_window where it applies): a query at position p attends to keys
    // after p - slidingWindow, on every layer. 0: none. LlamaModel's forward applies it;
    // the compression methods refuse a sequence past it (LlamaModel::requireWithinWindow).
    int64_t slidingWindow = 0;

    // Bytes of K and V for one token over all layers, at `bytesPerElement`.
    int64_t kvBytesPerToken(int64_t bytesPerElement) const {
        return 2 * nLayers * nKvHeads * headDim * bytesPerElement;
    }
    int64_t groupSize() const { return nHeads / nKvHeads; }
    // What the GUI, the store and the reports record of it.
    ModelShape shape() const;

    // Reads and checks `<arch>.*` metadata. Throws kvlens::Error naming the
    // file and key on a missing key, an unknown architecture or bad values.
    static ModelConfig fromGguf(const GgufFile& file);

    // Throws kvlens::Error when the numbers cannot describe a model
    // (`source` names the file or preset in the message).
    void validate(const std::string& source) const;
};

}  // namespace kvlens
