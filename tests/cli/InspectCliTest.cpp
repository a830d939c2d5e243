// kvlens inspect as a user runs it: every file written, non-empty, SVGs that
// parse as XML and PNGs of the stated size; and one line for each bad flag.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "cli/CliHarness.h"

namespace {

namespace fs = std::filesystem;
using kvlens::test::CliResult;
using kvlens::test::expectOneLineError;
using kvlens::test::runKvlens;
using kvlens::test::testOutputPath;

const std::string kStories = std::string(KVLENS_SHARED_DIR) + "/models/stories260K.gguf";

std::string promptFile(int words) {
    const std::string path = testOutputPath("inspect_prompt_" + std::to_string(words) + ".txt");
    std::ofstream out(path);
    const char* w[] = {"once", "upon", "a", "time", "there", "was", "a", "little", "girl", "named",
                       "lily", "she", "loved", "to", "play", "in", "the", "park", "with", "her", "ball"};
    for (int i = 0; i < words; ++i) out << w[(i * 7 + i / 5) % 21] << (i % 13 == 12 ? ".\n" : " ");
    return path;
}

// Width and height from a PNG's IHDR chunk (bytes 16..23, big-endian).
std::pair<int, int> pngSize(const std::string& path) {
    const std::string bytes = kvlens::test::slurp(path);
    if (bytes.size() < 24 || bytes.compare(1, 3, "PNG") != 0) return {-1, -1};
    auto be32 = [&](size_t at) {
        return int((uint8_t(bytes[at]) << 24) | (uint8_t(bytes[at + 1]) << 16) | (uint8_t(bytes[at + 2]) << 8) |
                   uint8_t(bytes[at + 3]));
    };
    return {be32(16), be32(20)};
}

bool xmllintAccepts(const std::string& path) {
    return std::system(("xmllint --noout '" + path + "' 2>/dev/null").c_str()) == 0;
}

// Runs inspect into a fresh folder and checks every file it must write.
void checkInspect(const std::string& model, int words, int layers, int kvHeads, int headDim,
                  const std::string& heads, const std::vector<std::string>& maps) {
    const std::string dir = testOutputPath("inspect_" + std::to_string(::getpid()) + "_" + std::to_string(layers));
    fs::remove_all(dir);
    const CliResult r = runKvlens("inspect --model " + model + " --prompt-file " + promptFile(words) +
                                  " --method pyramidkv --budget 64 -n 8 --dtype f32 --out " + dir + heads);
    ASSERT_EQ(r.exitCode, 0) << r.err;
    EXPECT_NE(r.out.find("wrote"), std::string::npos) << r.out;
    // The figures hold the data: the full cache's bytes per layer in memory.csv
    // are K+V of the prompt in f32 (KB for these small models).
    const size_t at = r.out.find("-token prompt");
    ASSERT_NE(at, std::string::npos) << r.out;
    const long T = std::stol(r.out.substr(r.out.rfind(' ', at) + 1));
    std::istringstream memory(kvlens::test::slurp(dir + "/memory.csv"));
    std::string line;
    std::getline(memory, line);
    EXPECT_EQ(line, "panel,series,layer,value,unit");
    int fullRows = 0;
    while (std::getline(memory, line)) {
        if (line.find(",full cache,") == std::string::npos) continue;
        ++fullRows;
        const double kb = std::stod(line.substr(line.rfind(',', line.size() - 4) + 1));
        EXPECT_NEAR(kb, 2.0 * kvHeads * T * headDim * 4 / 1e3, 1e-6) << line;
    }
    EXPECT_EQ(fullRows, layers);
    ASSERT_EQ(std::system("command -v xmllint >/dev/null"), 0) << "xmllint is missing: run scripts/setup";
    for (const std::string svg : {"funnel.svg", "hitrate.svg", "overlap.svg", "memory.svg"}) {
        const std::string path = dir + "/" + svg;
        ASSERT_TRUE(fs::exists(path)) << path;
        EXPECT_TRUE(xmllintAccepts(path)) << path;
        const std::string text = kvlens::test::slurp(path);
        EXPECT_NE(text.find("pyramidkv"), std::string::npos) << svg << " does not name the method";
        EXPECT_NE(text.find("-token prompt"), std::string::npos) << svg << " does not give the prompt length";
        EXPECT_GT(fs::file_size(dir + "/" + svg.substr(0, svg.size() - 3) + "csv"), 30u) << svg;
    }
    std::vector<std::string> pngs = {"selection_overview.png"};
    for (int l = 0; l < layers; ++l) pngs.push_back("selection_L" + std::to_string(l) + ".png");
    for (const std::string& m : maps) pngs.push_back("attention_" + m + ".png");
    for (const std::string& png : pngs) {
        const std::string path = dir + "/" + png;
        ASSERT_TRUE(fs::exists(path)) << path;
        const auto [w, h] = pngSize(path);
        if (png.rfind("attention", 0) == 0) {
            EXPECT_EQ(w, 1000) << png;
            EXPECT_EQ(h, 940) << png;
        } else {
            EXPECT_EQ(w, 1400) << png;
            EXPECT_GT(h, 200) << png;
        }
        EXPECT_GT(fs::file_size(dir + "/" + png.substr(0, png.size() - 3) + "csv"), 30u) << png;
    }
    // Nothing else, nothing empty.
    size_t files = 0;
    for (const auto& entry : fs::directory_iterator(dir)) {
        ++files;
        EXPECT_GT(entry.file_size(), 0u) << entry.path();
    }
    EXPECT_GT(fs::file_size(dir + "/funnel_heads.csv"), 30u);
    EXPECT_EQ(files, 2 * (4 + pngs.size()) + 1);
}

TEST(InspectCli, WritesEveryPictureOnARandomModel) {
    checkInspect("random:tiny", 60, 4, 4, 32, " --heads 1:3,3:7,1:3", {"L1_H3", "L3_H7"});  // 1:3 once
}

TEST(InspectCli, WritesEveryPictureOnStories260K) {
    if (!fs::exists(kStories)) GTEST_SKIP() << "needs " << kStories;
    checkInspect(kStories, 262, 5, 4, 8, "", {"L0_H0", "L2_H0", "L4_H0"});  // default heads: first, middle, last layer
}

TEST(InspectCli, BadFlagsGiveOneLine) {
    const std::string prompt = " --prompt-file " + promptFile(40);
    const std::string base = "inspect --model random:tiny" + prompt + " --method snapkv --budget 64";
    expectOneLineError(runKvlens(base), {"--out DIR is required"});
    const std::string file = testOutputPath("inspect_not_a_folder.txt");
    std::ofstream(file) << "x";
    expectOneLineError(runKvlens(base + " --out " + file), {"--out " + file, "cannot create the folder"});
    const std::string dir = testOutputPath("inspect_errors");
    expectOneLineError(runKvlens(base + " --out " + dir + " --heads 1-2"), {"--heads: '1-2' is not LAYER:HEAD"});
    expectOneLineError(runKvlens(base + " --out " + dir + " --heads 0:0,"), {"--heads '0:0,' has an empty item"});
    expectOneLineError(runKvlens(base + " --out " + dir + " --heads 0:0,,1:1"), {"--heads '0:0,,1:1' has an empty item"});
    expectOneLineError(runKvlens(base + " --out " + dir + " --heads 4:0"),
                       {"head 4:0 does not exist: the model has layers 0-3 and query heads 0-7"});
    expectOneLineError(runKvlens(base + " --out " + dir + " --hit-k 100000"), {"--hit-k 100000", "prompt's"});
    expectOneLineError(runKvlens("inspect --model random:tiny" + prompt + " --out " + dir), {"--budget is required"});
    expectOneLineError(runKvlens("inspect --model random:tiny" + prompt + " --method full --out " + dir),
                       {"--budget is required", "every method is compared at it"});
}

TEST(InspectCli, UnwritableFolderIsOneLine) {
    // Root writes anywhere: as root, run kvlens as nobody (setpriv, util-linux).
    std::string asUser;
    if (::geteuid() == 0) {
        if (std::system("command -v setpriv >/dev/null") != 0) GTEST_SKIP() << "root, and no setpriv to drop it";
        asUser = "setpriv --reuid=65534 --regid=65534 --clear-groups";
        if (std::system((asUser + " test -x " + std::string(KVLENS_CLI)).c_str()) != 0) {
            GTEST_SKIP() << "the build folder is not open to other users";
        }
    }
    const std::string dir = testOutputPath("inspect_readonly");
    fs::create_directories(dir);
    fs::permissions(dir, fs::perms::owner_read | fs::perms::owner_exec | fs::perms::group_read |
                             fs::perms::group_exec | fs::perms::others_read | fs::perms::others_exec);
    const CliResult r = runKvlens("inspect --model random:tiny --prompt abcdef --method full --budget 4 --out " + dir, asUser);
    fs::permissions(dir, fs::perms::owner_all);
    expectOneLineError(r, {"--out " + dir, "not writable"});
}

}  // namespace
