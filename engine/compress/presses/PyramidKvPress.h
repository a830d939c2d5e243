// PyramidKV: SnapKV scoring with a per-layer budget falling linearly from the
// first layer to the last (the "pyramidal information funnel").
#pragma once

#include <vector>

#include "engine/compress/presses/Press.h"

namespace kvlens {

class PyramidKvPress : public Press {
public:
    // Prefix positions (window excluded) each layer keeps for L layers, a prompt
    // of T tokens, window W, budget B (window included), and beta.
    //  factory: the reference code's integers — min = P // beta, max = 2P - min,
    //           clamped to T - W; layer l keeps max - l * ((max - min) // (L - 1));
    //           uniform P when T < 2P; everything when T <= B.
    //  exact:   the same line in real numbers, rounded by largest remainder so the
    //           layers sum to exactly L * P, each at most T - W.
    static std::vector<int64_t> prefixBudgets(int64_t layers, int64_t promptLength, int64_t window,
                                              int64_t budget, double beta, PyramidSchedule schedule);
    // kvpress's PyramidKVPress.get_layer_budget for every layer: entries per head, window
    // included, for `kept` = T(1 - r) (a real number; an entry count for --budget B), in its
    // floating-point steps: capacity W + kept; min = kept / beta, max = 2 kept - min, max capped
    // at T - W (min then 2 kept - max); out of range (not T >= max >= min >= W): round(kept) on
    // every layer (SnapKV); else round(max - l (max - min) / (L - 1)). round() is Python's: to even.
    static std::vector<int64_t> kvpressBudgets(int64_t layers, int64_t promptLength, int64_t window, double kept,
                                               double beta);

public:
    std::vector<std::vector<float>> scores(const Capture& capture, const PressParams& params,
                                           int64_t layer) const override;
protected:
    void fill(const Capture& capture, const PressParams& params, int64_t budget,
              Selection& selection) const override;
};

}  // namespace kvlens
