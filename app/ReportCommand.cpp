// kvlens report: a self-contained comparison report of a session's runs (HTML, PDF
// and a folder of figures and tables), from the session store alone.
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <filesystem>

#include "app/CommandLine.h"
#include "app/Commands.h"
#include "app/RunSaver.h"
#include "core/Error.h"
#include "reports/ReportData.h"
#include "reports/NiahReport.h"
#include "reports/ReportPdf.h"
#include "reports/ReportWriter.h"
#include "reports/SvgRasterizer.h"
#include "sessions/ModelFile.h"
#include "sessions/SessionStore.h"

namespace kvlens {
namespace {

const char* kReportUsage =
    "usage: kvlens report --session NAME [--runs ID,ID,...] [--store PATH] --out DIR\n"
    "Writes a comparison report of a session's runs, from the store alone (no model):\n"
    "  DIR/report.html  one self-contained page (inline SVG and PNG; prints well)\n"
    "  DIR/report.pdf   the same, A4\n"
    "  DIR/figures/     every figure as SVG, PNG and CSV, every table as CSV\n"
    "(A build without Qt, -DKVLENS_GUI=OFF, writes no PDF and no PNG copies of the charts.)\n"
    "It holds the model and prompt, each run's settings, a metrics table with the best\n"
    "value of each column marked, the attention funnel with every run's layer budgets,\n"
    "kept-position maps, selection overlap, budget sweeps and the continuations.\n"
    "A session of needle-in-a-haystack runs (kvlens niah --save) gets DIR/niah.html and\n"
    "DIR/niah_table.csv: per task and question mode, depth x length heatmaps of accuracy\n"
    "and needle kept for every method and budget, accuracy against the budget, a table.\n"
    "  --runs   the runs to compare, in this order (default: every complete run)\n"
    "  --store  default $XDG_DATA_HOME/kvlens/sessions.db, else ~/.local/share/kvlens/sessions.db\n";

std::vector<int64_t> parseRuns(const std::string& text) {
    std::vector<int64_t> ids;
    size_t start = 0;
    while (start <= text.size()) {
        const size_t end = std::min(text.find(',', start), text.size());
        const std::string item = text.substr(start, end - start);
        char* stop = nullptr;
        errno = 0;
        const long long v = item.empty() ? 0 : std::strtoll(item.c_str(), &stop, 10);
        if (item.empty() || *stop != '\0' || errno != 0 || v < 1) {
            throw Error("--runs '" + text + "': '" + item + "' is not a run id (a positive integer)");
        }
        ids.push_back(v);
        start = end + 1;
    }
    return ids;
}

}  // namespace

int runReport(const std::vector<std::string>& argv) {
    CommandLine args("report", argv, {"--session", "--runs", "--store", "--out"}, {"--help"});
    if (args.has("--help")) {
        std::fputs(kReportUsage, stdout);
        return 0;
    }
    if (!args.has("--session") || args.get("--session").empty()) throw Error("kvlens report: --session NAME is required");
    if (!args.has("--out") || args.get("--out").empty()) throw Error("kvlens report: --out DIR is required");
    const std::vector<int64_t> runs = args.has("--runs") ? parseRuns(args.get("--runs")) : std::vector<int64_t>{};
    const std::string storePath = RunSaver::storePath(args);
    if (!sessions::ModelFile::stat(storePath).exists) {
        throw Error(storePath + ": no session store there (save runs with kvlens run/compare --save)");
    }
    sessions::SessionStore store(storePath, sessions::SessionStore::Access::ReadOnly);
    const std::string out = args.get("--out");
    // A session of niah sweeps (kvlens niah --save) gets the needle report; one with
    // ordinary runs too gets both.
    const sessions::SessionInfo info = store.session(args.get("--session"));
    const bool niah = !store.niahRuns(info.id).empty();
    if (niah) {
        if (!runs.empty() && info.runCount == 0) throw Error("kvlens report: --runs picks ordinary runs; session '" +
                                                            info.name + "' holds only niah runs");
        const std::vector<std::string> written = NiahReport::write(store, info.name, out);
        if (!SvgRasterizer::available()) {
            std::fprintf(stderr, "kvlens report: this kvlens was built without Qt (-DKVLENS_GUI=OFF): no PNG copies "
                                 "of the charts\n");
        }
        std::printf("wrote the needle-in-a-haystack report of session '%s' to %s (niah.html, niah_table.csv, "
                    "figures/: %zu files)\n",
                    info.name.c_str(), out.c_str(), written.size() - 2);
        if (info.runCount == 0) return 0;
    }
    const ReportData data = ReportData::load(store, args.get("--session"), runs);
    const std::vector<std::string> written = ReportWriter::write(data, out);
    const bool pdf = ReportPdf::available();
    std::printf("wrote the report of %zu run%s of session '%s' to %s (report.html%s, figures/: %zu files)\n",
                data.runs.size(), data.runs.size() == 1 ? "" : "s", data.session.name.c_str(), out.c_str(),
                pdf ? ", report.pdf" : "", written.size() - (pdf ? 2 : 1));
    if (!pdf) {
        std::fprintf(stderr, "kvlens report: this kvlens was built without Qt (-DKVLENS_GUI=OFF): no report.pdf and "
                             "no PNG copies of the charts (a full build writes them from the same store)\n");
    }
    return 0;
}

}  // namespace kvlens
