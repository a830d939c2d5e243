// How much two methods' selections agree: per layer, the Jaccard index
// |A ∩ B| / |A ∪ B| of the positions each query head reads, averaged over the
// query heads (a KV-head selection is read by its whole group). Plain C++, in
// the kvlens_core library that reports/ and the GUI link without LibTorch.
#pragma once

#include <vector>

#include "core/Selection.h"

namespace kvlens {

class SelectionOverlap {
public:
    // Whether the two were made on the same prompt length and model shape.
    static bool comparable(const Selection& a, const Selection& b);
    // Throws kvlens::Error when they are not comparable.
    static std::vector<double> jaccardPerLayer(const Selection& a, const Selection& b);
    // Of two ascending position lists; 1 when both are empty.
    static double jaccard(const std::vector<int32_t>& a, const std::vector<int32_t>& b);
};

}  // namespace kvlens
