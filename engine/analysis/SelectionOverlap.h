// How much two methods' selections agree: per layer, the Jaccard index
// |A ∩ B| / |A ∪ B| of the positions each query head reads, averaged over the
// query heads (a KV-head selection is read by its whole group). Plain C++.
#pragma once

#include <vector>

#include "engine/Selection.h"

namespace kvlens {

class SelectionOverlap {
public:
    // Throws kvlens::Error when the two were made on different prompts or models.
    static std::vector<double> jaccardPerLayer(const Selection& a, const Selection& b);
    // Of two ascending position lists; 1 when both are empty.
    static double jaccard(const std::vector<int32_t>& a, const std::vector<int32_t>& b);
};

}  // namespace kvlens
