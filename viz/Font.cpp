// Text measuring and rasterising over the generated glyph tables.
#include "viz/Font.h"

#include <algorithm>

#include "viz/FontData.h"

namespace kvlens::viz {

namespace {

const fonts::GlyphInfo& glyphFor(const fonts::FontData& f, char c) {
    auto code = static_cast<unsigned char>(c);
    if (code == '\t') code = ' ';
    if (code < 32 || code > 126) code = '?';
    return f.glyphs[code - 32];
}

}  // namespace

const Font& Font::normal() {
    static const Font font(fonts::kNormal);
    return font;
}

const Font& Font::large() {
    static const Font font(fonts::kLarge);
    return font;
}

int Font::lineHeight() const { return data_->height; }
int Font::ascent() const { return data_->ascent; }

int Font::textWidth(const std::string& text) const {
    int w = 0;
    for (char c : text) w += glyphFor(*data_, c).advance;
    return w;
}

Font::Mask Font::rasterize(const std::string& text) const {
    Mask m;
    m.width = textWidth(text);
    m.height = data_->height;
    m.alpha.assign(static_cast<size_t>(m.width) * m.height, 0);
    int pen = 0;
    for (char c : text) {
        const auto& g = glyphFor(*data_, c);
        for (int row = 0; row < m.height; ++row) {
            for (int col = 0; col < g.width; ++col) {
                int x = pen + g.xOffset + col;
                if (x < 0 || x >= m.width) continue;
                uint8_t a = data_->alpha[g.offset + row * g.width + col];
                auto& dst = m.alpha[static_cast<size_t>(row) * m.width + x];
                dst = std::max(dst, a);
            }
        }
        pen += g.advance;
    }
    return m;
}

}  // namespace kvlens::viz
