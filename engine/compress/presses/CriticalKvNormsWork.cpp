#include "engine/compress/presses/CriticalKvNormsWork.h"

#include "core/Methods.h"
#include "core/PressParams.h"
#include "engine/model/LlamaModel.h"
#include "kernels/ProjectedNorms.h"

namespace kvlens {

at::Tensor CriticalKvNormsWork::norms(const at::Tensor& wo, const at::Tensor& values, int64_t queryHeads) {
    const int64_t KV = values.size(0), T = values.size(1), G = queryHeads / KV;
    at::Tensor out = at::empty({queryHeads, T}, values.options().dtype(at::kFloat));
    for (int64_t c = 0; c < KV; ++c) {
        const at::Tensor vc = values[c].to(at::kFloat);  // once for the KV head's G readers
        for (int64_t h = c * G; h < (c + 1) * G; ++h) out[h].copy_(kernels::projectedValueNorms(wo, vc, h));
    }
    return out.contiguous();
}

std::string CriticalKvNormsWork::pending(const Capture& capture, const PressParams& params) const {
    if (!methods::effectiveNeeds(params).has(Need::WoNorms)) return "";
    if (params.resolveBudget(capture.promptLength()) >= capture.promptLength()) return "";  // ranks nothing
    return capture.outputValueNorms(0).defined() ? "" : "CriticalKV's projected value norms (W_o on every value)";
}

void CriticalKvNormsWork::run(const Capture& capture, LlamaModel& model, const PressParams&,
                              const ProgressFn& progress) const {
    // All layers first, then stored together: a failure or a cancel halfway leaves none
    // (pending looks at layer 0 only).
    const int64_t L = capture.layers(), T = capture.promptLength();
    std::vector<at::Tensor> all(L);
    for (int64_t l = 0; l < L; ++l) {
        if (progress) progress(double(l) / double(L), "projected value norms, layer " + std::to_string(l));
        const at::Tensor v = capture.values(l).narrow(1, 0, T);  // [KV, T, D]
        all[l] = norms(kernels::floatWeight(model.weights().layers[l].wo).to(v.device()), v, capture.queryHeads());
        requireFinite(all[l], l, "query head", "projected value norms", kPrefill);
    }
    store(capture, key(), all);
}

}  // namespace kvlens
