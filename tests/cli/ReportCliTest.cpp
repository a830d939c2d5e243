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
    EXPECT_TRUE(r.err.empty()) << r.err;  // Qt stays quiet
    for (const char* f : {"report.html", "report.pdf", "figures/funnel.svg", "figures/funnel.png", "figures/funnel.csv",
                          "figures/kept_L0.png", "figures/overlap.svg", "figures/sweep.svg", "figures/metrics.csv"}) {
        EXPECT_TRUE(fs::is_regular_file(out + "/" + f)) << f;
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
