// LagKV's score in double precision from its definition (Liang et al., 2025), for the
// references of LagKV as a method and as a wrapper's --scorer: after the sinks, partitions
// of `lag` positions, each scored against the next one's per-channel range.
#pragma once

#include <ATen/ATen.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <vector>

namespace kvlens::test {

using Rows = std::vector<std::vector<double>>;  // [position][channel]

inline Rows rowsOf(const at::Tensor& t /*[heads, T, D]*/, int64_t head) {
    const at::Tensor d = t.to(at::kDouble).contiguous();
    const auto a = d.accessor<double, 3>();
    Rows out(d.size(1), std::vector<double>(d.size(2)));
    for (int64_t i = 0; i < d.size(1); ++i)
        for (int64_t c = 0; c < d.size(2); ++c) out[i][c] = a[head][i][c];
    return out;
}

// LagKV's score of the positions of partition [from, from + L) with the next partition as
// reference, for one state (keys or values): per channel, (x - min) / (max - min) over the
// reference; the channels' sample standard deviation; a softmax over the partition.
inline std::vector<double> lagStateReference(const Rows& x, int64_t from, int64_t L) {
    const int64_t D = int64_t(x[0].size());
    std::vector<double> spread(L);
    for (int64_t t = 0; t < L; ++t) {
        std::vector<double> norm(D);
        for (int64_t c = 0; c < D; ++c) {
            double lo = INFINITY, hi = -INFINITY;
            for (int64_t r = from + L; r < from + 2 * L; ++r) {
                lo = std::min(lo, x[r][c]);
                hi = std::max(hi, x[r][c]);
            }
            norm[c] = hi > lo ? (x[from + t][c] - lo) / (hi - lo) : 0.0;
        }
        const double mean = std::accumulate(norm.begin(), norm.end(), 0.0) / double(D);
        double ss = 0.0;
        for (double n : norm) ss += (n - mean) * (n - mean);
        spread[t] = std::sqrt(ss / double(D - 1));
    }
    const double top = *std::max_element(spread.begin(), spread.end());
    double z = 0.0;
    for (double& s : spread) z += (s = std::exp(s - top));
    for (double& s : spread) s /= z;
    return spread;
}

// Every position's LagKV score (keys' plus values') in one head of [heads, T, D] keys and
// values: the partitions from `sinks` to the last full one (exclusive) are scored; NaN
// elsewhere (the sinks and the tail, kept whole).
inline std::vector<double> lagScores(const at::Tensor& keys, const at::Tensor& values, int64_t head, int64_t T,
                                     int64_t sinks, int64_t lag) {
    const Rows k = rowsOf(keys, head), v = rowsOf(values, head);
    std::vector<double> score(T, std::numeric_limits<double>::quiet_NaN());
    const int64_t partitions = std::max<int64_t>(0, (T - sinks) / lag - 1);
    for (int64_t p = 0; p < partitions; ++p) {
        const int64_t from = sinks + p * lag;
        const std::vector<double> sk = lagStateReference(k, from, lag), sv = lagStateReference(v, from, lag);
        for (int64_t t = 0; t < lag; ++t) score[from + t] = sk[t] + sv[t];
    }
    return score;
}

}  // namespace kvlens::test
