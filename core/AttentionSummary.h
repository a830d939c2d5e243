// How one head spreads its attention, and the same averaged over a layer's
// heads: the numbers behind the PyramidKV paper's "information funnel".
// Plain C++ so that viz/, sessions/ and the GUI can take them without LibTorch.
#pragma once

#include <cstdint>
#include <vector>

namespace kvlens {

struct HeadAttentionSummary {
    double entropy = 0.0;             // nats, mean over the window queries
    double effectivePositions = 0.0;  // exp(entropy): positions a uniform head would spread over
    double sinkMass = 0.0;            // attention on the first 4 positions
    double localMass = 0.0;           // attention on the 64 positions ending at the query
    double positions90 = 0.0;         // fewest positions holding 90% of the attention, mean over queries
};

struct LayerAttentionSummary {
    std::vector<HeadAttentionSummary> heads;  // per query head
    HeadAttentionSummary mean;                // the heads' arithmetic mean, field by field
};

}  // namespace kvlens
