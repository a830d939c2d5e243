// libpng glue: encode to memory, write via OutputFile, decode for tests and tools.
#include "viz/Png.h"

#include <png.h>

#include <csetjmp>
#include <cstdio>
#include <cstring>
#include <cerrno>

#include "core/Error.h"
#include "viz/OutputFile.h"

namespace kvlens::viz {

namespace {

void appendBytes(png_structp png, png_bytep data, png_size_t n) {
    auto* out = static_cast<std::vector<uint8_t>*>(png_get_io_ptr(png));
    out->insert(out->end(), data, data + n);
}

void noFlush(png_structp) {}

// libpng reports errors by longjmp; the message is kept for our exception.
void onError(png_structp png, png_const_charp message) {
    auto* text = static_cast<std::string*>(png_get_error_ptr(png));
    if (text) *text = message;
    png_longjmp(png, 1);
}

void onWarning(png_structp, png_const_charp) {}

}  // namespace

std::vector<uint8_t> encodePng(const Image& image) {
    std::vector<uint8_t> out;
    std::string message;
    png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, &message, onError, onWarning);
    if (!png) throw Error("PNG encoder: out of memory");
    png_infop info = png_create_info_struct(png);
    if (!info) {
        png_destroy_write_struct(&png, nullptr);
        throw Error("PNG encoder: out of memory");
    }
    std::vector<png_bytep> rows(image.height());
    if (setjmp(png_jmpbuf(png))) {
        png_destroy_write_struct(&png, &info);
        throw Error("PNG encoder: " + message);
    }
    png_set_write_fn(png, &out, appendBytes, noFlush);
    png_set_IHDR(png, info, image.width(), image.height(), 8, PNG_COLOR_TYPE_RGB,
                 PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
    png_set_compression_level(png, 6);
    auto* base = const_cast<uint8_t*>(image.bytes().data());
    for (int y = 0; y < image.height(); ++y) rows[y] = base + static_cast<size_t>(y) * image.width() * 3;
    png_set_rows(png, info, rows.data());
    png_write_png(png, info, PNG_TRANSFORM_IDENTITY, nullptr);
    png_destroy_write_struct(&png, &info);
    return out;
}

void writePng(const Image& image, const std::string& path) {
    std::vector<uint8_t> bytes = encodePng(image);
    writeOutputFile(path, bytes.data(), bytes.size());
}

Image readPng(const std::string& path) {
    std::FILE* f = std::fopen(path.c_str(), "rb");
    if (!f) throw Error(path + ": cannot read: " + std::strerror(errno));
    uint8_t sig[8] = {};
    if (std::fread(sig, 1, 8, f) != 8 || png_sig_cmp(sig, 0, 8) != 0) {
        std::fclose(f);
        throw Error(path + ": not a PNG file");
    }
    std::string message;
    png_structp png = png_create_read_struct(PNG_LIBPNG_VER_STRING, &message, onError, onWarning);
    png_infop info = png ? png_create_info_struct(png) : nullptr;
    if (!png || !info) {
        png_destroy_read_struct(&png, nullptr, nullptr);
        std::fclose(f);
        throw Error(path + ": PNG decoder: out of memory");
    }
    if (setjmp(png_jmpbuf(png))) {
        png_destroy_read_struct(&png, &info, nullptr);
        std::fclose(f);
        throw Error(path + ": invalid PNG: " + message);
    }
    png_init_io(png, f);
    png_set_sig_bytes(png, 8);
    png_read_png(png, info,
                 PNG_TRANSFORM_STRIP_16 | PNG_TRANSFORM_PACKING | PNG_TRANSFORM_EXPAND |
                     PNG_TRANSFORM_STRIP_ALPHA | PNG_TRANSFORM_GRAY_TO_RGB,
                 nullptr);
    int w = static_cast<int>(png_get_image_width(png, info));
    int h = static_cast<int>(png_get_image_height(png, info));
    png_bytepp rows = png_get_rows(png, info);
    Image image(w, h);
    for (int y = 0; y < h; ++y)
        for (int x = 0; x < w; ++x) image.set(x, y, {rows[y][3 * x], rows[y][3 * x + 1], rows[y][3 * x + 2]});
    png_destroy_read_struct(&png, &info, nullptr);
    std::fclose(f);
    return image;
}

}  // namespace kvlens::viz
