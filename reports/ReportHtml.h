// The report as one XHTML document (well-formed XML, so strict parsers and xmllint
// accept it): model and prompt, the settings and metrics tables, every figure with
// its caption, the overlap table, and the continuations with the divergence marked.
//   Browser: self-contained — charts as inline SVG, maps as PNG data: URIs, CSS for
//            screen and print; no external requests.
//   Print:   the same content in the HTML subset QTextDocument draws, every figure an
//            <img> whose src is the resource name figureResource() gives (the PDF
//            registers the PNGs under those names).
#pragma once

#include <string>
#include <vector>

#include "reports/ReportData.h"
#include "reports/ReportFigures.h"
#include "reports/ReportTables.h"

namespace kvlens {

class ReportHtml {
public:
    enum class Mode { Browser, Print };

    ReportHtml(const ReportData& data, const std::vector<ReportFigure>& figures);

    std::string document(Mode mode) const;

    static std::string figureResource(const ReportFigure& figure) { return "figures/" + figure.name + ".png"; }
    // An SVG document ready to sit inside XHTML: no XML declaration, its ids (and the
    // references to them) prefixed so that several charts on one page do not clash.
    static std::string inlineSvg(const std::string& svg, const std::string& idPrefix);
    // The three tables, in report order (settings, metrics, overlap).
    const std::vector<ReportTable>& tables() const { return tables_; }

private:
    std::string table(const ReportTable& t, Mode mode) const;
    std::string figure(const ReportFigure& f, Mode mode) const;
    std::string continuations(Mode mode) const;

    const ReportData& data_;
    const std::vector<ReportFigure>& figures_;
    std::vector<ReportTable> tables_;
};

}  // namespace kvlens
