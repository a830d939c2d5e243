#include "engine/presses/RandomPress.h"

#include <algorithm>
#include <numeric>
#include <random>

#include "engine/presses/PressScores.h"

namespace kvlens {

void RandomPress::fill(const Capture& capture, const PressParams& p, int64_t budget, Selection& s) const {
    const int64_t T = capture.promptLength(), prefix = T - p.window, k = budget - p.window;
    std::vector<int32_t> pool(prefix);
    for (int64_t l = 0; l < capture.layers(); ++l) {
        for (size_t h = 0; h < s.kept[l].size(); ++h) {
            // One stream per (seed, layer, head): changing one layer's draw changes no other.
            std::seed_seq seq{uint32_t(p.seed), uint32_t(p.seed >> 32), uint32_t(l), uint32_t(h)};
            std::mt19937_64 rng(seq);
            std::iota(pool.begin(), pool.end(), 0);
            for (int64_t i = 0; i < k; ++i) {  // partial Fisher-Yates
                std::uniform_int_distribution<int64_t> pick(i, prefix - 1);
                std::swap(pool[i], pool[pick(rng)]);
            }
            std::vector<int32_t> chosen(pool.begin(), pool.begin() + k);
            std::sort(chosen.begin(), chosen.end());
            s.kept[l][h] = presses::withWindow(std::move(chosen), T, p.window);
        }
    }
}

}  // namespace kvlens
