#include "kernels/GeluMul.h"

namespace kvlens::kernels {

at::Tensor geluMul(const at::Tensor& gateUp) {
    const int64_t F = gateUp.size(1) / 2;
    const at::Tensor g = gateUp.narrow(1, 0, F).to(at::kFloat), u = gateUp.narrow(1, F, F).to(at::kFloat);
    return (at::gelu(g, "tanh") * u).to(gateUp.scalar_type());
}

}  // namespace kvlens::kernels
