// Scale: linear, log with a floor, symmetric, and shared scales over several ranges.
#include <gtest/gtest.h>

#include <cmath>

#include "core/Error.h"
#include "viz/Scale.h"

using kvlens::viz::Scale;
using kvlens::viz::ValueRange;

TEST(Scale, LinearMapsAndClamps) {
    Scale s = Scale::linear(2, 12);
    EXPECT_DOUBLE_EQ(s(2), 0.0);
    EXPECT_DOUBLE_EQ(s(7), 0.5);
    EXPECT_DOUBLE_EQ(s(12), 1.0);
    EXPECT_DOUBLE_EQ(s(-100), 0.0);
    EXPECT_DOUBLE_EQ(s(100), 1.0);
    EXPECT_TRUE(std::isnan(s(std::nan(""))));
    EXPECT_DOUBLE_EQ(s.valueAt(0.25), 4.5);
    EXPECT_EQ(s.kind(), Scale::Kind::Linear);
}

TEST(Scale, LogUsesTheFloor) {
    Scale s = Scale::log(1e-9, 1.0, 1e-4);  // lo below the floor: the floor wins
    EXPECT_DOUBLE_EQ(s.lo(), 1e-4);
    EXPECT_DOUBLE_EQ(s(1e-4), 0.0);
    EXPECT_NEAR(s(1e-2), 0.5, 1e-12);
    EXPECT_DOUBLE_EQ(s(1.0), 1.0);
    EXPECT_DOUBLE_EQ(s(0.0), 0.0);
    EXPECT_DOUBLE_EQ(s(1e-7), 0.0);
    EXPECT_DOUBLE_EQ(s(-1.0), 0.0);
    EXPECT_NEAR(s.valueAt(0.75), 1e-1, 1e-12);
    EXPECT_THROW(Scale::log(1, 10, 0.0), kvlens::Error);
}

TEST(Scale, SymmetricPutsZeroInTheMiddle) {
    Scale s = Scale::symmetric(-0.25);
    EXPECT_DOUBLE_EQ(s(0), 0.5);
    EXPECT_DOUBLE_EQ(s(-0.25), 0.0);
    EXPECT_DOUBLE_EQ(s(0.25), 1.0);
    EXPECT_DOUBLE_EQ(s(0.125), 0.75);
}

TEST(Scale, DegenerateRangesStillMap) {
    Scale a = Scale::linear(3, 3);
    EXPECT_DOUBLE_EQ(a(3), 0.0);
    EXPECT_DOUBLE_EQ(a(4), 1.0);
    Scale b = Scale::log(0.5, 0.5, 0.1);
    EXPECT_DOUBLE_EQ(b.hi(), 5.0);
    EXPECT_DOUBLE_EQ(Scale::symmetric(0).hi(), 1.0);
    EXPECT_THROW(Scale::linear(0, INFINITY), kvlens::Error);
}

TEST(Scale, SharedCoversEveryRange) {
    const float a[] = {0.5f, 2.0f, NAN};
    const float b[] = {-1.0f, 0.0f, 4.0f};
    std::vector<ValueRange> ranges{ValueRange::of(a, 3), ValueRange::of(b, 3), ValueRange{}};
    Scale lin = Scale::shared(ranges, Scale::Kind::Linear);
    EXPECT_DOUBLE_EQ(lin.lo(), -1.0);
    EXPECT_DOUBLE_EQ(lin.hi(), 4.0);

    Scale lg = Scale::shared(ranges, Scale::Kind::Log, 6);
    EXPECT_DOUBLE_EQ(lg.lo(), 0.5);  // smallest positive value, within 6 decades of 4
    EXPECT_DOUBLE_EQ(lg.hi(), 4.0);
    Scale capped = Scale::shared(ranges, Scale::Kind::Log, 0.5);
    EXPECT_NEAR(capped.lo(), 4.0 / std::sqrt(10.0), 1e-12);

    Scale sym = Scale::symmetricShared(ranges);
    EXPECT_DOUBLE_EQ(sym.lo(), -4.0);
    EXPECT_DOUBLE_EQ(sym.hi(), 4.0);

    Scale none = Scale::shared({ValueRange{}}, Scale::Kind::Linear);
    EXPECT_DOUBLE_EQ(none.lo(), 0.0);
    EXPECT_DOUBLE_EQ(none.hi(), 1.0);
}

TEST(ValueRange, IgnoresNonFiniteAndTracksSmallestPositive) {
    const float v[] = {NAN, 3.0f, -2.0f, 0.0f, 0.25f, INFINITY};
    ValueRange r = ValueRange::of(v, 6);
    EXPECT_DOUBLE_EQ(r.lo, -2.0);
    EXPECT_DOUBLE_EQ(r.hi, 3.0);
    EXPECT_DOUBLE_EQ(r.minPositive, 0.25);
    EXPECT_TRUE(ValueRange{}.empty());
    EXPECT_FALSE(ValueRange{}.hasPositive());
}
