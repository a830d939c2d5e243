// A level-of-detail reduction of a rows x cols matrix of non-negative floats (e.g. one
// head's attention, queries x keys) for drawing it at any zoom without keeping the matrix.
//
// Level 0 holds baseTile x baseTile tiles, each next level doubles the tile side, up to
// the first level that is a single tile in both directions. Every tile stores the max and
// the mean over the matrix cells inside it; edge tiles are partial and their mean divides
// by the real cell count, so every level equals a direct reduction of the original matrix
// (coarser means are weighted by cell counts, summed in double precision).
//
// Use: TilePyramid p(rows, cols, TilePyramid::baseTileFor(rows, cols, 1024));
//      p.addRows(row0, n, values) for every block of rows (any order, each row once);
//      p.finish(); then levels() / levelFor(), or viz::HeatmapRaster to draw it.
#pragma once

#include <cstdint>
#include <vector>

namespace kvlens::viz {

class TilePyramid {
public:
    struct Level {
        int64_t tile = 1;  // cells per tile side at this level
        int64_t tileRows = 0, tileCols = 0;
        std::vector<float> max, mean;  // tileRows x tileCols, row-major
        float maxAt(int64_t tr, int64_t tc) const { return max[tr * tileCols + tc]; }
        float meanAt(int64_t tr, int64_t tc) const { return mean[tr * tileCols + tc]; }
    };

    // Throws kvlens::Error when rows, cols or baseTile is < 1.
    TilePyramid(int64_t rows, int64_t cols, int64_t baseTile);

    // Adds complete matrix rows [row0, row0 + n), row-major, cols() values each. Rows may
    // come in any order, each exactly once; missing rows count as zeros. Throws
    // kvlens::Error on rows out of range, a row given twice, or a call after finish().
    void addRows(int64_t row0, int64_t n, const float* values);
    // Builds the coarser levels from level 0; call once, after all rows.
    void finish();
    bool finished() const { return finished_; }

    int64_t rows() const { return rows_; }
    int64_t cols() const { return cols_; }
    int64_t baseTile() const { return baseTile_; }
    // All levels, finest first. Throws kvlens::Error before finish().
    const std::vector<Level>& levels() const;
    // The coarsest level whose tile side is <= cellsPerPixel (level 0 when even level 0's
    // tile is larger than that, i.e. when zoomed in past baseTile cells per pixel).
    const Level& levelFor(double cellsPerPixel) const;

    // The smallest power of two keeping level 0 within maxTilesPerSide tiles per side.
    static int64_t baseTileFor(int64_t rows, int64_t cols, int64_t maxTilesPerSide);

private:
    int64_t rows_, cols_, baseTile_;
    bool finished_ = false;
    std::vector<Level> levels_;
    std::vector<double> sum0_;   // level-0 sums while rows arrive
    std::vector<bool> seen_;     // rows already added
};

}  // namespace kvlens::viz
