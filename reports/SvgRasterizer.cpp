#include "reports/SvgRasterizer.h"

#include "core/Error.h"

#if KVLENS_REPORTS_QT
#include <QBuffer>
#include <QByteArray>
#include <QImage>
#include <QPainter>
#include <QSvgRenderer>
#include <cmath>

#include "reports/QtRuntime.h"
#endif

namespace kvlens {

#if KVLENS_REPORTS_QT

namespace {

// QtSvg before 6.7 knows no <clipPath>: it draws the clip rectangle as a black fill.
// Every path of our charts lies inside its plot area, so the clips can go.
std::string withoutClipPaths(std::string svg) {
    for (size_t at = svg.find("<clipPath"); at != std::string::npos; at = svg.find("<clipPath", at)) {
        const size_t end = svg.find("</clipPath>", at);
        if (end == std::string::npos) break;
        svg.erase(at, end + 11 - at);
    }
    for (size_t at = svg.find(" clip-path=\""); at != std::string::npos; at = svg.find(" clip-path=\"", at)) {
        const size_t end = svg.find('"', at + 12);
        if (end == std::string::npos) break;
        svg.erase(at, end + 1 - at);
    }
    return svg;
}

}  // namespace

std::vector<uint8_t> SvgRasterizer::png(const std::string& svgText, double scale) {
    QtRuntime::ensure();
    const std::string svg = withoutClipPaths(svgText);
    QSvgRenderer renderer(QByteArray(svg.data(), qsizetype(svg.size())));
    if (!renderer.isValid()) throw Error("a chart of the report is not an SVG Qt can read");
    const QSize size = renderer.defaultSize();
    QImage image(int(std::lround(size.width() * scale)), int(std::lround(size.height() * scale)),
                 QImage::Format_RGB32);
    image.fill(Qt::white);
    {
        QPainter painter(&image);
        painter.setRenderHint(QPainter::Antialiasing);
        painter.setRenderHint(QPainter::TextAntialiasing);
        renderer.render(&painter);
    }
    QByteArray bytes;
    QBuffer buffer(&bytes);
    buffer.open(QIODevice::WriteOnly);
    if (!image.save(&buffer, "PNG")) throw Error("cannot encode a chart of the report as PNG");
    return std::vector<uint8_t>(bytes.begin(), bytes.end());
}

bool SvgRasterizer::available() { return true; }

#else

std::vector<uint8_t> SvgRasterizer::png(const std::string&, double) {
    throw Error("PNG charts need Qt: this kvlens was built without it (-DKVLENS_GUI=OFF)");
}

bool SvgRasterizer::available() { return false; }

#endif

}  // namespace kvlens
