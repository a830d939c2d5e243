// PNG encoding and decoding of viz::Image through libpng (8-bit RGB, no interlace).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "viz/Image.h"

namespace kvlens::viz {

// The PNG file bytes of image.
std::vector<uint8_t> encodePng(const Image& image);
// Writes image to path as PNG. Throws kvlens::Error "<path>: cannot write: ..." on failure.
void writePng(const Image& image, const std::string& path);
// Reads a PNG (any bit depth and colour type; alpha is dropped, grey expanded to RGB).
// Throws kvlens::Error "<path>: ..." when the file is missing or not a valid PNG.
Image readPng(const std::string& path);

}  // namespace kvlens::viz
