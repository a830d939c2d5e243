// Anti-aliased bitmap text for raster images (PNG titles, axis and tick labels), from the
// glyph tables in FontData.cpp: DejaVu Sans 12 px (Font::normal, 15 px lines) and DejaVu
// Sans Bold 16 px (Font::large, 19 px lines, for titles). Printable ASCII only; any other
// byte is drawn as '?'. Draw with Image::drawText.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace kvlens::viz {

namespace fonts { struct FontData; }

class Font {
public:
    // Coverage of one line of text: width x height bytes, 0..255, row-major.
    struct Mask {
        int width = 0, height = 0;
        std::vector<uint8_t> alpha;
    };

    static const Font& normal();
    static const Font& large();

    int lineHeight() const;
    int ascent() const;
    int textWidth(const std::string& text) const;
    Mask rasterize(const std::string& text) const;

private:
    explicit Font(const fonts::FontData& data) : data_(&data) {}
    const fonts::FontData* data_;
};

}  // namespace kvlens::viz
