#include "kernels/ProjectedNorms.h"

#include <algorithm>

namespace kvlens::kernels {

at::Tensor floatWeight(const Weight& w) {
    if (!w.quantised()) return w.dense().to(at::kFloat);
    at::Tensor out = at::empty({w.rows(), w.cols()}, at::kFloat);
    w.quant().dequantizeRows(0, w.rows(), out.data_ptr<float>());
    return out;
}

at::Tensor projectedValueNorms(const at::Tensor& woFloat, const at::Tensor& values, int64_t head) {
    const int64_t n = values.size(0), D = values.size(1);
    const at::Tensor v = values.to(at::kFloat);
    const at::Tensor wh = woFloat.narrow(1, head * D, D).to(v.device()).t();  // [D, E]
    at::Tensor norms = at::empty({n}, v.options());
    constexpr int64_t kRows = 2048;
    for (int64_t t0 = 0; t0 < n; t0 += kRows) {
        const int64_t m = std::min(kRows, n - t0);
        norms.narrow(0, t0, m).copy_(at::matmul(v.narrow(0, t0, m), wh).abs().sum(-1));
    }
    return norms;
}

}  // namespace kvlens::kernels
