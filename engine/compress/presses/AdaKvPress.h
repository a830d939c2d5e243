// AdaKV (Feng et al., 2024): each layer's pool of heads x P entries, P = B - W minus
// the scorer's sinks, is shared among its heads by a global top-k over per-head
// scores, after each head is guaranteed floor(alpha x P) of its own best; every head
// keeps the window (and the scorer's sinks) too. The scores are SnapKV's pooled votes,
// normalised per head to sum to 1 as the paper's attention weights do, or those of any
// --scorer (PressParams::scorerNames) as they are, as kvpress's AdaKVPress(press) ranks
// them. Heads end up with different lengths; the compressed cache stores them so.
// --convention kvpress: kvpress's form (keepLayerKvpress): no window of its own, no
// normalisation, the safeguard int(alpha x B) on the total with what the scorer keeps whole.
#pragma once

#include <cmath>
#include <vector>

#include "engine/compress/presses/Press.h"
#include "engine/compress/presses/PressScores.h"

namespace kvlens {

class AdaKvPress : public Press {
public:
    // One layer's kept positions per head, ascending, from its per-head `scores` (NaN: always
    // kept; normalised in place per head to sum to 1 when `normalise`): the NaN ones, each
    // head's floor(alpha x P) best, then the rest of heads x P by a top-k over all heads.
    static std::vector<std::vector<int32_t>> keepLayer(presses::HeadScores& scores, int64_t budget, double alpha,
                                                       bool normalise);
    // kvpress's AdaKVPress on one layer: each head keeps its NaN positions and its best up to
    // int(kept x alpha) with them, then heads x kept in all go to the best raw scores of any head.
    static std::vector<std::vector<int32_t>> keepLayerKvpress(const presses::HeadScores& scores, int64_t kept,
                                                              double alpha);
    // Each head's guaranteed share of a pool of P ranked entries per head: floor(alpha x P).
    // SnapKV's votes as AdaKV compares them across heads: each head's (not NaN) scores
    // divided by their sum (uniform when they sum to nothing).
    static void normaliseRow(std::vector<float>& row);
    static int64_t safeguard(double alpha, int64_t pool) {
        return static_cast<int64_t>(std::floor(alpha * double(pool) + 1e-9));
    }

public:
    std::vector<std::vector<float>> scores(const Capture& capture, const PressParams& params,
                                           int64_t layer) const override;
protected:
    void fill(const Capture& capture, const PressParams& params, int64_t budget,
              Selection& selection) const override;
};

}  // namespace kvlens
