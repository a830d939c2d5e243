// Pixel-by-pixel reduction of matrix cells or pyramid tiles.
#include "viz/HeatmapRaster.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "core/Error.h"

namespace kvlens::viz {

namespace {

// The tiles (of side `tile`, `count` of them along this axis, covering `cells` cells) that
// overlap [a, b), with the length of each overlap.
struct Span {
    int64_t first = 0, last = -1;  // inclusive tile range
    std::vector<double> weight;    // overlap length per tile in [first, last]
};

Span spanOf(double a, double b, int64_t tile, int64_t count, int64_t cells) {
    Span s;
    auto t = static_cast<double>(tile);
    s.first = std::clamp<int64_t>(static_cast<int64_t>(std::floor(a / t)), 0, count - 1);
    s.last = std::clamp<int64_t>(static_cast<int64_t>(std::ceil(b / t)) - 1, s.first, count - 1);
    for (int64_t i = s.first; i <= s.last; ++i) {
        double lo = std::max(a, static_cast<double>(i * tile));
        double hi = std::min(b, static_cast<double>(std::min((i + 1) * tile, cells)));
        // Pixel edges come from floating point: an overlap of ~1e-16 is a rounding
        // error, not a neighbouring cell (with Max it would bleed a peak over).
        s.weight.push_back(hi - lo > 1e-9 ? hi - lo : 0.0);
    }
    return s;
}

void checkRegion(const CellRegion& r, int64_t rows, int64_t cols) {
    if (r.row0 < 0 || r.col0 < 0 || r.row1 > rows || r.col1 > cols || r.rows() < 1 ||
        r.cols() < 1) {
        throw Error("heatmap region rows [" + std::to_string(r.row0) + ", " +
                    std::to_string(r.row1) + ") x cols [" + std::to_string(r.col0) + ", " +
                    std::to_string(r.col1) + ") is empty or outside the " +
                    std::to_string(rows) + " x " + std::to_string(cols) + " matrix");
    }
}

// Per output row/column, the spans of tiles it overlaps.
std::vector<Span> spans(int64_t c0, int64_t c1, int pixels, int64_t tile, int64_t count,
                        int64_t cells) {
    std::vector<Span> out(static_cast<size_t>(std::max(pixels, 0)));
    double per = static_cast<double>(c1 - c0) / pixels;
    for (int p = 0; p < pixels; ++p)
        out[p] = spanOf(c0 + p * per, c0 + (p + 1) * per, tile, count, cells);
    return out;
}

// Reduces cells/tiles for every pixel; value(tr, tc) gives the tile's value for this
// reduction, and `colour` turns the reduced value into a pixel.
template <typename Value, typename Colour>
void rasterise(const CellRegion& region, int64_t tile, int64_t tileRows, int64_t tileCols,
               int64_t rows, int64_t cols, Reduction reduction, Image& image,
               const PixelRect& dst, Value value, Colour colour) {
    if (dst.w < 1 || dst.h < 1) return;
    auto rowSpans = spans(region.row0, region.row1, dst.h, tile, tileRows, rows);
    auto colSpans = spans(region.col0, region.col1, dst.w, tile, tileCols, cols);
    for (int py = 0; py < dst.h; ++py) {
        const Span& rs = rowSpans[py];
        for (int px = 0; px < dst.w; ++px) {
            const Span& cs = colSpans[px];
            double best = -std::numeric_limits<double>::infinity();
            double sum = 0, weight = 0;
            bool any = false;
            for (int64_t tr = rs.first; tr <= rs.last; ++tr) {
                double wr = rs.weight[tr - rs.first];
                if (wr <= 0) continue;
                for (int64_t tc = cs.first; tc <= cs.last; ++tc) {
                    double wc = cs.weight[tc - cs.first];
                    if (wc <= 0) continue;
                    double v = value(tr, tc);
                    if (std::isnan(v)) continue;
                    any = true;
                    best = std::max(best, v);
                    sum += v * wr * wc;
                    weight += wr * wc;
                }
            }
            double v = !any ? std::numeric_limits<double>::quiet_NaN()
                            : reduction == Reduction::Max ? best : sum / weight;
            image.set(dst.x + px, dst.y + py, colour(v));
        }
    }
}

}  // namespace

void HeatmapRaster::render(const TilePyramid& pyramid, const CellRegion& region,
                           Reduction reduction, const Colormap& colormap, const Scale& scale,
                           Image& image, const PixelRect& dst) {
    checkRegion(region, pyramid.rows(), pyramid.cols());
    if (dst.w < 1 || dst.h < 1) return;
    double rowsPerPixel = static_cast<double>(region.rows()) / dst.h;
    double colsPerPixel = static_cast<double>(region.cols()) / dst.w;
    const auto& level = pyramid.levelFor(std::min(rowsPerPixel, colsPerPixel));
    const std::vector<float>& data = reduction == Reduction::Max ? level.max : level.mean;
    rasterise(
        region, level.tile, level.tileRows, level.tileCols, pyramid.rows(), pyramid.cols(),
        reduction, image, dst,
        [&](int64_t tr, int64_t tc) { return static_cast<double>(data[tr * level.tileCols + tc]); },
        [&](double v) { return colormap.map(scale(v)); });
}

void HeatmapRaster::renderMatrix(const std::vector<float>& values, int64_t rows, int64_t cols,
                                 const CellRegion& region, Reduction reduction,
                                 const Colormap& colormap, const Scale& scale, Image& image,
                                 const PixelRect& dst) {
    if (rows < 1 || cols < 1 || static_cast<int64_t>(values.size()) != rows * cols) {
        throw Error("heatmap matrix: " + std::to_string(values.size()) + " values for " +
                    std::to_string(rows) + " x " + std::to_string(cols) + " cells");
    }
    checkRegion(region, rows, cols);
    rasterise(
        region, 1, rows, cols, rows, cols, reduction, image, dst,
        [&](int64_t r, int64_t c) { return static_cast<double>(values[r * cols + c]); },
        [&](double v) { return colormap.map(scale(v)); });
}

void HeatmapRaster::renderCategories(const std::vector<uint8_t>& codes, int64_t rows,
                                     int64_t cols, const CellRegion& region,
                                     const CategoricalPalette& palette, Image& image,
                                     const PixelRect& dst) {
    if (rows < 1 || cols < 1 || static_cast<int64_t>(codes.size()) != rows * cols) {
        throw Error("category matrix: " + std::to_string(codes.size()) + " codes for " +
                    std::to_string(rows) + " x " + std::to_string(cols) + " cells");
    }
    if (palette.size() == 0) throw Error("category matrix: the palette is empty");
    checkRegion(region, rows, cols);
    rasterise(
        region, 1, rows, cols, rows, cols, Reduction::Max, image, dst,
        [&](int64_t r, int64_t c) { return static_cast<double>(codes[r * cols + c]); },
        [&](double v) {
            return std::isnan(v) ? Colormap::nanColor() : palette.color(static_cast<size_t>(v));
        });
}

}  // namespace kvlens::viz
