#include "engine/compress/QueryStatistics.h"

#include <algorithm>
#include <cmath>

#include "core/Error.h"
#include "core/PressParams.h"

namespace kvlens {

QueryStatistics::QueryStatistics(int64_t layers, int64_t promptLength, const at::Tensor& invFreq,
                                 int64_t ropeDim, bool halves)
    : promptLength_(promptLength),
      ropeDim_(ropeDim),
      halves_(halves),
      invFreq_(invFreq.to(at::kFloat)),
      sum_(layers),
      outer_(layers),
      first_(layers) {}

at::Tensor QueryStatistics::rotatedBack(const at::Tensor& x, int64_t p0) const {
    const int64_t n = x.size(0), H = x.size(1), R = ropeDim_, half = R / 2;
    at::Tensor pre = x.to(at::kFloat).clone();  // [n, H, D]
    if (R > 0) {
        // The angles as the forward pass made them (fp32 position x frequency), turned back.
        const at::Tensor pos = at::arange(p0, p0 + n, pre.options());
        const at::Tensor angle =
            pos.unsqueeze(1) * invFreq_.to(pre.device()).unsqueeze(0);  // [n, half]
        const at::Tensor c = angle.cos().unsqueeze(1),
                         s = angle.sin().unsqueeze(1);  // [n, 1, half]
        at::Tensor rot = pre.narrow(2, 0, R);
        at::Tensor y0, y1;
        if (halves_) {
            y0 = rot.narrow(2, 0, half);
            y1 = rot.narrow(2, half, half);
        } else {
            const at::Tensor pairs = rot.reshape({n, H, half, 2});
            y0 = pairs.select(3, 0);
            y1 = pairs.select(3, 1);
        }
        const at::Tensor x0 = y0 * c + y1 * s, x1 = y1 * c - y0 * s;
        rot.copy_(halves_ ? at::cat({x0, x1}, 2) : at::stack({x0, x1}, 3).reshape({n, H, R}));
    }
    return pre;
}

void QueryStatistics::add(int64_t layer, const at::Tensor& q, int64_t p0) {
    const int64_t n = std::min<int64_t>(q.size(0), promptLength_ - p0);
    if (n <= 0) return;
    const int64_t H = q.size(1), D = q.size(2);
    const at::Tensor pre = rotatedBack(q.narrow(0, 0, n), p0);  // [n, H, D] fp32
    const at::Tensor x = pre.to(at::kDouble);  // [n, H, D]
    if (!sum_[layer].defined()) {
        sum_[layer] = at::zeros({H, D}, x.options());
        outer_[layer] = at::zeros({H, D, D}, x.options());
        first_[layer] =
            at::zeros({H, std::min(promptLength_, PressParams::kMaxQuerySinks), D}, pre.options());
    }
    sum_[layer].add_(x.sum(0));
    outer_[layer].add_(at::bmm(x.permute({1, 2, 0}), x.permute({1, 0, 2})));
    const int64_t keep = first_[layer].size(1), lo = p0, hi = std::min(p0 + n, keep);
    if (lo < hi)
        first_[layer].narrow(1, lo, hi - lo).copy_(pre.narrow(0, 0, hi - lo).permute({1, 0, 2}));
}

std::pair<at::Tensor, at::Tensor> QueryStatistics::meanAndCovariance(int64_t layer,
                                                                     int64_t sinks) const {
    if (!sum_[layer].defined())
        throw Error("the capture holds no query statistics for layer " + std::to_string(layer));
    if (sinks < 0 || sinks > first_[layer].size(1) || sinks >= promptLength_) {
        throw Error("--sinks " + std::to_string(sinks) +
                    " leaves no query statistics (the capture keeps the first " +
                    std::to_string(first_[layer].size(1)) + " of " + std::to_string(promptLength_) +
                    " queries)");
    }
    at::Tensor sum = sum_[layer].to(at::kCPU), outer = outer_[layer].to(at::kCPU);
    if (sinks > 0) {
        const at::Tensor f =
            first_[layer].narrow(1, 0, sinks).to(at::kCPU, at::kDouble);  // [H, S, D]
        sum = sum - f.sum(1);
        outer = outer - at::bmm(f.transpose(1, 2), f);
    }
    const double n = double(promptLength_ - sinks);
    const at::Tensor mean = sum / n;
    const at::Tensor cov = outer / n - mean.unsqueeze(2) * mean.unsqueeze(1);
    return {mean, cov};
}

at::Tensor QueryStatistics::averageRotation(int64_t from, int64_t count) const {
    const int64_t D = sum_.empty() || !sum_[0].defined() ? ropeDim_ : sum_[0].size(1);
    at::Tensor r = at::eye(D, at::TensorOptions().dtype(at::kDouble));
    const at::Tensor inv = invFreq_.to(at::kCPU).to(at::kDouble).contiguous();
    auto a = r.accessor<double, 2>();
    const int64_t half = ropeDim_ / 2;
    for (int64_t i = 0; i < half; ++i) {
        // The sums of cos and sin of p * theta over p = from .. from+count-1 in closed form:
        // sin(count theta / 2) / sin(theta / 2) times cos or sin of the middle angle, so any
        // --future costs the same (RoPE's theta is in (0, 1]; near 0 every term is the
        // middle angle's).
        const double theta = inv.data_ptr<double>()[i], mid = (double(from) + double(count - 1) / 2.0) * theta;
        const double sinHalf = std::sin(theta / 2.0);
        const double factor =
            std::abs(sinHalf) < 1e-12 ? double(count) : std::sin(double(count) * theta / 2.0) / sinHalf;
        const double c = factor * std::cos(mid) / double(count), s = factor * std::sin(mid) / double(count);
        const int64_t u = halves_ ? i : 2 * i, v = halves_ ? i + half : 2 * i + 1;
        a[u][u] = c;
        a[u][v] = -s;
        a[v][u] = s;
        a[v][v] = c;
    }
    return r;
}

int64_t QueryStatistics::bytes() const {
    int64_t total = 0;
    for (const auto* list : {&sum_, &outer_, &first_})
        for (const at::Tensor& t : *list)
            if (t.defined()) total += t.numel() * t.element_size();
    return total;
}

}  // namespace kvlens
