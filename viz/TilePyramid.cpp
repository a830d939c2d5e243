// TilePyramid: level-0 accumulation and the exact coarser reductions.
#include "viz/TilePyramid.h"

#include <algorithm>
#include <string>

#include "core/Error.h"

namespace kvlens::viz {

namespace {

int64_t ceilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

}  // namespace

TilePyramid::TilePyramid(int64_t rows, int64_t cols, int64_t baseTile)
    : rows_(rows), cols_(cols), baseTile_(baseTile) {
    if (rows < 1 || cols < 1 || baseTile < 1) {
        throw Error("tile pyramid: rows, cols and base tile must be >= 1, got " +
                    std::to_string(rows) + " x " + std::to_string(cols) + " with tile " +
                    std::to_string(baseTile));
    }
    Level l0;
    l0.tile = baseTile;
    l0.tileRows = ceilDiv(rows, baseTile);
    l0.tileCols = ceilDiv(cols, baseTile);
    size_t n = static_cast<size_t>(l0.tileRows * l0.tileCols);
    l0.max.assign(n, 0.0f);  // missing rows are zeros, and values are non-negative
    sum0_.assign(n, 0.0);
    seen_.assign(static_cast<size_t>(rows), false);
    levels_.push_back(std::move(l0));
}

void TilePyramid::addRows(int64_t row0, int64_t n, const float* values) {
    if (finished_) throw Error("tile pyramid: rows added after finish()");
    if (row0 < 0 || n < 0 || row0 + n > rows_) {
        throw Error("tile pyramid: rows [" + std::to_string(row0) + ", " +
                    std::to_string(row0 + n) + ") outside 0.." + std::to_string(rows_));
    }
    for (int64_t r = row0; r < row0 + n; ++r)
        if (seen_[r]) throw Error("tile pyramid: row " + std::to_string(r) + " added twice");
    Level& l0 = levels_[0];
    for (int64_t i = 0; i < n; ++i) {
        int64_t r = row0 + i;
        seen_[r] = true;
        const float* row = values + i * cols_;
        int64_t tr = r / baseTile_;
        float* mx = l0.max.data() + tr * l0.tileCols;
        double* sm = sum0_.data() + tr * l0.tileCols;
        for (int64_t tc = 0; tc < l0.tileCols; ++tc) {
            int64_t c0 = tc * baseTile_, c1 = std::min(cols_, c0 + baseTile_);
            float m = mx[tc];
            double s = 0;
            for (int64_t c = c0; c < c1; ++c) {
                m = std::max(m, row[c]);
                s += row[c];
            }
            mx[tc] = m;
            sm[tc] += s;
        }
    }
}

void TilePyramid::finish() {
    if (finished_) throw Error("tile pyramid: finish() called twice");
    finished_ = true;
    std::vector<double> sums = std::move(sum0_);
    sum0_.clear();
    seen_.clear();
    seen_.shrink_to_fit();
    // Cells inside tile (tr, tc) of a level with the given tile side.
    auto cells = [this](int64_t tile, int64_t tr, int64_t tc) {
        int64_t h = std::min(rows_, (tr + 1) * tile) - tr * tile;
        int64_t w = std::min(cols_, (tc + 1) * tile) - tc * tile;
        return static_cast<double>(h * w);
    };
    auto setMeans = [&](Level& l, const std::vector<double>& s) {
        l.mean.resize(s.size());
        for (int64_t tr = 0; tr < l.tileRows; ++tr)
            for (int64_t tc = 0; tc < l.tileCols; ++tc) {
                size_t i = static_cast<size_t>(tr * l.tileCols + tc);
                l.mean[i] = static_cast<float>(s[i] / cells(l.tile, tr, tc));
            }
    };
    setMeans(levels_[0], sums);
    while (levels_.back().tileRows > 1 || levels_.back().tileCols > 1) {
        const Level& fine = levels_.back();
        Level coarse;
        coarse.tile = fine.tile * 2;
        coarse.tileRows = ceilDiv(fine.tileRows, 2);
        coarse.tileCols = ceilDiv(fine.tileCols, 2);
        size_t n = static_cast<size_t>(coarse.tileRows * coarse.tileCols);
        coarse.max.assign(n, 0.0f);
        std::vector<double> coarseSums(n, 0.0);
        for (int64_t tr = 0; tr < fine.tileRows; ++tr)
            for (int64_t tc = 0; tc < fine.tileCols; ++tc) {
                size_t src = static_cast<size_t>(tr * fine.tileCols + tc);
                size_t dst = static_cast<size_t>((tr / 2) * coarse.tileCols + tc / 2);
                coarse.max[dst] = std::max(coarse.max[dst], fine.max[src]);
                coarseSums[dst] += sums[src];
            }
        setMeans(coarse, coarseSums);
        sums = std::move(coarseSums);
        levels_.push_back(std::move(coarse));
    }
}

const std::vector<TilePyramid::Level>& TilePyramid::levels() const {
    if (!finished_) throw Error("tile pyramid: levels read before finish()");
    return levels_;
}

const TilePyramid::Level& TilePyramid::levelFor(double cellsPerPixel) const {
    const auto& ls = levels();
    const Level* best = &ls[0];
    for (const auto& l : ls)
        if (static_cast<double>(l.tile) <= cellsPerPixel) best = &l;
    return *best;
}

int64_t TilePyramid::baseTileFor(int64_t rows, int64_t cols, int64_t maxTilesPerSide) {
    if (rows < 1 || cols < 1 || maxTilesPerSide < 1) {
        throw Error("tile pyramid: rows, cols and tiles per side must be >= 1");
    }
    int64_t tile = 1;
    while (ceilDiv(rows, tile) > maxTilesPerSide || ceilDiv(cols, tile) > maxTilesPerSide) tile *= 2;
    return tile;
}

}  // namespace kvlens::viz
