// PNG output (size in the IHDR, pixels read back through libpng), CSV formatting, and the
// error a user sees when an output file cannot be written.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>

#include "VizTestSupport.h"
#include "core/Error.h"
#include "viz/CsvTable.h"
#include "viz/OutputFile.h"
#include "viz/Png.h"

using namespace kvlens::viz;
using kvlens::viz::test::outputPath;
using kvlens::viz::test::readFile;

namespace {

uint32_t bigEndian32(const std::string& s, size_t at) {
    return (uint32_t(uint8_t(s[at])) << 24) | (uint32_t(uint8_t(s[at + 1])) << 16) |
           (uint32_t(uint8_t(s[at + 2])) << 8) | uint32_t(uint8_t(s[at + 3]));
}

void expectErrorNamingPath(const std::function<void()>& f, const std::string& path) {
    try {
        f();
        FAIL() << "no error for " << path;
    } catch (const kvlens::Error& e) {
        std::string what = e.what();
        EXPECT_NE(what.find(path), std::string::npos) << what;
        EXPECT_EQ(what.find('\n'), std::string::npos) << what;
    }
}

}  // namespace

TEST(Png, WrittenFileHasTheStatedSizeAndPixels) {
    Image img(3, 2);
    img.set(0, 0, {255, 0, 0});
    img.set(1, 0, {0, 255, 0});
    img.set(2, 0, {0, 0, 255});
    img.set(0, 1, {10, 20, 30});
    img.set(1, 1, {0, 0, 0});
    std::string path = outputPath("tiny.png");
    writePng(img, path);
    std::string bytes = readFile(path);
    ASSERT_GE(bytes.size(), 33u);
    EXPECT_EQ(bytes.substr(0, 8), std::string("\x89PNG\r\n\x1a\n", 8));
    EXPECT_EQ(bytes.substr(12, 4), "IHDR");
    EXPECT_EQ(bigEndian32(bytes, 16), 3u);
    EXPECT_EQ(bigEndian32(bytes, 20), 2u);
    EXPECT_EQ(uint8_t(bytes[24]), 8);  // bit depth
    EXPECT_EQ(uint8_t(bytes[25]), 2);  // colour type RGB

    Image back = readPng(path);
    ASSERT_EQ(back.width(), 3);
    ASSERT_EQ(back.height(), 2);
    EXPECT_EQ(back.bytes(), img.bytes());
    EXPECT_EQ(encodePng(img).size(), bytes.size());
}

TEST(Png, LargeImageRoundTrips) {
    Image img(1000, 700);
    for (int y = 0; y < 700; ++y)
        for (int x = 0; x < 1000; ++x) img.set(x, y, {uint8_t(x), uint8_t(y), uint8_t(x ^ y)});
    std::string path = outputPath("gradient.png");
    writePng(img, path);
    Image back = readPng(path);
    EXPECT_EQ(back.width(), 1000);
    EXPECT_EQ(back.height(), 700);
    EXPECT_EQ(back.bytes(), img.bytes());
}

TEST(Png, UnwritablePathThrowsErrorNamingIt) {
    Image img(2, 2);
    std::string path = "/nonexistent-kvlens-dir/out.png";
    expectErrorNamingPath([&] { writePng(img, path); }, path);
    std::string notPng = outputPath("not-a.png");
    writeOutputFile(notPng, std::string("hello"));
    expectErrorNamingPath([&] { readPng(notPng); }, notPng);
    expectErrorNamingPath([&] { readPng(path); }, path);
}

TEST(Csv, QuotesOnlyWhenNeeded) {
    CsvTable t({"series", "value (MB)"});
    t.addRow({"plain", "1"});
    t.addRow({"with, comma", "2"});
    t.addRow({"say \"hi\"", "3"});
    t.addRow({"two\nlines", ""});
    EXPECT_EQ(t.str(),
              "series,value (MB)\n"
              "plain,1\n"
              "\"with, comma\",2\n"
              "\"say \"\"hi\"\"\",3\n"
              "\"two\nlines\",\n");
    EXPECT_THROW(t.addRow({"short"}), kvlens::Error);
}

TEST(Csv, NumbersRoundTripShortly) {
    EXPECT_EQ(CsvTable::number(0.1), "0.1");
    EXPECT_EQ(CsvTable::number(3), "3");
    EXPECT_EQ(CsvTable::number(900), "900");
    EXPECT_EQ(CsvTable::number(-4096), "-4096");
    EXPECT_EQ(CsvTable::number32(512.0f), "512");
    EXPECT_EQ(CsvTable::number(-2.5e-7), "-2.5e-07");
    EXPECT_EQ(CsvTable::number(1.0 / 3.0), "0.333333333");
    EXPECT_EQ(CsvTable::number(std::nan("")), "");
    EXPECT_EQ(CsvTable::number32(0.1f), "0.1");
    EXPECT_EQ(CsvTable::number32(1.0f / 3.0f), "0.33333334");
}

TEST(Csv, WritesAndReportsUnwritablePaths) {
    CsvTable t({"a"});
    t.addRow({"1"});
    std::string path = outputPath("t.csv");
    t.write(path);
    EXPECT_EQ(readFile(path), "a\n1\n");
    std::string bad = "/nonexistent-kvlens-dir/t.csv";
    expectErrorNamingPath([&] { t.write(bad); }, bad);
}

TEST(OutputFile, CsvPathBeside) {
    EXPECT_EQ(csvPathBeside("out/funnel.svg"), "out/funnel.csv");
    EXPECT_EQ(csvPathBeside("funnel"), "funnel.csv");
    EXPECT_EQ(csvPathBeside("a.b/funnel"), "a.b/funnel.csv");
    EXPECT_EQ(csvPathBeside("dir/.hidden"), "dir/.hidden.csv");
}
