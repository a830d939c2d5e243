// kvlens train-testbed: a few steps of a tiny shape write a GGUF the other commands
// open and a curve with one row per step; bad flags fail in one line, before training.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <sstream>

#include "cli/CliHarness.h"

namespace {

using kvlens::test::expectOneLineError;
using kvlens::test::runKvlens;
using kvlens::test::testOutputPath;

const std::string kTiny = " --layers 1 --width 32 --heads 2 --kv-heads 1 --ffn 32 --context 256";

TEST(TrainTestbedCli, AFewStepsWriteAModelTheOtherCommandsOpen) {
    const std::string out = testOutputPath("cli_testbed.gguf"), curve = testOutputPath("cli_testbed.csv");
    const auto r = runKvlens("train-testbed --out " + out + " --curve " + curve +
                             " --stages 64x4x4@1p,128x2x2@0.5 --seed 5" + kTiny);
    ASSERT_EQ(r.exitCode, 0) << r.err;
    EXPECT_NE(r.err.find("6 steps, seed 5"), std::string::npos) << r.err;
    EXPECT_NE(r.out.find("wrote " + out), std::string::npos);
    std::ifstream c(curve);
    std::string line;
    std::getline(c, line);
    EXPECT_EQ(line, "step,length,lr,loss,answer_loss,answer_accuracy,answer_exact,copy_accuracy,seconds");
    int rows = 0;
    while (std::getline(c, line)) ++rows;
    EXPECT_EQ(rows, 6);
    // The curve drawn beside it, and again from the CSV alone.
    const std::string svg = curve.substr(0, curve.size() - 4) + ".svg";
    EXPECT_TRUE(std::ifstream(svg).good());
    EXPECT_EQ(std::ifstream(curve.substr(0, curve.size() - 4) + ".png").good(), bool(KVLENS_WITH_QT));
    std::remove(svg.c_str());
    const auto plot = runKvlens("train-testbed --plot " + curve);
    ASSERT_EQ(plot.exitCode, 0) << plot.err;
    EXPECT_NE(plot.out.find("wrote " + svg), std::string::npos);
    EXPECT_TRUE(std::ifstream(svg).good());
    const auto info = runKvlens("info --model " + out);
    ASSERT_EQ(info.exitCode, 0) << info.err;
    EXPECT_NE(info.out.find("kvlens-testbed"), std::string::npos) << info.out;
    const auto gen = runKvlens("generate --model " + out + " --prompt 'The river bends' -n 4");
    EXPECT_EQ(gen.exitCode, 0) << gen.err;
}

TEST(TrainTestbedCli, BadFlagsAreOneLineErrors) {
    expectOneLineError(runKvlens("train-testbed --stages 64x4x4"), {"train-testbed: --out FILE.gguf is required"});
    const std::string notCurve = testOutputPath("cli_not_curve.csv");
    std::ofstream(notCurve) << "a,b\n1,2\n";
    expectOneLineError(runKvlens("train-testbed --plot " + notCurve),
                       {notCurve + ": not a train-testbed curve (its header differs)"});
    const std::string out = " --out " + testOutputPath("cli_testbed_bad.gguf");
    expectOneLineError(runKvlens("train-testbed" + out + " --stages 10x2x3"),
                       {"--stages: a length of 10 tokens (at least 16)"});
    expectOneLineError(runKvlens("train-testbed" + out + " --stages 64x2"), {"--stages: '64x2' is not LENGTHxBATCHxSTEPS"});
    expectOneLineError(runKvlens("train-testbed" + out + " --stages 64x2x3@2"),
                       {"--stages: copy share '2' is not between 0 and 1"});
    expectOneLineError(runKvlens("train-testbed" + out + " --stages 512x1x1" + kTiny),
                       {"testbed: a stage of 512 tokens exceeds the context of 256"});
    expectOneLineError(runKvlens("train-testbed" + out + " --lr 0"), {"--lr must be positive"});
    expectOneLineError(runKvlens("train-testbed --out /nonexistent-dir/t.gguf --stages 64x1x1@1p" + kTiny),
                       {"/nonexistent-dir/t.gguf: cannot write (No such file or directory)"});
}

}  // namespace
