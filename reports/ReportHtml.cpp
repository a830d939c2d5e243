#include "reports/ReportHtml.h"

#include <algorithm>
#include <cmath>
#include <ctime>
#include <sstream>

#include "reports/Base64.h"
#include "reports/ReportText.h"

namespace kvlens {
namespace {

using X = ReportText;

const char* kCss = R"(
body { font-family: "DejaVu Sans", Verdana, Arial, sans-serif; font-size: 14px; color: #222;
       max-width: 1100px; margin: 24px auto; padding: 0 16px; line-height: 1.4; }
h1 { font-size: 24px; margin-bottom: 4px; }
h2 { font-size: 19px; border-bottom: 1px solid #ccc; padding-bottom: 3px; margin-top: 32px; }
h3 { font-size: 16px; margin-bottom: 4px; }
p.meta { color: #555; margin-top: 0; }
table { border-collapse: collapse; margin: 8px 0; font-size: 13px; }
th, td { border: 1px solid #ccc; padding: 3px 8px; text-align: left; vertical-align: top; }
th { background: #f2f2f2; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
td.best { font-weight: bold; background: #e4f1e4; }
caption { caption-side: bottom; text-align: left; color: #555; font-size: 12px; padding-top: 4px; }
figure { margin: 16px 0; page-break-inside: avoid; break-inside: avoid; }
figure svg, figure img { max-width: 100%; height: auto; display: block; }
figcaption { color: #555; font-size: 12px; margin-top: 4px; }
pre.prompt, p.text { white-space: pre-wrap; font-family: "DejaVu Sans Mono", monospace; font-size: 12px;
       background: #f7f7f7; border: 1px solid #e0e0e0; padding: 6px 8px; }
span.diverged { background: #ffd8b0; }
@media print {
  body { max-width: none; margin: 0; font-size: 11px; }
  h2 { page-break-after: avoid; break-after: avoid; }
  table, pre.prompt, p.text { page-break-inside: avoid; break-inside: avoid; }
}
)";

std::string modelFacts(const sessions::ModelRecord& m) {
    std::ostringstream o;
    o << X::xml(m.architecture) << ", " << m.layers << " layers, " << m.heads << " query heads, " << m.kvHeads
      << " KV heads, head dim " << m.headDim << ", context " << m.contextLength << ", vocabulary " << m.vocabSize;
    return o.str();
}

}  // namespace

ReportHtml::ReportHtml(const ReportData& data, const std::vector<ReportFigure>& figures)
    : data_(data), figures_(figures) {
    tables_.push_back(ReportTables::settings(data));
    tables_.push_back(ReportTables::metrics(data));
    tables_.push_back(ReportTables::overlap(data));
}

std::string ReportHtml::inlineSvg(const std::string& svg, const std::string& idPrefix) {
    std::string s = svg;
    if (s.rfind("<?xml", 0) == 0) s.erase(0, s.find("?>") + 2);
    while (!s.empty() && (s[0] == '\n' || s[0] == '\r')) s.erase(0, 1);
    for (const std::string key : {" id=\"", "url(#", "href=\"#"}) {
        for (size_t at = s.find(key); at != std::string::npos; at = s.find(key, at + key.size() + idPrefix.size())) {
            s.insert(at + key.size(), idPrefix);
        }
    }
    return s;
}

std::string ReportHtml::table(const ReportTable& t, Mode mode) const {
    std::ostringstream o;
    const bool print = mode == Mode::Print;
    o << "<h3>" << X::xml(t.title) << "</h3>\n";
    o << (print ? "<table border=\"1\" cellspacing=\"0\" cellpadding=\"2\" width=\"100%\" style=\"font-size: 7.5pt;\">\n"
                : "<table id=\"table-" + t.name + "\">\n");
    if (!print) o << "<caption>" << X::xml(t.caption) << "</caption>\n";
    o << "<thead><tr>";
    for (const auto& h : t.header) o << (print ? "<th bgcolor=\"#eeeeee\">" : "<th>") << X::xml(h) << "</th>";
    o << "</tr></thead>\n<tbody>\n";
    for (size_t r = 0; r < t.rows.size(); ++r) {
        o << "<tr>";
        for (size_t c = 0; c < t.rows[r].size(); ++c) {
            const ReportCell& cell = t.rows[r][c];
            std::string cls = cell.numeric ? "num" : "";
            if (cell.best) cls += cls.empty() ? "best" : " best";
            o << "<td";
            if (!cls.empty() && !print) o << " class=\"" << cls << "\"";
            if (print && cell.numeric) o << " align=\"right\" style=\"white-space: nowrap;\"";
            if (print && cell.best) o << " bgcolor=\"#dff0df\"";
            if (!print && cell.numeric) {
                o << " data-run=\"" << t.rowRuns[r] << "\" data-column=\"" << X::xml(t.columnIds[c])
                  << "\" data-value=\"" << X::exact(cell.value) << "\"";
            }
            o << ">" << (cell.best && print ? "<b>" : "") << X::xml(cell.text) << (cell.best && print ? "</b>" : "")
              << "</td>";
        }
        o << "</tr>\n";
    }
    o << "</tbody>\n</table>\n";
    if (print) o << "<p><small>" << X::xml(t.caption) << "</small></p>\n";
    return o.str();
}

std::string ReportHtml::figure(const ReportFigure& f, Mode mode) const {
    std::ostringstream o;
    if (mode == Mode::Print) {
        // No heading: the picture carries its title, and a heading alone at the foot
        // of a page would be parted from it.
        // QTextDocument lays out in CSS pixels of the page: 680 fills an A4 column and
        // 900 leaves room on a page for the caption; taller figures are scaled down to fit.
        const double scale = std::min(680.0 / std::max(1, f.width), 900.0 / std::max(1, f.height));
        const int width = int(std::lround(f.width * scale));
        const int height = int(std::lround(f.height * scale));
        o << "<p><img src=\"" << X::xml(figureResource(f)) << "\" width=\"" << width << "\" height=\"" << height
          << "\" /></p>\n<p><small>" << X::xml(f.caption) << " (figures/" << X::xml(f.name) << ".svg, .png, .csv)"
          << "</small></p>\n";
        return o.str();
    }
    o << "<h3>" << X::xml(f.title) << "</h3>\n<figure id=\"fig-" << X::xml(f.name) << "\">\n";
    if (f.raster) {
        o << "<img src=\"data:image/png;base64," << Base64::encode(f.png) << "\" width=\"" << f.width
          << "\" height=\"" << f.height << "\" alt=\"" << X::xml(f.title) << "\" />\n";
    } else {
        o << inlineSvg(f.svg, f.name + "-") << "\n";
    }
    o << "<figcaption>" << X::xml(f.caption) << " Files: figures/" << X::xml(f.name)
      << (f.png.empty() ? ".svg, .csv." : ".svg, .png, .csv.")
      << "</figcaption>\n</figure>\n";
    return o.str();
}

std::string ReportHtml::continuations(Mode mode) const {
    std::ostringstream o;
    const bool print = mode == Mode::Print;
    const std::string textOpen =
        print ? "<p style=\"white-space: pre-wrap; font-family: 'DejaVu Sans Mono', monospace; font-size: 9pt;\">"
              : "<p class=\"text\">";
    const std::string divOpen =
        print ? "<span style=\"background-color: #ffd8b0;\">" : "<span class=\"diverged\">";
    const std::string& full = data_.runs.front().fullText;
    o << "<h3>Full cache</h3>\n" << textOpen << X::xml(full) << "</p>\n";
    for (const auto& r : data_.runs) {
        if (r.params.isFull()) continue;
        const size_t same = ReportText::commonPrefix(r.fullText, r.text);
        o << "<h3>" << X::xml(ReportData::label(r)) << " \xe2\x80\x94 agreed@div " << r.metrics.agreedPrefix << "/"
          << r.newTokens << " tokens, agreement " << X::percent(r.metrics.tokenAgreement) << "</h3>\n";
        o << textOpen << X::xml(r.text.substr(0, same));
        if (same < r.text.size()) o << divOpen << X::xml(r.text.substr(same)) << "</span>";
        o << "</p>\n";
    }
    return o.str();
}

std::string ReportHtml::document(Mode mode) const {
    const ReportData& d = data_;
    const bool print = mode == Mode::Print;
    std::ostringstream o;
    o << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<!DOCTYPE html>\n"
      << "<html xmlns=\"http://www.w3.org/1999/xhtml\" lang=\"en\" xml:lang=\"en\">\n<head>\n"
      << "<meta charset=\"UTF-8\" />\n<title>KV Lens report: " << X::xml(d.session.name) << "</title>\n";
    if (!print) o << "<style>" << kCss << "</style>\n";
    o << "</head>\n<body" << (print ? " style=\"font-family: 'DejaVu Sans'; font-size: 10pt;\"" : "") << ">\n";
    o << "<h1>KV Lens report: session " << X::xml(d.session.name) << "</h1>\n";
    o << "<p class=\"meta\">" << d.runs.size() << " run" << (d.runs.size() == 1 ? "" : "s") << " from "
      << X::xml(d.storePath);
    if (d.skippedFailed) o << " (" << d.skippedFailed << " failed run" << (d.skippedFailed == 1 ? "" : "s") << " left out)";
    o << ".</p>\n";
    if (!d.session.notes.empty()) o << "<p>" << X::xml(d.session.notes) << "</p>\n";

    o << "<h2>Model and prompt</h2>\n";
    o << "<p><b>Model</b> " << X::xml(d.model.spec) << ": " << modelFacts(d.model);
    if (d.model.isFile) o << "; SHA-256 " << X::xml(d.model.sha256.substr(0, 16)) << "\xe2\x80\xa6";
    o << (d.model.isFile ? "</p>\n" : ".</p>\n");
    const size_t previewChars = 600;
    const std::string preview = ReportText::preview(d.prompt.text, previewChars);
    o << "<p><b>Prompt</b> " << d.promptLength() << " tokens" << (d.prompt.addBos ? " (BOS included)" : "") << ", "
      << d.prompt.text.size() << " bytes" << (preview.size() < d.prompt.text.size() ? "; the first 600 characters:" : ":")
      << "</p>\n";
    o << (print ? "<p style=\"white-space: pre-wrap; font-family: 'DejaVu Sans Mono', monospace; font-size: 9pt;\">"
                : "<pre class=\"prompt\">")
      << X::xml(preview) << (preview.size() < d.prompt.text.size() ? "\xe2\x80\xa6" : "") << (print ? "</p>" : "</pre>")
      << "\n";

    o << "<h2>Runs</h2>\n" << table(tables_[0], mode) << table(tables_[1], mode);

    o << "<h2>Figures</h2>\n";
    for (const ReportFigure& f : figures_) {
        o << figure(f, mode);
        if (f.name == "overlap" && !tables_[2].rows.empty()) o << table(tables_[2], mode);
    }

    o << "<h2>Continuations</h2>\n<p>Greedy continuations of the prompt. Each run's text is marked from the first "
         "character where it leaves the full cache's.</p>\n"
      << continuations(mode);
    o << "</body>\n</html>\n";
    return o.str();
}

}  // namespace kvlens
