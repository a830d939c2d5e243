// A model's shape as the rooms above the engine see it (no LibTorch): what the
// GUI shows, what the store records, what reports print. The engine's
// ModelConfig::shape() is the one place it is filled from a model.
#pragma once

#include <cstdint>
#include <string>

namespace kvlens {

struct ModelShape {
    std::string architecture, name;
    int64_t layers = 0, heads = 0, kvHeads = 0, headDim = 0, embedDim = 0, ffnDim = 0;
    int64_t vocabSize = 0, contextLength = 0;
    double ropeTheta = 0.0;
};

}  // namespace kvlens
