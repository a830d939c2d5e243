// An 8-bit RGB raster with the drawing primitives figures need: filled rectangles,
// horizontal, vertical and general lines, blits, and anti-aliased text (horizontal, or
// rotated to read bottom-to-top for y-axis labels). Coordinates are pixels, (0,0) at the
// top left; drawing outside the image is clipped silently.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "viz/Font.h"
#include "viz/Rgb.h"

namespace kvlens::viz {

// Where the point passed to drawText sits on the text's box.
enum class Anchor { TopLeft, TopCenter, TopRight, MiddleLeft, Center, MiddleRight,
                    BottomLeft, BottomCenter, BottomRight };

class Image {
public:
    static constexpr int kMaxSide = 32768;

    // Throws kvlens::Error unless 1 <= width, height <= kMaxSide.
    Image(int width, int height, Rgb background = Rgb{255, 255, 255});

    int width() const { return width_; }
    int height() const { return height_; }
    // Row-major RGB bytes, 3 per pixel.
    const std::vector<uint8_t>& bytes() const { return pixels_; }

    // Pixel access; at() requires 0 <= x < width, 0 <= y < height.
    Rgb at(int x, int y) const;
    void set(int x, int y, Rgb c);  // ignored outside the image
    void blend(int x, int y, Rgb c, double alpha);

    void fill(Rgb c);
    void fillRect(int x, int y, int w, int h, Rgb c);
    void strokeRect(int x, int y, int w, int h, Rgb c);  // 1-px outline inside the rect
    void hline(int x0, int x1, int y, Rgb c);            // inclusive ends, any order
    void vline(int x, int y0, int y1, Rgb c);
    void line(int x0, int y0, int x1, int y1, Rgb c);    // Bresenham, inclusive ends
    void blit(const Image& src, int x, int y);

    // Draws one line of text with its box anchored at (x, y); returns the text width.
    int drawText(int x, int y, const std::string& text, Rgb color,
                 const Font& font = Font::normal(), Anchor anchor = Anchor::TopLeft);
    // The same, rotated 90 degrees counter-clockwise (reads bottom to top); the anchor
    // refers to the rotated box (font height wide, text width tall).
    int drawTextVertical(int x, int y, const std::string& text, Rgb color,
                         const Font& font = Font::normal(), Anchor anchor = Anchor::Center);

private:
    int width_, height_;
    std::vector<uint8_t> pixels_;
};

}  // namespace kvlens::viz
