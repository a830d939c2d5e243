// Rasterises matrices into a pixel block of an Image, with level of detail.
//
// A region [row0, row1) x [col0, col1) of cells is stretched over a w x h pixel block:
// rows run down, columns across (row 0 at the top). Each pixel covers a fractional cell
// range per axis; it takes the max (Reduction::Max, which keeps isolated peaks visible when
// zoomed out) or the overlap-weighted mean (Reduction::Mean) of the cells, or of the tiles
// of a TilePyramid level, that it overlaps, maps that value through a Scale into [0,1] and
// colours it with a Colormap. For a pyramid the level is levelFor(min(rows per pixel,
// columns per pixel)), so the work per pixel stays small at any zoom.
//
// Categorical matrices (codes 0..n-1, e.g. 0 not kept / 1 kept / 2 window) are coloured by a
// CategoricalPalette; a pixel covering several cells shows the highest code among them,
// so order the codes by how much they must stay visible.
#pragma once

#include <cstdint>
#include <vector>

#include "viz/CategoricalPalette.h"
#include "viz/Colormap.h"
#include "viz/Image.h"
#include "viz/Scale.h"
#include "viz/TilePyramid.h"

namespace kvlens::viz {

enum class Reduction { Max, Mean };

// Cells [row0, row1) x [col0, col1).
struct CellRegion {
    int64_t row0 = 0, row1 = 0, col0 = 0, col1 = 0;
    int64_t rows() const { return row1 - row0; }
    int64_t cols() const { return col1 - col0; }
    static CellRegion all(int64_t rows, int64_t cols) { return {0, rows, 0, cols}; }
};

// Pixels [x, x + w) x [y, y + h) of an Image.
struct PixelRect {
    int x = 0, y = 0, w = 0, h = 0;
};

class HeatmapRaster {
public:
    // Throws kvlens::Error when the region is empty or outside the matrix (or the pyramid
    // is not finished). Pixels of dst outside the image are skipped.
    static void render(const TilePyramid& pyramid, const CellRegion& region, Reduction reduction,
                       const Colormap& colormap, const Scale& scale, Image& image,
                       const PixelRect& dst);

    // The same for a plain row-major rows x cols matrix. NaN cells are skipped; a pixel
    // with no finite cell gets Colormap::nanColor().
    static void renderMatrix(const std::vector<float>& values, int64_t rows, int64_t cols,
                             const CellRegion& region, Reduction reduction,
                             const Colormap& colormap, const Scale& scale, Image& image,
                             const PixelRect& dst);

    // Codes through a palette; the highest code under a pixel wins.
    static void renderCategories(const std::vector<uint8_t>& codes, int64_t rows, int64_t cols,
                                 const CellRegion& region, const CategoricalPalette& palette,
                                 Image& image, const PixelRect& dst);
};

}  // namespace kvlens::viz
