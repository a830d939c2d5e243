// SVG to PNG through QtSvg: the report's charts as pictures, for the figures folder
// and the PDF (QTextDocument draws raster images only). A build without Qt
// (-DKVLENS_GUI=OFF) has no rasteriser: available() is false and the reports leave
// the PNG copies of their SVG charts out.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace kvlens {

class SvgRasterizer {
public:
    // The SVG drawn on white at `scale` times its size, as PNG bytes (clip paths are
    // dropped: QtSvg 6.4 would paint them black). Throws
    // kvlens::Error when Qt cannot read the SVG.
    static std::vector<uint8_t> png(const std::string& svg, double scale);
    // False in a build without Qt, where png() throws.
    static bool available();
};

}  // namespace kvlens
