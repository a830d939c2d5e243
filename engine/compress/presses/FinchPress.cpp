#include "engine/compress/presses/FinchPress.h"

#include "core/Error.h"

namespace kvlens {

void FinchPress::fill(const Capture& capture, const PressParams& params, int64_t budget, Selection& s) const {
    const PrefilledCache own = capture.prefilledCache(params);
    if (!own) {
        throw Error(capture.prompt().empty()
                        ? "Finch prefills the prompt itself: it needs a capture made by a model prefill"
                        : "Finch's chunked prefill has not run for this budget, window and --finch-chunk "
                          "(Capture::keepScoresFor)");
    }
    for (int64_t l = 0; l < capture.layers(); ++l) {
        const at::Tensor kept = own.kept[l].contiguous();
        if (kept.size(0) != budget) throw Error("Finch's cache holds another budget than the one asked");
        const int64_t* p = kept.data_ptr<int64_t>();
        const std::vector<int32_t> positions(p, p + kept.size(0));
        for (auto& head : s.kept[l]) head = positions;
    }
}

}  // namespace kvlens
