#include "engine/model/Sampler.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include "core/Error.h"

namespace kvlens {

Sampler::Sampler(const SamplingParams& params) : params_(params), rng_(params.seed) {
    if (!(params.temperature >= 0.0) || !std::isfinite(params.temperature)) {
        throw Error("--temperature must be a finite number >= 0");
    }
    if (params.topK < 0) throw Error("--top-k must be >= 0");
    if (!(params.topP > 0.0 && params.topP <= 1.0)) throw Error("--top-p must be in (0, 1]");
}

int32_t Sampler::argmax(const float* logits, int64_t n) {
    int64_t best = 0;
    for (int64_t i = 1; i < n; ++i) {
        if (logits[i] > logits[best]) best = i;  // strict: ties keep the lowest id
    }
    return static_cast<int32_t>(best);
}

int32_t Sampler::sample(const at::Tensor& logitsTensor) {
    at::Tensor contiguous = logitsTensor.to(at::kFloat).contiguous();
    const float* logits = contiguous.data_ptr<float>();
    const int64_t n = contiguous.numel();
    if (params_.temperature <= 0.0) return argmax(logits, n);

    std::vector<int32_t> order(n);
    std::iota(order.begin(), order.end(), 0);
    const int64_t keep = params_.topK > 0 ? std::min<int64_t>(params_.topK, n) : n;
    auto higher = [&](int32_t a, int32_t b) {
        return logits[a] > logits[b] || (logits[a] == logits[b] && a < b);
    };
    std::partial_sort(order.begin(), order.begin() + keep, order.end(), higher);
    order.resize(keep);

    std::vector<double> probs(keep);
    const double top = logits[order[0]];
    double sum = 0.0;
    for (int64_t i = 0; i < keep; ++i) {
        probs[i] = std::exp((double(logits[order[i]]) - top) / params_.temperature);
        sum += probs[i];
    }
    int64_t cut = keep;
    if (params_.topP < 1.0) {
        double cumulative = 0.0;
        for (int64_t i = 0; i < keep; ++i) {
            cumulative += probs[i] / sum;
            if (cumulative >= params_.topP) {
                cut = i + 1;
                break;
            }
        }
    }
    const double total = std::accumulate(probs.begin(), probs.begin() + cut, 0.0);
    const double u = double(rng_() >> 11) * (1.0 / 9007199254740992.0) * total;
    double running = 0.0;
    for (int64_t i = 0; i < cut; ++i) {
        running += probs[i];
        if (u < running) return order[i];
    }
    return order[cut - 1];
}

}  // namespace kvlens
