#include "reports/ReportWriter.h"

#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "core/Error.h"
#include "reports/ReportFigures.h"
#include "reports/ReportHtml.h"
#include "reports/ReportPdf.h"
#include "reports/ReportTables.h"
#include "viz/OutputFile.h"

namespace kvlens {

namespace fs = std::filesystem;

void ReportWriter::prepare(const std::string& dir) {
    if (dir.empty()) throw Error("--out: the folder name is empty");
    std::error_code ec;
    const fs::path figures = fs::path(dir) / "figures";
    fs::create_directories(figures, ec);
    if (ec) throw Error("--out " + dir + ": cannot create the folder: " + ec.message());
    if (!fs::is_directory(figures, ec)) throw Error("--out " + dir + ": not a folder");
    for (const fs::path& p : {fs::path(dir), figures}) {
        if (::access(p.c_str(), W_OK | X_OK) != 0) {
            throw Error("--out " + dir + ": cannot write into " + p.string() + ": " + std::strerror(errno));
        }
    }
}

std::vector<std::string> ReportWriter::write(const ReportData& data, const std::string& dir) {
    prepare(dir);
    const std::vector<ReportFigure> figures = ReportFigures::build(data);
    const ReportHtml html(data, figures);
    std::vector<std::string> written;
    const fs::path figuresDir = fs::path(dir) / "figures";
    for (const ReportFigure& f : figures) {
        const std::string stem = (figuresDir / f.name).string();
        viz::writeOutputFile(stem + ".svg", f.svg);
        f.csv.write(stem + ".csv");
        written.insert(written.end(), {stem + ".svg", stem + ".csv"});
        if (f.png.empty()) continue;  // a chart in a build without Qt: no rasteriser
        viz::writeOutputFile(stem + ".png", f.png.data(), f.png.size());
        written.push_back(stem + ".png");
    }
    for (const ReportTable& t : html.tables()) {
        if (t.rows.empty()) continue;
        const std::string path = (figuresDir / (t.name + ".csv")).string();
        t.csv().write(path);
        written.push_back(path);
    }
    const viz::CsvTable pairs = ReportTables::overlapPerLayer(data);
    if (!pairs.rows().empty()) {
        const std::string path = (figuresDir / "overlap_layers.csv").string();
        pairs.write(path);
        written.push_back(path);
    }
    const std::string htmlPath = (fs::path(dir) / "report.html").string();
    viz::writeOutputFile(htmlPath, html.document(ReportHtml::Mode::Browser));
    written.push_back(htmlPath);
    if (!ReportPdf::available()) return written;
    const std::vector<uint8_t> pdf =
        ReportPdf::render(html.document(ReportHtml::Mode::Print), figures, "KV Lens report: " + data.session.name);
    const std::string pdfPath = (fs::path(dir) / "report.pdf").string();
    viz::writeOutputFile(pdfPath, pdf.data(), pdf.size());
    written.push_back(pdfPath);
    return written;
}

}  // namespace kvlens
