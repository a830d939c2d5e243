// Nice ticks and their labels.
#include <gtest/gtest.h>

#include "viz/Ticks.h"

using namespace kvlens::viz;

namespace {

std::vector<std::string> labels(const std::vector<Tick>& ticks) {
    std::vector<std::string> out;
    for (const auto& t : ticks) out.push_back(t.label);
    return out;
}

}  // namespace

TEST(Ticks, LinearPositions) {
    EXPECT_EQ(labels(Ticks::linear(0, 8191, 9, true)),
              (std::vector<std::string>{"0", "1000", "2000", "3000", "4000", "5000", "6000", "7000", "8000"}));
    EXPECT_EQ(labels(Ticks::linear(0, 8191, 5, true)),
              (std::vector<std::string>{"0", "2000", "4000", "6000", "8000"}));
    EXPECT_EQ(labels(Ticks::linear(0, 3, 10, true)), (std::vector<std::string>{"0", "1", "2", "3"}));
}

TEST(Ticks, LinearFractions) {
    EXPECT_EQ(labels(Ticks::linear(0, 1, 6)),
              (std::vector<std::string>{"0", "0.2", "0.4", "0.6", "0.8", "1.0"}));
    EXPECT_EQ(labels(Ticks::linear(-0.3, 0.3, 4)), (std::vector<std::string>{"-0.2", "0", "0.2"}));
    EXPECT_EQ(labels(Ticks::linear(0, 100, 6)),
              (std::vector<std::string>{"0", "20", "40", "60", "80", "100"}));
}

TEST(Ticks, LogDecadesAndShortRanges) {
    EXPECT_EQ(labels(Ticks::log(1e-6, 1, 10)),
              (std::vector<std::string>{"1e-6", "1e-5", "1e-4", "0.001", "0.01", "0.1", "1"}));
    EXPECT_EQ(labels(Ticks::log(1e-6, 1, 4)), (std::vector<std::string>{"1e-6", "1e-4", "0.01", "1"}));
    EXPECT_EQ(labels(Ticks::log(1, 100, 8)), (std::vector<std::string>{"1", "2", "5", "10", "20", "50", "100"}));
    EXPECT_EQ(labels(Ticks::log(10, 1e7, 8)),
              (std::vector<std::string>{"10", "100", "1000", "10000", "100000", "1e6", "1e7"}));
}

TEST(Ticks, Format) {
    EXPECT_EQ(Ticks::format(0.25, 0.05), "0.25");
    EXPECT_EQ(Ticks::format(2.5, 2.5), "2.5");
    EXPECT_EQ(Ticks::format(3000, 1000), "3000");
    EXPECT_EQ(Ticks::format(2e-6, 1e-6), "2e-6");
    EXPECT_EQ(Ticks::format(5e6, 1e6), "5e6");
    EXPECT_EQ(Ticks::formatLog(2e5), "200000");
    EXPECT_EQ(Ticks::formatLog(2e6), "2e6");
    EXPECT_EQ(Ticks::formatLog(5e-5), "5e-5");
}
