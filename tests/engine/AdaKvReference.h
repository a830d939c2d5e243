// AdaKV's allocation of one layer in double precision from its definition, on per-head scores
// (NaN: always kept), for the references of the decode forms that share a layer by it (AdaKV,
// CriticalAdaKV).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

namespace kvlens::test {

// Rows of highest score first, ties to the lower row.
inline std::vector<int64_t> byScore(const std::vector<int64_t>& rows, const std::vector<double>& score) {
    std::vector<int64_t> order = rows;
    std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return score[a] > score[b]; });
    return order;
}

// AdaKV on one layer's per-head scores (NaN: always kept): head h's pool P_h = B minus its
// NaN rows, floor(alpha P_h) of its own best, then the sum over heads of P_h - floor(alpha P_h)
// best of all the rest (ties to the lower head, then row). Kept rows per head, ascending.
inline std::vector<std::vector<int64_t>> adaKvReference(const std::vector<std::vector<double>>& scores, int64_t B,
                                                 double alpha) {
    struct Row {
        double score;
        int64_t head, row;
    };
    std::vector<std::vector<int64_t>> kept(scores.size());
    std::vector<Row> rest;
    int64_t pool = 0;
    for (size_t h = 0; h < scores.size(); ++h) {
        std::vector<int64_t> ranked;
        for (int64_t r = 0; r < int64_t(scores[h].size()); ++r) {
            if (std::isnan(scores[h][r])) kept[h].push_back(r);
            else ranked.push_back(r);
        }
        const int64_t P = B - int64_t(kept[h].size()), own = int64_t(std::floor(alpha * double(P) + 1e-9));
        pool += P - own;
        const std::vector<int64_t> order = byScore(ranked, scores[h]);
        for (int64_t i = 0; i < int64_t(order.size()); ++i) {
            if (i < own) kept[h].push_back(order[i]);
            else rest.push_back({scores[h][order[i]], int64_t(h), order[i]});
        }
    }
    std::sort(rest.begin(), rest.end(), [](const Row& a, const Row& b) {
        if (a.score != b.score) return a.score > b.score;
        return a.head != b.head ? a.head < b.head : a.row < b.row;
    });
    for (int64_t i = 0; i < std::min<int64_t>(pool, int64_t(rest.size())); ++i) kept[rest[i].head].push_back(rest[i].row);
    for (auto& k : kept) std::sort(k.begin(), k.end());
    return kept;
}

}  // namespace kvlens::test
