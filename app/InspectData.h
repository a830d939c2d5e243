// Everything `kvlens inspect` measured on one prompt, ready to draw: the
// per-layer attention statistics, the chosen method's selection and the other
// methods' at the same budget, their hit rates and overlaps, the KV memory per
// layer, and the tile pyramids of the requested heads' full attention maps.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/Selection.h"
#include "core/AttentionSummary.h"
#include "engine/analysis/HitRate.h"
#include "viz/TilePyramid.h"

namespace kvlens {

struct InspectData {
    struct MethodResult {
        PressParams params;
        Selection selection;
        HitRate::Result hitRate;
        std::vector<double> overlap;  // Jaccard with the chosen method's selection, per layer
    };
    struct Map {
        int64_t layer = 0, head = 0;
        viz::TilePyramid pyramid;
    };

    std::string model;          // as given to --model
    std::string methodLabel;    // the chosen method, "snapkv B=128 W=32 k=7 max kv-head"
    int64_t promptLength = 0;
    int64_t layers = 0, queryHeads = 0, kvHeads = 0, headDim = 0, elementBytes = 0;
    // Per layer the full cache's K and V bytes (Capture::fullCacheBytes: a local layer's window).
    std::vector<int64_t> fullBytesPerLayer;
    std::vector<LayerAttentionSummary> stats;
    std::vector<MethodResult> methods;  // the chosen method first
    int64_t hitSteps = 0, hitK = 0;
    std::vector<Map> maps;

    const MethodResult& chosen() const { return methods.front(); }
    // KV bytes of layer `layer`: the full cache's (a local layer's: its window's) and what
    // `selection` keeps (without the key channels ThinK pruned).
    int64_t fullBytes(int64_t layer) const { return fullBytesPerLayer[static_cast<size_t>(layer)]; }
    int64_t keptBytes(const Selection& selection, int64_t layer) const {
        return selection.bytes(layer, headDim, elementBytes);
    }
    // "stories260K.gguf, 922-token prompt", for titles: the model file's name
    // (or the random: spec) and the prompt length.
    std::string context() const {
        const size_t slash = model.rfind('/');
        const std::string name = model.rfind("random:", 0) == 0 || slash == std::string::npos ? model
                                                                                              : model.substr(slash + 1);
        return name + ", " + std::to_string(promptLength) + "-token prompt";
    }
};

}  // namespace kvlens
