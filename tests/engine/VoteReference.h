// SnapKV's window votes in double precision from the definition, for the references of the
// methods that rank by them (ChunkKV, kvpress's ChunkKV).
#pragma once

#include <ATen/ATen.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include "engine/compress/Capture.h"
#include "LagReference.h"

namespace kvlens::test {

// SnapKV's window votes in double: the last W queries' causal softmax (1/sqrt(D)) summed,
// for prefix columns [0, T - W), averaged over the KV head's query heads (or one query head).
// With a `slidingWindow` S > 0 the query at position p attends to keys p - S + 1 .. p only;
// with a `softcap` C > 0 each scaled logit x becomes C tanh(x / C) (Gemma 2).
inline std::vector<double> votesReference(const Capture& c, int64_t layer, int64_t head, int64_t W,
                                          bool perQueryHead, int64_t slidingWindow = 0, double softcap = 0.0) {
    const int64_t T = c.promptLength(), H = c.queryHeads(), G = H / c.kvHeads(), D = c.headDim();
    const at::Tensor q = c.windowQueries(layer).to(at::kDouble).contiguous();
    const auto qa = q.accessor<double, 3>();
    const int64_t rows = q.size(1);
    std::vector<double> votes(T - W, 0.0);
    const std::vector<int64_t> heads = perQueryHead ? std::vector<int64_t>{head} : [&] {
        std::vector<int64_t> g(G);
        std::iota(g.begin(), g.end(), head * G);
        return g;
    }();
    for (int64_t h : heads) {
        const Rows keys = rowsOf(c.keys(layer), h / G);
        for (int64_t w = 0; w < W; ++w) {
            const int64_t pos = T - W + w, row = rows - W + w;
            const int64_t lo = slidingWindow > 0 ? std::max<int64_t>(0, pos - slidingWindow + 1) : 0;
            std::vector<double> logit(pos + 1, -INFINITY);
            double top = -INFINITY, z = 0.0;
            for (int64_t j = lo; j <= pos; ++j) {
                double s = 0.0;
                for (int64_t d = 0; d < D; ++d) s += qa[h][row][d] * keys[j][d];
                const double x = s / std::sqrt(double(D));
                top = std::max(top, logit[j] = softcap > 0.0 ? softcap * std::tanh(x / softcap) : x);
            }
            for (double& x : logit) z += (x = std::exp(x - top));
            for (int64_t j = 0; j < T - W; ++j) votes[j] += logit[j] / z / double(heads.size());
        }
    }
    return votes;
}

}  // namespace kvlens::test
