#include "engine/compress/presses/ThinkChannels.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <cmath>
#include <numeric>

namespace kvlens::presses {

std::vector<std::vector<std::vector<int32_t>>> thinkPrunedChannels(const Capture& capture,
                                                                   const Selection& selection) {
    const PressParams& p = selection.params;
    const int64_t D = capture.headDim(), n = static_cast<int64_t>(std::floor(double(D) * p.think));
    if (n <= 0) return {};
    const int64_t L = capture.layers(), H = capture.queryHeads(), G = H / capture.kvHeads();
    const int64_t heads = selection.headsPerLayer();
    const bool perQueryHead = selection.gqa == GqaMode::QueryHead;
    std::vector<std::vector<std::vector<int32_t>>> out(L, std::vector<std::vector<int32_t>>(heads));
    for (int64_t l = 0; l < L; ++l) {
        const at::Tensor& q = capture.windowQueries(l);  // [H, Wc, D] fp32, the last row is T-1
        const int64_t w = std::min<int64_t>(p.window, q.size(1));
        const at::Tensor window = q.narrow(1, q.size(1) - w, w).to(at::kCPU, at::kDouble);
        const at::Tensor queryEnergy = (window * window).mean(1);  // [H, D]
        const at::Tensor keys = capture.keys(l);                   // [KV, capacity, D]
        for (int64_t c = 0; c < heads; ++c) {
            const at::Tensor qe = perQueryHead ? queryEnergy[c] : queryEnergy.narrow(0, c * G, G).mean(0);
            const std::vector<int32_t>& kept = selection.kept[l][c];
            at::Tensor ke = at::zeros({D}, at::kDouble);
            if (!kept.empty()) {
                const at::Tensor idx =
                    at::tensor(std::vector<int64_t>(kept.begin(), kept.end()), at::kLong).to(keys.device());
                const at::Tensor k =
                    keys.select(0, perQueryHead ? c / G : c).index_select(0, idx).to(at::kCPU, at::kDouble);
                ke = (k * k).mean(0);
            }
            const at::Tensor score = (qe * ke).contiguous();
            const double* s = score.data_ptr<double>();
            std::vector<int32_t> order(D);
            std::iota(order.begin(), order.end(), 0);
            std::stable_sort(order.begin(), order.end(), [&](int32_t a, int32_t b) { return s[a] < s[b]; });
            std::vector<int32_t> pruned(order.begin(), order.begin() + n);
            std::sort(pruned.begin(), pruned.end());
            out[l][c] = std::move(pruned);
        }
    }
    return out;
}

}  // namespace kvlens::presses
