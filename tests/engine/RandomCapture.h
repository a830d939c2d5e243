// Captures of random tensors for the scoring methods' tests: window queries scaled up by
// layer, keys of uneven norms (so norm-based scores spread), values plain normal.
#pragma once

#include <ATen/ATen.h>

#include <algorithm>
#include <memory>
#include <vector>

#include "engine/compress/Capture.h"

namespace kvlens::test {

struct CaptureShape {
    int64_t layers, heads, kvHeads, promptLength, headDim;
};

inline std::shared_ptr<Capture> randomCapture(const CaptureShape& s, uint64_t seed) {
    at::manual_seed(seed);
    std::vector<at::Tensor> q, k, v;
    for (int64_t l = 0; l < s.layers; ++l) {
        q.push_back(at::randn({s.heads, std::min<int64_t>(64, s.promptLength), s.headDim}) *
                    (1.0 + l));
        k.push_back(at::randn({s.kvHeads, s.promptLength, s.headDim}) *
                    at::rand({s.kvHeads, s.promptLength, 1}).mul(2.0).add(0.25));
        v.push_back(at::randn({s.kvHeads, s.promptLength, s.headDim}));
    }
    return Capture::fromTensors(q, k, v);
}

}  // namespace kvlens::test
