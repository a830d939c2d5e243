#include "engine/compress/presses/CakePress.h"

#include <cmath>

#include "engine/compress/presses/PressScores.h"

namespace kvlens {

void CakePress::fill(const Capture& capture, const PressParams& p, int64_t budget, Selection& s) const {
    std::vector<double> preferences(capture.layers());
    for (int64_t l = 0; l < capture.layers(); ++l) {
        const presses::CakeDispersion d = presses::cakeDispersion(capture, l, p);
        preferences[l] = std::pow(d.entropy, 1.0 / p.tau1) * std::pow(d.variance, 1.0 / p.tau2);
    }
    presses::keepLayerShares(capture, p, preferences, budget, s);
}

std::vector<std::vector<float>> CakePress::scores(const Capture& capture, const PressParams& p, int64_t layer) const {
    return presses::scorerScoresOrNone(capture, layer, p);
}

}  // namespace kvlens
