// The report as PDF: QTextDocument lays out ReportHtml's Print document (A4, the
// figures' PNGs registered as its image resources) and draws it page by page into a
// QPdfWriter, headless (QtRuntime), with lossless images. A build without Qt
// (-DKVLENS_GUI=OFF) writes no PDF: available() is false and render() throws.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "reports/ReportFigures.h"

namespace kvlens {

class ReportPdf {
public:
    // The PDF file's bytes. Throws kvlens::Error when a figure's PNG cannot be read.
    static std::vector<uint8_t> render(const std::string& printHtml, const std::vector<ReportFigure>& figures,
                                       const std::string& title);
    // False in a build without Qt.
    static bool available();
};

}  // namespace kvlens
