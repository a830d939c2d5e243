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
    std::string architecture = "llama";  // llama | mistral | qwen2 | qwen3 | phi3 | gemma2 | gemma3
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
    // after p - slidingWindow, on the local layers (windowAt). 0: none. LlamaModel's forward
    // applies it, and so do the capture's scores, the selection of a local layer's positions
    // and a compressed cache's decode (Capture::slidingWindow).
    int64_t slidingWindow = 0;
    // Which layers are local: 0, every layer; n, layer l is global when (l + 1) % n == 0
    // (Gemma 2: 2, Gemma 3: 6). Kept when the window is ignored (a Gemma 3 local layer
    // keeps its own RoPE base).
    int64_t windowPeriod = 0;
    // Gemma 2 and 3.
    Activation activation = Activation::SiluGate;
    bool postNorms = false;      // attention's and the MLP's outputs RMS-normalised before each residual add
    double embedScale = 1.0;     // the embeddings are multiplied by it (Gemma: sqrt(embedDim))
    double queryScale = 0.0;     // the attention logits' scale; 0: 1 / sqrt(headDim) (Gemma: query_pre_attn_scalar^-1/2)
    double attnSoftcap = 0.0;    // attention logits -> cap * tanh(logits / cap) before the softmax; 0: none
    double finalSoftcap = 0.0;   // the output logits likewise; 0: none
    double localRopeTheta = 0.0; // Gemma 3: the local layers' RoPE base, without scaling; 0: ropeTheta on every layer

    // Whether layer l is local (windowed when a window is set).
    bool localLayer(int64_t layer) const { return windowPeriod == 0 || (layer + 1) % windowPeriod != 0; }
    // The window layer l applies: slidingWindow on a local layer, else 0.
    int64_t windowAt(int64_t layer) const { return slidingWindow > 0 && localLayer(layer) ? slidingWindow : 0; }
    // Whether layer l rotates with the local RoPE base.
    bool localRope(int64_t layer) const { return localRopeTheta > 0.0 && windowPeriod > 0 && localLayer(layer); }

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
