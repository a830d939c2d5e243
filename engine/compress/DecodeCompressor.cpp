#include "engine/compress/DecodeCompressor.h"

#include <c10/core/InferenceMode.h>

#include "core/Error.h"
#include "engine/compress/presses/PressScores.h"

namespace kvlens {

bool DecodeCompressor::supports(const std::string& method) {
    return method == "streamingllm" || method == "knorm" || method == "keydiff";
}

DecodeCompressor::DecodeCompressor(const PressParams& params, int64_t every) : params_(params), every_(every) {
    if (every < 1) throw Error("--decode-every " + std::to_string(every) + " must be at least 1");
    if (!supports(params.method)) {
        throw Error("--decode-every: " + params.method + " has no form for compression during decoding here (" +
                    supportedList() + ")");
    }
    if (params.budget <= 0) throw Error("--decode-every needs --budget in entries (a ratio of what? the cache grows)");
    budget_ = params.budget;
    if (params.method == "streamingllm" && budget_ <= params.sinks) {
        throw Error("--budget " + std::to_string(budget_) + " must exceed --sinks " + std::to_string(params.sinks) +
                    " (the budget includes the sinks)");
    }
}

std::vector<int64_t> DecodeCompressor::keptRows(const CompressedCache& cache, int64_t layer, int64_t head) const {
    const int64_t n = cache.length(layer, head);
    std::vector<int64_t> rows;
    if (params_.method == "streamingllm") {
        for (int64_t r = 0; r < params_.sinks; ++r) rows.push_back(r);
        for (int64_t r = n - (budget_ - params_.sinks); r < n; ++r) rows.push_back(r);
        return rows;
    }
    c10::InferenceMode guard;
    const at::Tensor k = cache.keys(layer)[static_cast<size_t>(head)];  // [n, D]
    const at::Tensor score =
        params_.method == "knorm" ? presses::negativeKeyNorms(k) : presses::negativeAnchorCosines(k);
    const at::Tensor s = score.to(at::kCPU).contiguous();
    const std::vector<float> values(s.data_ptr<float>(), s.data_ptr<float>() + n);
    for (int32_t r : presses::topPositions(values, budget_)) rows.push_back(r);
    return rows;
}

bool DecodeCompressor::afterStep(CompressedCache& cache) {
    if (++steps_ % every_ != 0) return false;
    bool dropped = false;
    for (int64_t l = 0; l < cache.layers(); ++l) {
        for (int64_t c = 0; c < cache.heads(); ++c) {
            if (cache.length(l, c) <= budget_) continue;
            cache.keepRows(l, c, keptRows(cache, l, c));
            dropped = true;
        }
    }
    return dropped;
}

}  // namespace kvlens
