// CAKE (Qin et al., ICLR 2025, "CAKE: Cascading and Adaptive KV Cache Eviction with
// Layer Preferences"): the layers share L x (B - W - sinks) entries in proportion to
// their preference, entropy^(1/tau1) x variance^(1/tau2) of the window's attention
// (presses::cakeDispersion, presses::cakeLayerBudgets); each layer then keeps, per KV
// head, its window and the best of its budget by CAKE's eviction indicator (the window
// attention's mean + gamma x variance, presses::cakeIndicator) or by any --scorer.
// Defaults as the authors' code: tau1 = tau2 = 1, gamma = 200, the indicator pooled
// over 5 positions. Their cascading management evicts layer by layer during the
// prefill and ends at these budgets; here the capture holds every layer, so the
// allocation is made once. Their code keeps everything when T <= B + W; here a budget
// below T compresses.
#pragma once

#include "engine/compress/presses/Press.h"

namespace kvlens {

class CakePress : public Press {
public:
    std::vector<std::vector<float>> scores(const Capture& capture, const PressParams& params,
                                           int64_t layer) const override;
protected:
    void fill(const Capture& capture, const PressParams& params, int64_t budget,
              Selection& selection) const override;
};

}  // namespace kvlens
