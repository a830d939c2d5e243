// CriticalKV's projected value norms: per layer, each query head's ||W_o^(h) v_t||_1 over the
// prompt (its slice of the output projection applied to its KV head's values, L1 over the
// hidden size), [H, T] fp32, for criticalkv and criticaladakv (Capture::outputValueNorms).
#pragma once

#include "engine/compress/CaptureWork.h"

namespace kvlens {

class CriticalKvNormsWork : public CaptureWork {
public:
    std::string pending(const Capture& capture, const PressParams& params) const override;
    void run(const Capture& capture, LlamaModel& model, const PressParams& params,
             const ProgressFn& progress) const override;
    const char* needer() const override { return "CriticalKV's projected value norms need"; }

    // The norms of `values` [KV, T, D] through `wo` [E, H x D] (a float weight): [H, T] fp32.
    // Also what Capture::fromTensors computes from given W_o.
    static at::Tensor norms(const at::Tensor& wo, const at::Tensor& values, int64_t queryHeads);
    // The name the capture keeps them under.
    static const char* key() { return "wov-l1"; }
};

}  // namespace kvlens
