#include "engine/compress/presses/RandomPress.h"

#include <algorithm>
#include <numeric>
#include <random>

#include "engine/compress/presses/PressScores.h"

namespace kvlens {

std::vector<int32_t> RandomPress::draw(uint64_t seed, int64_t layer, int64_t head, int64_t prefix, int64_t k) {
    // Seeded without std::seed_seq's implementation latitude.
    std::mt19937_64 rng(seed * 0x9E3779B97F4A7C15ull + uint64_t(layer) * 0xBF58476D1CE4E5B9ull +
                        uint64_t(head) * 0x94D049BB133111EBull + 1);
    std::vector<int32_t> pool(static_cast<size_t>(prefix));
    std::iota(pool.begin(), pool.end(), 0);
    for (int64_t i = 0; i < k; ++i) {  // partial Fisher-Yates
        // A bounded draw by rejection, written out so that every standard library gives the
        // same positions for a seed.
        const uint64_t range = uint64_t(prefix - i);
        const uint64_t limit = UINT64_MAX - UINT64_MAX % range;
        uint64_t r;
        do {
            r = rng();
        } while (r >= limit);
        std::swap(pool[size_t(i)], pool[size_t(i + int64_t(r % range))]);
    }
    std::vector<int32_t> chosen(pool.begin(), pool.begin() + k);
    std::sort(chosen.begin(), chosen.end());
    return chosen;
}

void RandomPress::fill(const Capture& capture, const PressParams& p, int64_t budget, Selection& s) const {
    const int64_t T = capture.promptLength(), prefix = T - p.window, k = budget - p.window;
    for (int64_t l = 0; l < capture.layers(); ++l)
        for (size_t h = 0; h < s.kept[l].size(); ++h)
            s.kept[l][h] = presses::withWindow(draw(p.seed, l, int64_t(h), prefix, k), T, p.window);
}

}  // namespace kvlens
