// Random: a seeded uniform choice of B-W prefix positions per head, plus the window — the floor every method must beat.
#pragma once

#include <cstdint>
#include <vector>

#include "engine/compress/presses/Press.h"

namespace kvlens {

class RandomPress : public Press {
public:
    // `k` of positions 0 .. prefix - 1 drawn uniformly without replacement, ascending: one
    // stream per (seed, layer, head), the same for a seed on every standard library (saved
    // sessions). The decode form draws with a seed per compression.
    static std::vector<int32_t> draw(uint64_t seed, int64_t layer, int64_t head, int64_t prefix, int64_t k);

protected:
    void fill(const Capture& capture, const PressParams& params, int64_t budget,
              Selection& selection) const override;
};

}  // namespace kvlens
