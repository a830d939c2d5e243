// SVG to PNG through QtSvg: the report's charts as pictures, for the figures folder
// and the PDF (QTextDocument draws raster images only).
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
};

}  // namespace kvlens
