#include "engine/compress/CaptureWork.h"

#include "core/Error.h"
#include "engine/compress/presses/CriticalKvNormsWork.h"
#include "engine/compress/presses/FinchPrefillWork.h"
#include "engine/compress/presses/H2oReplayWork.h"
#include "engine/compress/presses/KvzipReconstructionWork.h"
#include "engine/compress/presses/NonCausalReplayWork.h"

namespace kvlens {

const std::vector<const CaptureWork*>& CaptureWork::all() {
    static const H2oReplayWork h2o;
    static const CriticalKvNormsWork norms;
    static const KvzipReconstructionWork kvzip;
    static const FinchPrefillWork finch;
    static const NonCausalReplayWork nonCausal;
    static const std::vector<const CaptureWork*> works = {&h2o, &norms, &kvzip, &finch, &nonCausal};
    return works;
}

void CaptureWork::requireFinite(const at::Tensor& t, int64_t layer, const char* headKind, const std::string& what,
                                const std::string& source) {
    // The methods would otherwise each treat a NaN their own way (max pool drops it, a sum
    // spreads it, AdaKV's normalisation flattens it).
    if (!t.defined() || t.numel() == 0) return;
    const at::Tensor bad = at::logical_not(at::isfinite(t)).flatten(1).any(1);  // [heads]
    if (!bad.any().item<bool>()) return;
    const int64_t head = bad.nonzero()[0][0].item<int64_t>();
    const bool nan = at::isnan(t.select(0, head)).any().item<bool>();
    throw Error(source + " " + (nan ? "NaN" : "Inf") + " in layer " + std::to_string(layer) + " " + headKind + " " +
                std::to_string(head) + "'s " + what + ": it cannot be compressed" +
                (source == kPrefill ? " (an f16 overflow? try --dtype bf16 or f32)" : ""));
}

void CaptureWork::storeRecent(const Capture& c,
                              const std::vector<std::pair<std::pair<std::string, int64_t>, at::Tensor>>& entries,
                              const std::string& kind, const std::string& prefix, size_t keep) {
    std::lock_guard<std::mutex> lock(c.votesMutex_);
    for (const auto& [key, t] : entries) c.memo_[key] = t;
    c.keepRecent(kind, prefix, keep);
}

void CaptureWork::storeH2oScores(const Capture& c, std::vector<at::Tensor> perLayer) {
    c.h2oScores_ = std::move(perLayer);
    c.h2oReady_ = true;
}

}  // namespace kvlens
