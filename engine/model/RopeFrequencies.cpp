#include "engine/model/RopeFrequencies.h"

#include <algorithm>
#include <cmath>

#include "engine/model/ModelConfig.h"

namespace kvlens {

namespace {

constexpr float kBetaFast = 32.0f, kBetaSlow = 1.0f;
constexpr float kPi = 3.14159265358979323846f;

// The (fractional) pair index whose period fits `turns` times into the original context.
float correctionDim(int64_t ropeDim, int64_t originalContext, float turns, float base) {
    return static_cast<float>(ropeDim) *
           std::log(static_cast<float>(originalContext) / (turns * 2.0f * kPi)) / (2.0f * std::log(base));
}

}  // namespace

RopeFrequencies RopeFrequencies::of(const ModelConfig& c, const std::vector<float>& factors) {
    const int64_t half = c.ropeDim / 2;
    RopeFrequencies r;
    r.inverse.resize(static_cast<size_t>(half));
    for (int64_t i = 0; i < half; ++i) {
        const double f = factors.empty() ? 1.0 : double(factors[static_cast<size_t>(i)]);
        r.inverse[static_cast<size_t>(i)] =
            static_cast<float>(std::pow(c.ropeTheta, -2.0 * double(i) / double(c.ropeDim)) / f);
    }
    if (c.ropeScaling == RopeScaling::Linear) {
        for (float& v : r.inverse) v = static_cast<float>(double(v) / c.ropeScaleFactor);
    } else if (c.ropeScaling == RopeScaling::Yarn) {
        const float scale = static_cast<float>(1.0 / c.ropeScaleFactor);
        const float base = static_cast<float>(c.ropeTheta);
        const float low = std::max(0.0f, std::floor(correctionDim(c.ropeDim, c.ropeOriginalContext, kBetaFast, base)));
        const float high = std::min(static_cast<float>(c.ropeDim - 1),
                                    std::ceil(correctionDim(c.ropeDim, c.ropeOriginalContext, kBetaSlow, base)));
        for (int64_t i = 0; i < half; ++i) {
            const float y = (static_cast<float>(i) - low) / std::max(0.001f, high - low);
            const float keep = 1.0f - std::min(1.0f, std::max(0.0f, y));  // 1: extrapolate, 0: interpolate
            float& v = r.inverse[static_cast<size_t>(i)];
            v = v * scale * (1.0f - keep) + v * keep;
        }
        r.magnitude = static_cast<float>(c.ropeAttnFactor) * (1.0f + 0.1f * std::log(1.0f / scale));
    }
    return r;
}

}  // namespace kvlens
