// Image drawing primitives.
#include "viz/Image.h"

#include <algorithm>
#include <cstdlib>

#include "core/Error.h"

namespace kvlens::viz {

namespace {

// Top-left corner of a w x h box anchored at (x, y).
void anchorOrigin(Anchor a, int x, int y, int w, int h, int& ox, int& oy) {
    int col = 0, row = 0;
    switch (a) {
        case Anchor::TopLeft: col = 0; row = 0; break;
        case Anchor::TopCenter: col = 1; row = 0; break;
        case Anchor::TopRight: col = 2; row = 0; break;
        case Anchor::MiddleLeft: col = 0; row = 1; break;
        case Anchor::Center: col = 1; row = 1; break;
        case Anchor::MiddleRight: col = 2; row = 1; break;
        case Anchor::BottomLeft: col = 0; row = 2; break;
        case Anchor::BottomCenter: col = 1; row = 2; break;
        case Anchor::BottomRight: col = 2; row = 2; break;
    }
    ox = x - (col == 0 ? 0 : col == 1 ? w / 2 : w);
    oy = y - (row == 0 ? 0 : row == 1 ? h / 2 : h);
}

}  // namespace

Image::Image(int width, int height, Rgb background) : width_(width), height_(height) {
    if (width < 1 || height < 1 || width > kMaxSide || height > kMaxSide) {
        throw Error("image size " + std::to_string(width) + "x" + std::to_string(height) +
                    ": each side must be 1.." + std::to_string(kMaxSide));
    }
    pixels_.resize(static_cast<size_t>(width) * height * 3);
    fill(background);
}

Rgb Image::at(int x, int y) const {
    size_t i = (static_cast<size_t>(y) * width_ + x) * 3;
    return {pixels_[i], pixels_[i + 1], pixels_[i + 2]};
}

void Image::set(int x, int y, Rgb c) {
    if (x < 0 || y < 0 || x >= width_ || y >= height_) return;
    size_t i = (static_cast<size_t>(y) * width_ + x) * 3;
    pixels_[i] = c.r;
    pixels_[i + 1] = c.g;
    pixels_[i + 2] = c.b;
}

void Image::blend(int x, int y, Rgb c, double alpha) {
    if (x < 0 || y < 0 || x >= width_ || y >= height_) return;
    set(x, y, Rgb::blend(at(x, y), c, alpha));
}

void Image::fill(Rgb c) {
    for (size_t i = 0; i < pixels_.size(); i += 3) {
        pixels_[i] = c.r;
        pixels_[i + 1] = c.g;
        pixels_[i + 2] = c.b;
    }
}

void Image::fillRect(int x, int y, int w, int h, Rgb c) {
    int x0 = std::max(x, 0), y0 = std::max(y, 0);
    int x1 = std::min(x + w, width_), y1 = std::min(y + h, height_);
    for (int yy = y0; yy < y1; ++yy)
        for (int xx = x0; xx < x1; ++xx) set(xx, yy, c);
}

void Image::strokeRect(int x, int y, int w, int h, Rgb c) {
    if (w <= 0 || h <= 0) return;
    hline(x, x + w - 1, y, c);
    hline(x, x + w - 1, y + h - 1, c);
    vline(x, y, y + h - 1, c);
    vline(x + w - 1, y, y + h - 1, c);
}

void Image::hline(int x0, int x1, int y, Rgb c) {
    if (x0 > x1) std::swap(x0, x1);
    for (int x = std::max(x0, 0); x <= std::min(x1, width_ - 1); ++x) set(x, y, c);
}

void Image::vline(int x, int y0, int y1, Rgb c) {
    if (y0 > y1) std::swap(y0, y1);
    for (int y = std::max(y0, 0); y <= std::min(y1, height_ - 1); ++y) set(x, y, c);
}

void Image::line(int x0, int y0, int x1, int y1, Rgb c) {
    int dx = std::abs(x1 - x0), sx = x0 < x1 ? 1 : -1;
    int dy = -std::abs(y1 - y0), sy = y0 < y1 ? 1 : -1;
    int err = dx + dy;
    while (true) {
        set(x0, y0, c);
        if (x0 == x1 && y0 == y1) break;
        int e2 = 2 * err;
        if (e2 >= dy) { err += dy; x0 += sx; }
        if (e2 <= dx) { err += dx; y0 += sy; }
    }
}

void Image::blit(const Image& src, int x, int y) {
    for (int yy = 0; yy < src.height(); ++yy)
        for (int xx = 0; xx < src.width(); ++xx) set(x + xx, y + yy, src.at(xx, yy));
}

int Image::drawText(int x, int y, const std::string& text, Rgb color, const Font& font,
                    Anchor anchor) {
    Font::Mask m = font.rasterize(text);
    int ox, oy;
    anchorOrigin(anchor, x, y, m.width, m.height, ox, oy);
    for (int r = 0; r < m.height; ++r)
        for (int c = 0; c < m.width; ++c) {
            uint8_t a = m.alpha[static_cast<size_t>(r) * m.width + c];
            if (a) blend(ox + c, oy + r, color, a / 255.0);
        }
    return m.width;
}

int Image::drawTextVertical(int x, int y, const std::string& text, Rgb color, const Font& font,
                            Anchor anchor) {
    Font::Mask m = font.rasterize(text);
    int ox, oy;
    anchorOrigin(anchor, x, y, m.height, m.width, ox, oy);
    // Glyph pixel (c, r) of the horizontal line lands at (r, width - 1 - c) when turned
    // counter-clockwise.
    for (int r = 0; r < m.height; ++r)
        for (int c = 0; c < m.width; ++c) {
            uint8_t a = m.alpha[static_cast<size_t>(r) * m.width + c];
            if (a) blend(ox + r, oy + (m.width - 1 - c), color, a / 255.0);
        }
    return m.width;
}

}  // namespace kvlens::viz
