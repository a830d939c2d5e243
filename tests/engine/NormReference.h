// Double-precision pieces the norm-based methods' references share: a head's squared
// L2 norms per position, and CUR's shares of them within aligned windows of 16.
#pragma once

#include <ATen/ATen.h>

#include <algorithm>
#include <vector>

namespace kvlens::test {

inline std::vector<double> squaredNorms(const at::Tensor& states /*[heads, T, D]*/, int64_t head, int64_t T) {
    const at::Tensor x = states.to(at::kDouble).contiguous();
    const auto a = x.accessor<double, 3>();
    std::vector<double> out(T, 0.0);
    for (int64_t t = 0; t < T; ++t)
        for (int64_t d = 0; d < x.size(2); ++d) out[t] += a[head][t][d] * a[head][t][d];
    return out;
}

// Each value divided by its sum over the aligned window of 16 positions holding it (the
// last window as long as the values leave it; a window summing to 0 shares nothing).
inline std::vector<double> windowShares(std::vector<double> x) {
    const size_t w = 16;
    for (size_t start = 0; start < x.size(); start += w) {
        const size_t end = std::min(x.size(), start + w);
        double sum = 0.0;
        for (size_t t = start; t < end; ++t) sum += x[t];
        for (size_t t = start; t < end; ++t) x[t] = sum > 0 ? x[t] / sum : 0.0;
    }
    return x;
}

}  // namespace kvlens::test
