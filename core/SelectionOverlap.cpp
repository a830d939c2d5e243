#include "core/SelectionOverlap.h"

#include "core/Error.h"

namespace kvlens {

double SelectionOverlap::jaccard(const std::vector<int32_t>& a, const std::vector<int32_t>& b) {
    size_t i = 0, j = 0, both = 0;
    while (i < a.size() && j < b.size()) {
        if (a[i] < b[j]) {
            ++i;
        } else if (b[j] < a[i]) {
            ++j;
        } else {
            ++both, ++i, ++j;
        }
    }
    const size_t either = a.size() + b.size() - both;
    return either ? double(both) / double(either) : 1.0;
}

bool SelectionOverlap::comparable(const Selection& a, const Selection& b) {
    return a.layers() == b.layers() && a.queryHeads == b.queryHeads && a.kvHeads == b.kvHeads &&
           a.promptLength == b.promptLength && a.kvHeads > 0 && a.queryHeads % a.kvHeads == 0;
}

std::vector<double> SelectionOverlap::jaccardPerLayer(const Selection& a, const Selection& b) {
    if (!comparable(a, b)) throw Error("cannot compare selections made on different prompts or models");
    std::vector<double> out;
    for (int64_t l = 0; l < a.layers(); ++l) {
        double sum = 0.0;
        for (int64_t h = 0; h < a.queryHeads; ++h) {
            sum += jaccard(a.kept[l][a.headOf(h)], b.kept[l][b.headOf(h)]);
        }
        out.push_back(a.queryHeads ? sum / double(a.queryHeads) : 1.0);
    }
    return out;
}

}  // namespace kvlens
