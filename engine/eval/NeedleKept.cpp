#include "engine/eval/NeedleKept.h"

#include <algorithm>

namespace kvlens {

NeedleKept needleKept(const Selection& selection, const std::vector<int64_t>& positions) {
    NeedleKept out;
    for (const auto& layer : selection.kept) {
        double sum = 0.0;
        for (const auto& head : layer) {
            if (positions.empty()) {
                sum += 1.0;
                continue;
            }
            int64_t hit = 0;
            for (int64_t p : positions) hit += std::binary_search(head.begin(), head.end(), static_cast<int32_t>(p));
            sum += double(hit) / double(positions.size());
        }
        out.perLayer.push_back(layer.empty() ? 0.0 : sum / double(layer.size()));
    }
    for (double v : out.perLayer) out.mean += v;
    if (!out.perLayer.empty()) out.mean /= double(out.perLayer.size());
    return out;
}

}  // namespace kvlens
