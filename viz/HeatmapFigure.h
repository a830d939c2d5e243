// A raster (PNG) heatmap figure that reads on its own: a title and subtitle, one or more
// heatmap panels stacked top to bottom that share the x axis, x and y axis labels with
// units, tick labels in data coordinates (cell indices: a column's tick sits on the cell's
// centre), optional short panel names (e.g. "L3") and per-row labels (e.g. heads), a
// colour bar with its label and ticks for continuous data, and a legend for categorical
// data. The whole figure has exactly the size given to the constructor.
//
//   HeatmapFigure fig(1000, 900);
//   fig.setTitle("Attention, layer 3 head 7", "max over each pixel's cells, log scale");
//   fig.setXAxis("key position", "token");
//   fig.setYAxis("query position", "token");
//   fig.setColorBar(Colormap::magma(), scale, "attention weight", "");
//   fig.addPyramidPanel(pyramid, CellRegion::all(T, T), Reduction::Max);
//   fig.writePng("attention_L3_H7.png");
//
// Pyramid panels keep a pointer to the pyramid: it must outlive render()/writePng().
// Panels can also be drawn into part of a larger Image with renderInto().
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "viz/CategoricalPalette.h"
#include "viz/Colormap.h"
#include "viz/CsvTable.h"
#include "viz/HeatmapRaster.h"
#include "viz/Image.h"
#include "viz/Scale.h"
#include "viz/TilePyramid.h"

namespace kvlens::viz {

class HeatmapFigure {
public:
    // Total image size in pixels; throws kvlens::Error outside 1..Image::kMaxSide.
    HeatmapFigure(int width, int height);

    void setTitle(const std::string& title, const std::string& subtitle = "");
    // The columns' axis, under the last panel: "label (unit)".
    void setXAxis(const std::string& label, const std::string& unit);
    // The rows' axis, written vertically at the left across all panels.
    void setYAxis(const std::string& label, const std::string& unit);
    // Continuous panels (pyramid, matrix) use this map and scale; shown as a colour bar.
    void setColorBar(const Colormap& colormap, const Scale& scale, const std::string& label,
                     const std::string& unit);
    // Category panels use this palette; shown as a legend of its entry names.
    void setLegend(const CategoricalPalette& palette);

    // Panels, top to bottom. Every panel must span the same number of columns. `name` is
    // a short label left of the panel; rowLabels (one per row of the region), when given,
    // replace the numeric row ticks.
    void addPyramidPanel(const TilePyramid& pyramid, const CellRegion& region, Reduction reduction,
                         const std::string& name = "");
    void addMatrixPanel(std::vector<float> values, int64_t rows, int64_t cols, Reduction reduction,
                        const std::string& name = "", std::vector<std::string> rowLabels = {});
    void addCategoryPanel(std::vector<uint8_t> codes, int64_t rows, int64_t cols,
                          const std::string& name = "", std::vector<std::string> rowLabels = {});

    int width() const { return width_; }
    int height() const { return height_; }
    size_t panelCount() const { return panels_.size(); }
    // Pixels across the panels' plot area with the current panels, labels, colour bar
    // and legend (so callers can tell how many cells a pixel column will cover).
    // Throws kvlens::Error as render() does.
    int plotWidth() const { return layout().plotW; }

    // Throws kvlens::Error when there are no panels, when panels differ in column count, or
    // when the size leaves no room for the panels.
    Image render() const;
    // Draws the figure into image with its top-left corner at (x, y).
    void renderInto(Image& image, int x, int y) const;
    // render() and writePng; throws kvlens::Error naming the path when it cannot be written.
    void writePng(const std::string& path) const;

    // The values drawn, one row per tile or cell, columns:
    //   panel, <y axis> from, <y axis> to, <x axis> from, <x axis> to, max, mean, category
    // (ranges inclusive, in cells). Pyramid panels list the tiles of the level their pixels
    // use, or of the first coarser level with at most maxTilesPerPanel tiles in the region;
    // matrix panels list every cell (max = mean = value); category panels every cell with
    // its code in max and mean and its palette name in category.
    CsvTable csv(int64_t maxTilesPerPanel = 65536) const;
    void writeCsv(const std::string& path) const;
    // writePng(pngPath) and writeCsv(csvPathBeside(pngPath)).
    void write(const std::string& pngPath) const;

private:
    enum class Kind { Pyramid, Matrix, Categories };
    struct Panel {
        Kind kind = Kind::Matrix;
        const TilePyramid* pyramid = nullptr;
        CellRegion region;
        Reduction reduction = Reduction::Max;
        std::vector<float> values;
        std::vector<uint8_t> codes;
        int64_t rows = 0, cols = 0;
        std::string name;
        std::vector<std::string> rowLabels;
    };
    // Where things go; throws kvlens::Error when the figure cannot be drawn.
    struct Layout {
        int plotTop = 0, plotLeft = 0, plotRight = 0, plotW = 0, panelH = 0;
        int tickW = 0, barW = 0;
        bool usesColor = false, usesCategories = false;
        std::vector<std::pair<double, std::string>> barTicks;  // position 0..1, label
    };
    Layout layout() const;
    void drawPanel(Image& image, const Panel& p, const PixelRect& r, int tickRight,
                   bool drawRowTicks) const;

    int width_, height_;
    std::string title_, subtitle_;
    std::string xLabel_, yLabel_;
    const Colormap* colormap_ = nullptr;
    std::optional<Scale> scale_;
    std::string barLabel_;
    std::optional<CategoricalPalette> palette_;
    std::vector<Panel> panels_;
};

}  // namespace kvlens::viz
