#include "engine/compress/presses/AdaKvPress.h"

#include <algorithm>
#include <cmath>

#include "engine/compress/presses/PressScores.h"

namespace kvlens {

void AdaKvPress::fill(const Capture& capture, const PressParams& p, int64_t budget, Selection& s) const {
    const int64_t T = capture.promptLength(), P = budget - p.window, prefix = T - p.window;
    const int64_t floorPerHead = static_cast<int64_t>(std::floor(p.alpha * double(P) + 1e-9));
    for (int64_t l = 0; l < capture.layers(); ++l) {
        presses::HeadScores norm = presses::pooledVotes(capture, l, p);
        const int64_t heads = static_cast<int64_t>(norm.size());
        std::vector<std::vector<char>> taken(heads, std::vector<char>(prefix, 0));
        std::vector<std::vector<int32_t>> kept(heads);
        for (int64_t h = 0; h < heads; ++h) {
            double sum = 0.0;
            for (float v : norm[h]) sum += v;
            for (float& v : norm[h]) v = sum > 0.0 ? float(v / sum) : 1.0f / float(prefix);
            kept[h] = presses::topPositions(norm[h], floorPerHead);  // the safeguard
            for (int32_t pos : kept[h]) taken[h][pos] = 1;
        }
        // The rest of the layer's pool goes to the best scores of any head.
        struct Candidate {
            float score;
            int32_t head, pos;
        };
        std::vector<Candidate> rest;
        rest.reserve(heads * (prefix - floorPerHead));
        for (int64_t h = 0; h < heads; ++h)
            for (int64_t j = 0; j < prefix; ++j)
                if (!taken[h][j]) {
                    const float v = std::isnan(norm[h][j]) ? -1.0f : norm[h][j];
                    rest.push_back({v, int32_t(h), int32_t(j)});
                }
        const int64_t remaining = std::min<int64_t>(heads * (P - floorPerHead), int64_t(rest.size()));
        auto better = [](const Candidate& a, const Candidate& b) {
            if (a.score != b.score) return a.score > b.score;
            return a.head != b.head ? a.head < b.head : a.pos < b.pos;
        };
        std::nth_element(rest.begin(), rest.begin() + remaining, rest.end(), better);
        for (int64_t i = 0; i < remaining; ++i) kept[rest[i].head].push_back(rest[i].pos);
        for (int64_t h = 0; h < heads; ++h) {
            std::sort(kept[h].begin(), kept[h].end());
            s.kept[l][h] = presses::withWindow(std::move(kept[h]), T, p.window);
        }
    }
}

}  // namespace kvlens
