// CriticalAdaKV (Feng et al., 2025, the CriticalKV paper's AdaKV form), as kvpress's
// CriticalAdaKVPress wraps a scorer: AdaKV's allocation (AdaKvPress::keepLayer: each head's
// floor(alpha x P) safeguard, the layer's heads x P shared by a top-k over all heads) sets
// each head's budget; the head then keeps, as CriticalKV does, its safeguard and the first
// half of its budget (truncated) by the scorer alone, and the rest by (score + 1e-4) x
// ||W_o v||_1 (CriticalKvPress::keepHead). The allocation ranks the scores as AdaKV does
// (SnapKV's votes normalised per head to sum to 1, any other scorer's as they are); the two
// stages rank them as CriticalKV does (as the scorer gives them: SnapKV's pooled vote sums),
// so that stage 2's score + 1e-4 weighs the same in both. kvpress's scorers give the mean
// attention over the window instead of its sum: the 1e-4 weighs W times more there;
// --convention kvpress follows kvpress (keepLayerKvpress).
#pragma once

#include <vector>

#include "engine/compress/presses/Press.h"
#include "engine/compress/presses/PressScores.h"

namespace kvlens {

class CriticalAdaKvPress : public Press {
public:
    // One layer's kept positions per head, ascending: AdaKV's allocation of heads x `budget`
    // (AdaKvPress::keepLayer on a copy of `scores`, SnapKV's votes normalised when
    // `normalise`) sets each head's share; the head keeps it as CriticalKV does
    // (CriticalKvPress::keepHead with `norms[h]`, indexed as its scores), its first stage at
    // least AdaKV's floor(alpha x P), P = budget less the head's own always-kept (NaN)
    // positions. Its prefill and its decode form (DecodeCompressor) both.
    static std::vector<std::vector<int32_t>> keepLayer(const presses::HeadScores& scores,
                                                       const std::vector<const double*>& norms, int64_t budget,
                                                       double alpha, bool normalise);
    // --convention kvpress: kvpress's CriticalAdaKVPress on one layer. `scores` as kvpress's
    // scorer gives them (CriticalKvPress::kvpressScores; finite); n_safe = int(n_kept x alpha)
    // of each head's best go first; the heads x n_kept best of any head set each head's budget
    // b; the head keeps int(b x 0.5) by the scores (its safeguard first), the rest by
    // (score + 1e-4) x norm (fp32). Ties: the lower head, then the lower position. `ranked`
    // (when given): per head what stage 2 ranked, +inf where stage 1 or the safeguard took it.
    static std::vector<std::vector<int32_t>> keepLayerKvpress(const presses::HeadScores& scores,
                                                              const std::vector<const double*>& norms,
                                                              int64_t kept, double alpha,
                                                              std::vector<std::vector<float>>* ranked = nullptr);

public:
    std::vector<std::vector<float>> scores(const Capture& capture, const PressParams& params,
                                           int64_t layer) const override;
protected:
    void fill(const Capture& capture, const PressParams& params, int64_t budget,
              Selection& selection) const override;
};

}  // namespace kvlens
