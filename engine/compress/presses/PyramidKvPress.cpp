#include "engine/compress/presses/PyramidKvPress.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "engine/compress/presses/PressScores.h"

namespace kvlens {

std::vector<int64_t> PyramidKvPress::prefixBudgets(int64_t L, int64_t T, int64_t W, int64_t B,
                                                   double beta, PyramidSchedule schedule) {
    const int64_t P = B - W;
    if (T <= B) return std::vector<int64_t>(L, T - W);
    if (schedule == PyramidSchedule::Factory) {
        if (T < 2 * P) return std::vector<int64_t>(L, P);
        int64_t minNum = static_cast<int64_t>(std::floor(double(P) / beta));
        int64_t maxNum = 2 * P - minNum;
        if (maxNum >= T - W) {
            maxNum = T - W;
            minNum = 2 * P - maxNum;
        }
        const int64_t steps = L > 1 ? (maxNum - minNum) / (L - 1) : 0;
        std::vector<int64_t> out(L);
        for (int64_t l = 0; l < L; ++l) out[l] = maxNum - l * steps;
        return out;
    }
    // Exact: the real line from maxNum to minNum has mean P; round it to integers
    // whose sum is L * P.
    double minNum = double(P) / beta, maxNum = 2.0 * P - minNum;
    if (maxNum > double(T - W)) {
        maxNum = double(T - W);
        minNum = 2.0 * P - maxNum;
    }
    std::vector<double> real(L);
    for (int64_t l = 0; l < L; ++l) {
        real[l] = L > 1 ? maxNum - double(l) * (maxNum - minNum) / double(L - 1) : double(P);
    }
    std::vector<int64_t> out(L);
    int64_t sum = 0;
    for (int64_t l = 0; l < L; ++l) {
        out[l] = std::min<int64_t>(static_cast<int64_t>(std::floor(real[l] + 1e-9)), T - W);
        sum += out[l];
    }
    std::vector<int64_t> order(L);
    std::iota(order.begin(), order.end(), 0);
    // The remainder is taken against what was kept, so a value a rounding error below n
    // (floored up to n) ranks last, not first.
    std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
        return real[a] - double(out[a]) > real[b] - double(out[b]);
    });
    // Hand out what rounding down lost, largest fractions first, never above T - W.
    for (int64_t i = 0; sum < L * P && i < 2 * L; ++i) {
        const int64_t l = order[i % L];
        if (out[l] < T - W) {
            ++out[l];
            ++sum;
        }
    }
    return out;
}

std::vector<int64_t> PyramidKvPress::kvpressBudgets(int64_t L, int64_t T, int64_t W, double kept, double beta) {
    const auto round = [](double v) { return static_cast<int64_t>(std::nearbyint(v)); };  // half to even
    const double capacity = double(W) + kept;
    double minNum = (capacity - double(W)) / beta;
    double maxNum = (capacity - double(W)) * 2 - minNum;
    if (maxNum >= double(T - W)) {
        maxNum = double(T - W);
        minNum = (capacity - double(W)) * 2 - maxNum;
    }
    if (!(double(T) >= maxNum && maxNum >= minNum && minNum >= double(W)) || L < 2)
        return std::vector<int64_t>(L, round(kept));
    const double steps = (maxNum - minNum) / double(L - 1);
    std::vector<int64_t> out(L);
    for (int64_t l = 0; l < L; ++l) out[l] = round(maxNum - double(l) * steps);
    return out;
}

void PyramidKvPress::fill(const Capture& capture, const PressParams& p, int64_t budget,
                          Selection& s) const {
    const int64_t T = capture.promptLength(), L = capture.layers();
    if (p.convention == Convention::Kvpress) {
        const double kept = p.budget > 0 ? double(p.budget) : double(T) * p.budgetRatio;
        const std::vector<int64_t> total = kvpressBudgets(L, T, p.window, kept, p.beta);
        for (int64_t l = 0; l < L; ++l) {
            const int64_t n = std::clamp<int64_t>(total[l], p.window, T);
            s.kept[l] = presses::voteSelection(capture, l, p, n - p.window);
        }
        return;
    }
    const std::vector<int64_t> prefix = prefixBudgets(L, T, p.window, budget, p.beta, p.schedule);
    for (int64_t l = 0; l < L; ++l) {
        s.kept[l] = presses::voteSelection(capture, l, p, prefix[l]);
    }
}

std::vector<std::vector<float>> PyramidKvPress::scores(const Capture& capture, const PressParams& p,
                                                       int64_t layer) const {
    return presses::windowRankedVotes(capture, layer, p);  // each layer's own budget of them
}

}  // namespace kvlens
