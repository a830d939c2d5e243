// kvlens report's library end to end: a store made here, a report written from it,
// and checks that the HTML is well-formed and self-contained, the PDF renders, the
// figures in the three are the same, and every number in the tables is the stored one.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>

#include "ReportSampleStore.h"
#include "core/Error.h"
#include "reports/Base64.h"
#include "reports/ReportData.h"
#include "reports/ReportHtml.h"
#include "reports/ReportWriter.h"
#include "viz/Png.h"

namespace kvlens {
namespace {

namespace fs = std::filesystem;

std::string outputDir(const std::string& name) {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    const fs::path dir = fs::path(KVLENS_REPORTS_TEST_DIR) / (std::string(info->name()) + "_" + name);
    fs::remove_all(dir);
    fs::create_directories(dir.parent_path());
    return dir.string();
}

std::string storeFile() {
    const std::string path = outputDir("store.db");
    for (const char* suffix : {"-wal", "-shm", "-journal"}) ::unlink((path + suffix).c_str());
    return path;
}

std::string slurp(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
}

// stdout of a shell command, and its exit status.
std::pair<int, std::string> shell(const std::string& command) {
    std::string out;
    FILE* pipe = ::popen(command.c_str(), "r");
    if (!pipe) return {-1, ""};
    char buf[4096];
    size_t n;
    while ((n = std::fread(buf, 1, sizeof buf, pipe)) > 0) out.append(buf, n);
    const int status = ::pclose(pipe);
    return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, out};
}

void requireTool(const char* tool) {
    ASSERT_EQ(std::system((std::string("command -v ") + tool + " >/dev/null").c_str()), 0)
        << tool << " is missing: run scripts/setup";
}

// The part of html between <table id="table-NAME"> and its </table>.
std::string tableHtml(const std::string& html, const std::string& name) {
    const size_t at = html.find("<table id=\"table-" + name + "\">");
    if (at == std::string::npos) return "";
    return html.substr(at, html.find("</table>", at) - at);
}

struct Cell {
    bool best = false;
    std::string value, text;
};

// [run][column] of the numeric cells of a table.
std::map<int64_t, std::map<std::string, Cell>> numericCells(const std::string& table) {
    static const std::regex cell(
        "<td class=\"(num|num best)\" data-run=\"([0-9]+)\" data-column=\"([a-z0-9_]+)\" data-value=\"([^\"]+)\">([^<]*)</td>");
    std::map<int64_t, std::map<std::string, Cell>> out;
    for (auto it = std::sregex_iterator(table.begin(), table.end(), cell); it != std::sregex_iterator(); ++it) {
        const std::smatch& m = *it;
        out[std::stoll(m[2])][m[3]] = Cell{m[1] == "num best", m[4], m[5]};
    }
    return out;
}

double readValue(const std::string& text) { return text == "nan" ? std::nan("") : std::strtod(text.c_str(), nullptr); }

std::string percent(double f) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.1f%%", 100.0 * f);
    return buf;
}

// Independent of reports/: the Jaccard index of two position lists through std::set.
double setJaccard(const std::vector<int32_t>& a, const std::vector<int32_t>& b) {
    std::set<int32_t> sa(a.begin(), a.end()), sb(b.begin(), b.end()), all = sa;
    all.insert(sb.begin(), sb.end());
    size_t both = 0;
    for (int32_t p : sa) both += sb.count(p);
    return all.empty() ? 1.0 : double(both) / double(all.size());
}

class ReportTest : public ::testing::Test {
protected:
    void SetUp() override {
        storePath_ = storeFile();
        sessions::SessionStore store(storePath_);
        ids_ = test::makeReportSession(store, "cmp");
        store.createSession("empty");
    }
    std::string storePath_;
    std::vector<int64_t> ids_;
};

TEST_F(ReportTest, WritesWellFormedSelfContainedHtmlPdfAndFigures) {
    requireTool("xmllint");
    requireTool("pdftoppm");
    requireTool("pdfinfo");
    requireTool("pdfimages");
    sessions::SessionStore store(storePath_, sessions::SessionStore::Access::ReadOnly);
    const ReportData data = ReportData::load(store, "cmp");
    EXPECT_EQ(data.runs.size(), ids_.size());
    EXPECT_EQ(data.skippedFailed, 1);
    const std::string dir = outputDir("report");
    const std::vector<std::string> written = ReportWriter::write(data, dir);
    for (const std::string& f : written) EXPECT_TRUE(fs::is_regular_file(f)) << f;

    const std::string html = slurp(dir + "/report.html");
    EXPECT_EQ(std::system(("xmllint --noout '" + dir + "/report.html'").c_str()), 0);
    // Self-contained: every src is a data: URI; no scripts, links, imports or remote URLs.
    // (Scanned by hand: std::regex recurses per character and overflows on a data: URI.)
    int images = 0;
    for (size_t at = html.find("src=\""); at != std::string::npos; at = html.find("src=\"", at + 1), ++images) {
        EXPECT_EQ(html.compare(at + 5, 22, "data:image/png;base64,"), 0) << html.substr(at, 60);
    }
    EXPECT_EQ(images, 3);  // the kept-position maps of layers 0, 1, 2
    for (const char* bad : {"<script", "<link", "@import", "url(http", "src=\"http", "href=\"http"}) {
        EXPECT_EQ(html.find(bad), std::string::npos) << bad;
    }
    // Stored text that is not XML-safe arrives replaced, markup escaped.
    EXPECT_EQ(html.find('\x01'), std::string::npos);
    EXPECT_NE(html.find("\xef\xbf\xbd broken \xef\xbf\xbd\xef\xbf\xbd utf-8"), std::string::npos);
    EXPECT_NE(html.find("&lt;b&gt;Lily&lt;/b&gt; &amp; Tom"), std::string::npos);
    EXPECT_NE(html.find("notes with &lt;markup&gt; &amp; &quot;quotes&quot;"), std::string::npos);
    // The divergence is marked where the compressed text leaves the full one.
    EXPECT_NE(html.find("Tom <span class=\"diverged\">snapkv \xef\xbf\xbd broken"), std::string::npos);

    // Every figure in figures/ as SVG (well-formed), PNG and CSV; the same SVG is inline
    // in the HTML and the same PNG is embedded.
    const std::vector<std::string> figures = {"funnel",  "kept_L0", "kept_L1", "kept_L2",
                                              "overlap", "hitrate", "sweep",   "cache"};
    std::multiset<std::pair<int, int>> pngSizes;
    for (const std::string& name : figures) {
        const std::string stem = dir + "/figures/" + name;
        ASSERT_TRUE(fs::is_regular_file(stem + ".svg")) << name;
        EXPECT_EQ(std::system(("xmllint --noout '" + stem + ".svg'").c_str()), 0) << name;
        const viz::Image png = viz::readPng(stem + ".png");
        pngSizes.insert({png.width(), png.height()});
        EXPECT_GT(fs::file_size(stem + ".csv"), 20u) << name;
        if (name.rfind("kept_", 0) == 0) {
            EXPECT_NE(html.find(Base64::encode(slurp(stem + ".png"))), std::string::npos) << name;
        } else {
            EXPECT_NE(html.find(ReportHtml::inlineSvg(slurp(stem + ".svg"), name + "-")), std::string::npos) << name;
        }
    }
    for (const char* table : {"settings", "metrics", "overlap_mean"}) {
        EXPECT_TRUE(fs::is_regular_file(dir + "/figures/" + table + ".csv")) << table;
    }

    // The PDF: poppler renders every page, and it holds exactly the figures' PNGs.
    const auto [infoStatus, info] = shell("pdfinfo '" + dir + "/report.pdf'");
    ASSERT_EQ(infoStatus, 0);
    std::smatch pages;
    ASSERT_TRUE(std::regex_search(info, pages, std::regex("Pages: +([0-9]+)")));
    const int pageCount = std::stoi(pages[1]);
    EXPECT_GE(pageCount, 2);
    const std::string prefix = dir + "/page";
    ASSERT_EQ(std::system(("pdftoppm -r 40 -png '" + dir + "/report.pdf' '" + prefix + "'").c_str()), 0);
    int rendered = 0;
    for (const auto& e : fs::directory_iterator(dir)) {
        if (e.path().filename().string().rfind("page", 0) == 0) {
            ++rendered;
            EXPECT_GT(viz::readPng(e.path().string()).width(), 100);
        }
    }
    EXPECT_EQ(rendered, pageCount);
    const auto [imagesStatus, list] = shell("pdfimages -list '" + dir + "/report.pdf'");
    ASSERT_EQ(imagesStatus, 0);
    // One image object per figure (an object drawn on two pages is listed twice), stored
    // losslessly (Flate, not JPEG).
    std::map<std::string, std::pair<int, int>> objects;
    std::istringstream lines(list);
    std::string line;
    while (std::getline(lines, line)) {
        std::istringstream f(line);
        std::string page, num, type, color, comp, bpc, enc, interp, object;
        int w = 0, h = 0;
        if (f >> page >> num >> type >> w >> h >> color >> comp >> bpc >> enc >> interp >> object && type == "image") {
            objects[object] = {w, h};
            EXPECT_EQ(enc, "image") << line;
        }
    }
    std::multiset<std::pair<int, int>> pdfSizes;
    for (const auto& [object, size] : objects) pdfSizes.insert(size);
    EXPECT_EQ(pdfSizes, pngSizes);
    // And their pixels are the figures' own, exactly.
    std::set<std::string> figurePixels, pdfPixels;
    for (const std::string& name : figures) {
        const viz::Image png = viz::readPng(dir + "/figures/" + name + ".png");
        figurePixels.insert(std::string(png.bytes().begin(), png.bytes().end()));
    }
    const std::string extracted = dir + "/extracted";
    fs::create_directories(extracted);
    ASSERT_EQ(std::system(("pdfimages -png '" + dir + "/report.pdf' '" + extracted + "/img'").c_str()), 0);
    for (const auto& e : fs::directory_iterator(extracted)) {
        const viz::Image png = viz::readPng(e.path().string());
        pdfPixels.insert(std::string(png.bytes().begin(), png.bytes().end()));
    }
    EXPECT_EQ(pdfPixels.size(), figures.size());
    EXPECT_TRUE(pdfPixels == figurePixels) << "the PDF's images differ from figures/*.png";
}

TEST_F(ReportTest, EveryNumberInTheTablesIsTheStoredOne) {
    requireTool("pdftotext");
    std::map<int64_t, sessions::RunRecord> stored;
    {
        sessions::SessionStore store(storePath_, sessions::SessionStore::Access::ReadOnly);
        for (int64_t id : ids_) stored[id] = store.run(id);
    }
    const std::string dir = outputDir("report");
    {
        sessions::SessionStore store(storePath_, sessions::SessionStore::Access::ReadOnly);
        ReportWriter::write(ReportData::load(store, "cmp"), dir);
    }
    const std::string html = slurp(dir + "/report.html");

    // Metrics: the exact stored value behind each cell, its text, and the best marks.
    const auto metrics = numericCells(tableHtml(html, "metrics"));
    ASSERT_EQ(metrics.size(), ids_.size());
    const std::vector<std::string> columns = {"kv_bytes", "ratio", "agreed_prefix", "token_agreement",
                                              "mean_kl", "top1_agreement", "hit_rate", "kv_bytes_allocated"};
    std::map<std::string, double> best;  // among compressed runs
    for (const auto& [id, r] : stored) {
        const RunMetrics& m = r.metrics;
        const std::map<std::string, double> expect = {
            {"kv_bytes", double(m.bytes)},     {"ratio", m.ratio},   {"agreed_prefix", double(m.agreedPrefix)},
            {"token_agreement", m.tokenAgreement}, {"mean_kl", m.meanKl}, {"top1_agreement", m.top1Agreement},
            {"hit_rate", m.hitRate},
            {"kv_bytes_allocated", m.allocatedBytes > 0 ? double(m.allocatedBytes) : std::nan("")}};
        ASSERT_EQ(metrics.at(id).size(), columns.size() + 1) << "run " << id;
        EXPECT_EQ(readValue(metrics.at(id).at("run").value), double(id));
        for (const std::string& c : columns) {
            const double shown = readValue(metrics.at(id).at(c).value);
            if (std::isnan(expect.at(c))) {
                EXPECT_TRUE(std::isnan(shown)) << "run " << id << " " << c;
                EXPECT_EQ(metrics.at(id).at(c).text, "\xe2\x80\x94") << "run " << id << " " << c;
            } else {
                EXPECT_EQ(shown, expect.at(c)) << "run " << id << " " << c;
            }
            if (r.params.method == "full" || std::isnan(expect.at(c))) continue;
            const bool lower = c == "kv_bytes" || c == "ratio" || c == "mean_kl" || c == "kv_bytes_allocated";
            if (!best.count(c) || (lower ? expect.at(c) < best[c] : expect.at(c) > best[c])) best[c] = expect.at(c);
        }
        EXPECT_EQ(metrics.at(id).at("ratio").text, percent(m.ratio));
        EXPECT_EQ(metrics.at(id).at("token_agreement").text, percent(m.tokenAgreement));
        EXPECT_EQ(metrics.at(id).at("top1_agreement").text, percent(m.top1Agreement));
        EXPECT_EQ(metrics.at(id).at("agreed_prefix").text,
                  std::to_string(m.agreedPrefix) + "/" + std::to_string(r.newTokens));
        char kl[32];
        std::snprintf(kl, sizeof kl, "%.4g", m.meanKl);
        EXPECT_EQ(metrics.at(id).at("mean_kl").text, kl);
        if (!std::isnan(m.hitRate)) {
            EXPECT_EQ(metrics.at(id).at("hit_rate").text, percent(m.hitRate));
        }
    }
    for (const auto& [id, r] : stored) {
        for (const std::string& c : columns) {
            const double v = readValue(metrics.at(id).at(c).value);
            const bool isBest = r.params.method != "full" && best.count(c) && v == best.at(c);
            EXPECT_EQ(metrics.at(id).at(c).best, isBest) << "run " << id << " " << c;
        }
    }

    // The same numbers in metrics.csv (CsvTable keeps up to 9 significant digits).
    std::istringstream csv(slurp(dir + "/figures/metrics.csv"));
    std::string line;
    std::getline(csv, line);
    EXPECT_EQ(line, "run,method,budget,kv_bytes,ratio,agreed_prefix,token_agreement,mean_kl,top1_agreement,hit_rate,"
                    "kv_bytes_allocated");
    size_t rows = 0;
    while (std::getline(csv, line)) {
        std::vector<std::string> f;
        std::stringstream s(line);
        for (std::string field; std::getline(s, field, ',');) f.push_back(field);
        if (line.back() == ',') f.push_back("");
        ASSERT_EQ(f.size(), 11u) << line;
        const RunMetrics& m = stored.at(std::stoll(f[0])).metrics;
        const double expect[] = {double(m.bytes), m.ratio, double(m.agreedPrefix), m.tokenAgreement,
                                 m.meanKl, m.top1Agreement, m.hitRate,
                                 m.allocatedBytes > 0 ? double(m.allocatedBytes) : std::nan("")};
        for (int k = 0; k < 8; ++k) {
            if (std::isnan(expect[k])) {
                EXPECT_EQ(f[3 + k], "") << line;
            } else {
                EXPECT_NEAR(std::stod(f[3 + k]), expect[k], 1e-8 * std::max(1.0, std::fabs(expect[k]))) << line;
            }
        }
        ++rows;
    }
    EXPECT_EQ(rows, ids_.size());

    // Settings: budget, window and tokens of each run.
    const auto settings = numericCells(tableHtml(html, "settings"));
    for (const auto& [id, r] : stored) {
        EXPECT_EQ(readValue(settings.at(id).at("run").value), double(id));
        EXPECT_EQ(readValue(settings.at(id).at("new_tokens").value), double(r.newTokens));
        if (r.params.method != "full") {
            EXPECT_EQ(readValue(settings.at(id).at("budget").value), double(r.params.budget)) << id;
        }
        if (r.params.method == "snapkv" || r.params.method == "h2o") {
            EXPECT_EQ(readValue(settings.at(id).at("window").value), double(r.params.window)) << id;
        }
    }
    // The run decoded with compression (StreamingLLM's, every 4 steps) says so among its knobs, alone.
    {
        const std::string table = tableHtml(html, "settings");
        const std::string phrase = "compressed every 4 decode steps";
        const size_t at = table.find(phrase);
        ASSERT_NE(at, std::string::npos);
        EXPECT_EQ(table.find(phrase, at + 1), std::string::npos);
        const size_t row = table.rfind("<tr", at), end = table.find("</tr>", at);
        EXPECT_NE(table.substr(row, end - row).find(">streamingllm<"), std::string::npos);
    }

    // Overlap: the mean over layers of the per-layer, per-query-head Jaccard index.
    const auto overlap = numericCells(tableHtml(html, "overlap_mean"));
    size_t pairs = 0;
    for (const auto& [a, ra] : stored) {
        if (ra.params.method == "full") continue;
        for (const auto& [b, rb] : stored) {
            if (rb.params.method == "full") continue;
            double sum = 0;
            for (int l = 0; l < test::ReportSample::kLayers; ++l) {
                double layer = 0;
                for (int h = 0; h < test::ReportSample::kQueryHeads; ++h) {
                    const int kv = h / (test::ReportSample::kQueryHeads / test::ReportSample::kKvHeads);
                    layer += setJaccard(ra.selection.kept[l][kv], rb.selection.kept[l][kv]);
                }
                sum += layer / test::ReportSample::kQueryHeads;
            }
            const double expect = sum / test::ReportSample::kLayers;
            EXPECT_NEAR(readValue(overlap.at(a).at("run_" + std::to_string(b)).value), expect, 1e-15) << a << "," << b;
            ++pairs;
        }
    }
    EXPECT_EQ(pairs, 25u);
    // Every pair's per-layer figures in overlap_layers.csv (CsvTable: 9 significant digits).
    std::istringstream layers(slurp(dir + "/figures/overlap_layers.csv"));
    std::getline(layers, line);
    EXPECT_EQ(line, "run_a,run_b,layer,jaccard");
    size_t layerRows = 0;
    while (std::getline(layers, line)) {
        long long a = 0, b = 0;
        int l = 0;
        double v = 0;
        ASSERT_EQ(std::sscanf(line.c_str(), "%lld,%lld,%d,%lf", &a, &b, &l, &v), 4) << line;
        double expect = 0;
        for (int h = 0; h < test::ReportSample::kQueryHeads; ++h) {
            const int kv = h / (test::ReportSample::kQueryHeads / test::ReportSample::kKvHeads);
            expect += setJaccard(stored.at(a).selection.kept[l][kv], stored.at(b).selection.kept[l][kv]);
        }
        EXPECT_NEAR(v, expect / test::ReportSample::kQueryHeads, 1e-8) << line;
        ++layerRows;
    }
    EXPECT_EQ(layerRows, 10u * test::ReportSample::kLayers);  // 5 runs with a selection: 10 pairs

    // The PDF shows the same cells (its text, as poppler extracts it).
    const auto [status, pdfText] = shell("pdftotext -layout '" + dir + "/report.pdf' -");
    ASSERT_EQ(status, 0);
    for (const auto& [id, cells] : metrics) {
        for (const auto& [column, cell] : cells) {
            EXPECT_NE(pdfText.find(cell.text), std::string::npos) << "run " << id << " " << column << " " << cell.text;
        }
    }
}

TEST_F(ReportTest, ChosenRunsInTheirOrderAndFiguresOnlyWhenTheDataHoldsThem) {
    sessions::SessionStore store(storePath_, sessions::SessionStore::Access::ReadOnly);
    // snapkv 32 and h2o 32: no method at two budgets, so no sweep; h2o measured no hit rate.
    const ReportData two = ReportData::load(store, "cmp", {ids_[3], ids_[1]});
    ASSERT_EQ(two.runs.size(), 2u);
    EXPECT_EQ(two.runs[0].id, ids_[3]);
    EXPECT_EQ(two.runs[1].id, ids_[1]);
    EXPECT_FALSE(ReportFigures::hasSweep(two));
    EXPECT_TRUE(ReportFigures::hasOverlap(two));
    EXPECT_TRUE(ReportFigures::hasHitRate(two));
    const ReportData h2o = ReportData::load(store, "cmp", {ids_[3], ids_[4]});
    EXPECT_TRUE(ReportFigures::hasSweep(h2o));
    EXPECT_FALSE(ReportFigures::hasHitRate(h2o));
    const std::string dir = outputDir("h2o");
    ReportWriter::write(h2o, dir);
    EXPECT_TRUE(fs::is_regular_file(dir + "/figures/sweep.svg"));
    EXPECT_FALSE(fs::exists(dir + "/figures/hitrate.svg"));
    // The sweep's data: one line for h2o, its two budgets, in order.
    const std::string sweep = slurp(dir + "/figures/sweep.csv");
    EXPECT_NE(sweep.find("token agreement,h2o,32,"), std::string::npos) << sweep;
    EXPECT_NE(sweep.find("token agreement,h2o,64,"), std::string::npos) << sweep;
    EXPECT_EQ(std::system(("xmllint --noout '" + dir + "/report.html'").c_str()), 0);
}

TEST_F(ReportTest, AReportOfTheFullRunAloneHasNoMapsOrOverlap) {
    requireTool("xmllint");
    sessions::SessionStore store(storePath_, sessions::SessionStore::Access::ReadOnly);
    const ReportData full = ReportData::load(store, "cmp", {ids_[0]});
    EXPECT_TRUE(full.selectionRuns().empty());
    EXPECT_FALSE(ReportFigures::hasOverlap(full));
    const std::string dir = outputDir("full");
    ReportWriter::write(full, dir);
    EXPECT_TRUE(fs::is_regular_file(dir + "/figures/funnel.svg"));
    EXPECT_FALSE(fs::exists(dir + "/figures/kept_L0.png"));
    EXPECT_FALSE(fs::exists(dir + "/figures/overlap_mean.csv"));
    EXPECT_EQ(std::system(("xmllint --noout '" + dir + "/report.html'").c_str()), 0);
    EXPECT_TRUE(fs::is_regular_file(dir + "/report.pdf"));
}

std::string errorOf(const std::function<void()>& f) {
    try {
        f();
    } catch (const Error& e) {
        return e.what();
    }
    return "(no error)";
}

TEST_F(ReportTest, RefusalsAreOneLineNamingTheCulprit) {
    sessions::SessionStore store(storePath_, sessions::SessionStore::Access::ReadOnly);
    const std::string missing = errorOf([&] { ReportData::load(store, "nope"); });
    EXPECT_NE(missing.find("nope"), std::string::npos) << missing;
    const std::string empty = errorOf([&] { ReportData::load(store, "empty"); });
    EXPECT_NE(empty.find("session 'empty' in " + storePath_ + ": has no runs"), std::string::npos) << empty;
    const std::string notThere = errorOf([&] { ReportData::load(store, "cmp", {ids_[0], 999}); });
    EXPECT_NE(notThere.find("--runs: run 999 is not in session 'cmp'"), std::string::npos) << notThere;
    const std::string failed = errorOf([&] { ReportData::load(store, "cmp", {ids_.back() + 1}); });
    EXPECT_NE(failed.find("did not complete (failed)"), std::string::npos) << failed;
    const std::string twice = errorOf([&] { ReportData::load(store, "cmp", {ids_[1], ids_[1]}); });
    EXPECT_NE(twice.find("named twice"), std::string::npos) << twice;

    // An output path under a regular file cannot be made.
    const std::string file = outputDir("a_file");
    std::ofstream(file) << "x";
    const std::string unwritable = errorOf([&] { ReportWriter::prepare(file + "/report"); });
    EXPECT_EQ(unwritable.rfind("--out " + file + "/report: cannot create the folder: ", 0), 0u) << unwritable;
    for (const std::string& m : {missing, empty, notThere, failed, twice, unwritable}) {
        EXPECT_EQ(m.find('\n'), std::string::npos) << m;
    }
}

// A prompt in several scripts reaches the PDF as text (poppler extracts it) drawn with
// fonts that have its glyphs: Qt's fallback finds them among the fonts scripts/setup
// installs (DejaVu for Cyrillic and symbols, WenQuanYi Micro Hei for CJK and Hangul).
TEST(ReportScripts, APromptInAnyScriptIsTextInThePdf) {
    const std::string path = storeFile();
    int64_t run = 0;
    const std::string text = "Once upon a time \xE5\xB0\x8F\xE7\x8C\xAB \xD0\xB8 \xD0\x96\xD1\x83\xD0\xBA "
                             "\xED\x95\x9C\xEA\xB5\xAD\xEC\x96\xB4 \xE2\x98\x85 played.";  // 小猫 и Жук 한국어 ★
    {
        sessions::SessionStore store(path);
        const std::vector<int64_t> ids = test::makeReportSession(store, "scripts");
        sessions::PromptRecord p = store.prompt(store.run(ids[0]).promptId);
        p.id = 0;
        p.text = text;
        const int64_t prompt = store.savePrompt(p);
        run = store.saveRun(test::reportRun(p.sessionId, prompt, "snapkv", 32, 9, 0.5));
    }
    requireTool("pdftotext");
    requireTool("pdffonts");
    sessions::SessionStore store(path, sessions::SessionStore::Access::ReadOnly);
    const std::string dir = outputDir("report");
    ReportWriter::write(ReportData::load(store, "scripts", {run}), dir);
    const auto [status, pdfText] = shell("pdftotext '" + dir + "/report.pdf' -");
    ASSERT_EQ(status, 0);
    for (const char* word : {"\xE5\xB0\x8F\xE7\x8C\xAB", "\xD0\x96\xD1\x83\xD0\xBA",
                             "\xED\x95\x9C\xEA\xB5\xAD\xEC\x96\xB4", "\xE2\x98\x85"})
        EXPECT_NE(pdfText.find(word), std::string::npos) << word;
    const auto [fontStatus, fonts] = shell("pdffonts '" + dir + "/report.pdf'");
    ASSERT_EQ(fontStatus, 0);
    EXPECT_NE(fonts.find("WenQuanYi"), std::string::npos) << fonts;
}

TEST(ReportTwoPrompts, RefusedWithAHintToChooseRuns) {
    const std::string path = storeFile();
    std::vector<int64_t> ids;
    {
        sessions::SessionStore store(path);
        ids = test::makeReportSession(store, "mixed");
        sessions::PromptRecord p = store.prompt(store.run(ids[0]).promptId);
        p.id = 0;
        p.text += " more";
        const int64_t other = store.savePrompt(p);
        store.saveRun(test::reportRun(p.sessionId, other, "snapkv", 32, 9, 0.5));
    }
    sessions::SessionStore store(path, sessions::SessionStore::Access::ReadOnly);
    const std::string message = errorOf([&] { ReportData::load(store, "mixed"); });
    EXPECT_NE(message.find("the runs use 2 prompts; choose runs of one prompt with --runs"), std::string::npos)
        << message;
    EXPECT_EQ(ReportData::load(store, "mixed", {ids[1], ids[2]}).runs.size(), 2u);
}

}  // namespace
}  // namespace kvlens
