// kvlens report as a user runs it: a report from a store made here (no model), and
// one clear line for each refusal: no store, no session, an empty session, a run that
// is not there, a bad --runs, a missing flag, an output folder that cannot be made.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "cli/CliHarness.h"
#include "reports/ReportSampleStore.h"
#include "sessions/SessionStore.h"

namespace {

using kvlens::test::CliResult;
using kvlens::test::expectOneLineError;
using kvlens::test::runKvlens;
namespace fs = std::filesystem;

std::string outPath(const std::string& name) {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    const std::string path = kvlens::test::testOutputPath(std::string("report_cli_") + info->name() + "_" +
                                                          std::to_string(::getpid()) + "_" + name);
    fs::remove_all(path);
    for (const char* suffix : {"-wal", "-shm", "-journal"}) ::unlink((path + suffix).c_str());
    return path;
}

// A store with session "cmp" (six complete runs, one failed) and an empty session.
std::string sampleStore() {
    const std::string path = outPath("store.db");
    kvlens::sessions::SessionStore store(path);
    kvlens::test::makeReportSession(store, "cmp");
    store.createSession("empty");
    return path;
}

TEST(ReportCli, WritesHtmlPdfAndFiguresFromTheStoreAlone) {
    const std::string store = sampleStore();
    const std::string out = outPath("report");
    const CliResult r = runKvlens("report --session cmp --runs 2,3,4 --store " + store + " --out " + out);
    ASSERT_EQ(r.exitCode, 0) << r.err;
    EXPECT_NE(r.out.find("wrote the report of 3 runs of session 'cmp' to " + out), std::string::npos) << r.out;
    for (const char* f : {"report.html", "figures/funnel.svg", "figures/funnel.csv", "figures/kept_L0.png",
                          "figures/overlap.svg", "figures/sweep.svg", "figures/metrics.csv"}) {
        EXPECT_TRUE(fs::is_regular_file(out + "/" + f)) << f;
    }
    if (KVLENS_WITH_QT) {
        EXPECT_TRUE(r.err.empty()) << r.err;  // Qt stays quiet
        EXPECT_NE(r.out.find("(report.html, report.pdf, figures/"), std::string::npos) << r.out;
        for (const char* f : {"report.pdf", "figures/funnel.png", "figures/overlap.png"}) {
            EXPECT_TRUE(fs::is_regular_file(out + "/" + f)) << f;
        }
    } else {
        // The profile without Qt (-DKVLENS_GUI=OFF): HTML, SVG and CSV, and one line saying what is left out.
        EXPECT_EQ(r.err, "kvlens report: this kvlens was built without Qt (-DKVLENS_GUI=OFF): no report.pdf and no "
                         "PNG copies of the charts (a full build writes them from the same store)\n");
        EXPECT_NE(r.out.find("(report.html, figures/"), std::string::npos) << r.out;
        for (const char* f : {"report.pdf", "figures/funnel.png", "figures/overlap.png"}) {
            EXPECT_FALSE(fs::exists(out + "/" + f)) << f;
        }
    }
    EXPECT_EQ(std::system(("xmllint --noout '" + out + "/report.html'").c_str()), 0);
    const std::string html = kvlens::test::slurp(out + "/report.html");
    EXPECT_NE(html.find("data-run=\"4\" data-column=\"mean_kl\""), std::string::npos);
    EXPECT_EQ(html.find("data-run=\"5\""), std::string::npos);  // not chosen
}

TEST(ReportCli, RefusalsAreOneLine) {
    const std::string store = sampleStore();
    const std::string out = outPath("report");
    expectOneLineError(runKvlens("report --session nope --store " + store + " --out " + out), {"nope"});
    expectOneLineError(runKvlens("report --session empty --store " + store + " --out " + out),
                       {"session 'empty'", store, "has no runs"});
    expectOneLineError(runKvlens("report --session cmp --runs 2,99 --store " + store + " --out " + out),
                       {"--runs: run 99 is not in session 'cmp'"});
    expectOneLineError(runKvlens("report --session cmp --runs 2,x --store " + store + " --out " + out),
                       {"--runs '2,x'", "'x' is not a run id"});
    expectOneLineError(runKvlens("report --session cmp --store " + store), {"--out DIR is required"});
    expectOneLineError(runKvlens("report --out " + out + " --store " + store), {"--session NAME is required"});
    const std::string missing = outPath("missing.db");
    expectOneLineError(runKvlens("report --session cmp --store " + missing + " --out " + out),
                       {missing, "no session store"});
    EXPECT_FALSE(fs::exists(missing));
    // An output folder under a regular file cannot be made.
    const std::string file = outPath("a_file");
    std::ofstream(file) << "x";
    expectOneLineError(runKvlens("report --session cmp --store " + store + " --out " + file + "/report"),
                       {"--out " + file + "/report", "cannot create the folder"});
    EXPECT_FALSE(fs::exists(out));  // nothing written by the refusals
}

TEST(ReportCli, HelpAndUsage) {
    const CliResult help = runKvlens("report --help");
    EXPECT_EQ(help.exitCode, 0);
    EXPECT_NE(help.out.find("usage: kvlens report --session NAME"), std::string::npos) << help.out;
    const CliResult top = runKvlens("--help");
    EXPECT_NE(top.out.find("  report "), std::string::npos) << top.out;
}

}  // namespace

namespace {

// A session of niah runs: lengths 1024/2048 x depths 0/50/100, full and snapkv at 64
// and 128; snapkv 64 finds the needle only at depth 100 (near the question).
std::string niahStore() {
    const std::string path = outPath("niah.db");
    kvlens::sessions::SessionStore store(path);
    kvlens::sessions::ModelRecord m;
    m.spec = "random:tiny";
    m.isFile = false;
    m.architecture = "llama";
    m.name = "tiny";
    m.layers = 4;
    m.heads = 8;
    m.kvHeads = 4;
    m.headDim = 32;
    m.embedDim = 256;
    m.ffnDim = 688;
    m.vocabSize = 512;
    m.contextLength = 4096;
    m.ropeTheta = 10000.0;
    const int64_t model = store.saveModel(m);
    const int64_t session = store.createSession("sweep").id;
    for (int64_t L : {1024, 2048}) {
        for (double depth : {0.0, 50.0, 100.0}) {
            for (const std::string budget : {"-", "64", "128"}) {
                kvlens::sessions::NiahRunRecord r;
                r.sessionId = session;
                r.modelId = model;
                r.task = "single";
                r.length = L;
                r.tokens = L - 3;
                r.depth = depth;
                r.newTokens = 16;
                r.method = budget == "-" ? "full" : "snapkv";
                r.budget = budget;
                r.params = r.method + " " + budget;
                r.contains = budget == "64" ? (depth == 100.0 ? 1.0 : 0.0) : 1.0;
                r.exact = r.contains;
                r.needleKept = budget == "-" ? 1.0 : 0.5;
                r.agreement = 1.0;
                r.meanKl = 0.0;
                r.answer = "1234567";
                r.expected = {"1234567"};
                r.needlePositions = {10, 11};
                EXPECT_TRUE(store.saveNiahRun(r));
            }
        }
    }
    return path;
}

TEST(ReportCli, ANiahSessionGetsHeatmapsBudgetCurvesAndATable) {
    const std::string store = niahStore(), out = outPath("niah_out");
    const CliResult r = runKvlens("report --session sweep --store " + store + " --out " + out);
    ASSERT_EQ(r.exitCode, 0) << r.err;
    EXPECT_NE(r.out.find("wrote the needle-in-a-haystack report of session 'sweep'"), std::string::npos) << r.out;
    for (const char* f : {"niah.html", "niah_table.csv", "figures/niah_single_inside_contains.svg",
                          "figures/niah_single_inside_needle_kept.csv", "figures/niah_single_inside_budget.svg"})
        EXPECT_TRUE(fs::exists(out + "/" + f)) << f;
    // A build without Qt has no rasteriser for the PNG copies.
    EXPECT_EQ(fs::exists(out + "/figures/niah_single_inside_contains.png"), bool(KVLENS_WITH_QT));
    std::ifstream table(out + "/niah_table.csv");
    std::string line, all;
    std::getline(table, line);
    EXPECT_EQ(line, "task,question,method,budget,runs,contains,exact,needle_kept,agreement,mean_kl");
    while (std::getline(table, line)) all += line + "\n";
    EXPECT_EQ(all,
              "single,inside,full,-,6,1,1,1,1,0\n"
              "single,inside,snapkv,64,6,0.333333333,0.333333333,0.5,1,0\n"
              "single,inside,snapkv,128,6,1,1,0.5,1,0\n");
    // Heatmap cells: 3 panels x 3 depths x 2 lengths, snapkv 64 bright only at depth 100.
    std::ifstream heat(out + "/figures/niah_single_inside_contains.csv");
    int rows = 0, lit = 0;
    std::getline(heat, line);
    while (std::getline(heat, line)) {
        ++rows;
        if (line.rfind("snapkv 64,", 0) == 0 && line.find(",1,") != std::string::npos) {
            ++lit;
            EXPECT_NE(line.find(": 100%"), std::string::npos) << line;
        }
    }
    EXPECT_EQ(rows, 18);
    EXPECT_EQ(lit, 2);
    std::ifstream html(out + "/niah.html");
    const std::string page((std::istreambuf_iterator<char>(html)), std::istreambuf_iterator<char>());
    EXPECT_NE(page.find("<td>snapkv</td><td>64</td><td>6</td><td>33.3%</td>"), std::string::npos);
    expectOneLineError(runKvlens("report --session sweep --runs 1 --store " + store + " --out " + out),
                       {"kvlens report: --runs picks ordinary runs; session 'sweep' holds only niah runs"});
}

}  // namespace
