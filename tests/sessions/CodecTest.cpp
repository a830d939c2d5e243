// SelectionCodec and ArrayCodec: bit-exact round trips (empty heads, large and
// unordered positions, NaN payloads, -0.0), compactness, and corrupt blobs.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>

#include "core/Error.h"
#include "sessions/ArrayCodec.h"
#include "sessions/SelectionCodec.h"

namespace kvlens::sessions {
namespace {

std::vector<int32_t> roundTrip(const std::vector<int32_t>& positions) {
    return SelectionCodec::decode(SelectionCodec::encode(positions), "test");
}

TEST(SelectionCodec, RoundTripsBitExact) {
    const int32_t big = std::numeric_limits<int32_t>::max();
    const int32_t small = std::numeric_limits<int32_t>::min();
    const std::vector<std::vector<int32_t>> cases = {
        {},
        {0},
        {big},
        {0, 1, 2, 3},
        {0, big},
        {small, 0, big},       // not ascending: zigzag deltas still round-trip
        {big, small, big, 5},  // deltas of +-2^32
        {7, 7, 7},
    };
    for (const auto& c : cases) EXPECT_EQ(roundTrip(c), c);

    std::mt19937 rng(3);
    for (int n : {1, 63, 64, 65, 1000, 100000}) {
        std::vector<int32_t> positions;
        int64_t p = 0;
        for (int i = 0; i < n; ++i) {
            p += 1 + int64_t(rng() % 20000);
            positions.push_back(int32_t(std::min<int64_t>(p, big)));
        }
        EXPECT_EQ(roundTrip(positions), positions) << n;
    }
}

TEST(SelectionCodec, IsCompact) {
    std::vector<int32_t> all(8192);
    for (int i = 0; i < 8192; ++i) all[size_t(i)] = i;
    EXPECT_LT(SelectionCodec::encode(all).size(), 100u);  // FullKV: deltas of 1 compress away
    std::mt19937 rng(5);
    std::vector<char> chosen(8192, 0);
    for (int i = 0; i < 256; ++i) chosen[rng() % 8192] = 1;
    std::vector<int32_t> sparse;
    for (int i = 0; i < 8192; ++i) {
        if (chosen[size_t(i)]) sparse.push_back(i);
    }
    EXPECT_LE(SelectionCodec::encode(sparse).size(), 2 * sparse.size());  // < 2 bytes a position
    EXPECT_EQ(SelectionCodec::encode({}).size(), 2u);
}

TEST(SelectionCodec, CorruptBlobsThrowNamingTheHead) {
    auto expectError = [](const std::string& blob) {
        try {
            SelectionCodec::decode(blob, "run 3 layer 2 head 1");
            ADD_FAILURE() << "no error";
        } catch (const Error& e) {
            EXPECT_EQ(
                std::string(e.what()).rfind("run 3 layer 2 head 1: corrupt selection blob", 0), 0u)
                << e.what();
        }
    };
    std::vector<int32_t> many(500);
    for (int i = 0; i < 500; ++i) many[size_t(i)] = i * 3;
    const std::string good = SelectionCodec::encode(many);
    ASSERT_EQ(good[0], 2);  // zlib form
    expectError("");
    expectError(std::string(1, '\x09'));           // unknown format
    expectError(good.substr(0, good.size() - 4));  // zlib stream cut
    std::string flipped = good;
    flipped[flipped.size() / 2] ^= 0x55;
    expectError(flipped);
    expectError(std::string("\x01\x05\x02\x02", 4));  // 5 positions promised, 2 given
    expectError(std::string("\x01\x01\x02\x02", 4));  // trailing bytes
}

TEST(ArrayCodec, DoublesRoundTripBitExact) {
    double payloadNan;
    const uint64_t bits = 0x7ff8000000012345ull;
    std::memcpy(&payloadNan, &bits, 8);
    const std::vector<double> values = {0.0,
                                        -0.0,
                                        1.0 / 3.0,
                                        std::numeric_limits<double>::denorm_min(),
                                        std::numeric_limits<double>::infinity(),
                                        -1e308,
                                        payloadNan};
    const auto back = ArrayCodec::decodeDoubles(ArrayCodec::encode(values), "x");
    ASSERT_EQ(back.size(), values.size());
    EXPECT_EQ(std::memcmp(back.data(), values.data(), values.size() * 8), 0);
    // Little-endian on every host: the first byte of 1.0 is 0, the last 0x3f.
    const std::string one = ArrayCodec::encode(std::vector<double>{1.0});
    EXPECT_EQ(uint8_t(one[0]), 0);
    EXPECT_EQ(uint8_t(one[7]), 0x3f);
}

TEST(ArrayCodec, IntegersAndRowsRoundTrip) {
    const std::vector<int64_t> i64 = {0, -1, std::numeric_limits<int64_t>::min(),
                                      std::numeric_limits<int64_t>::max()};
    EXPECT_EQ(ArrayCodec::decodeInt64s(ArrayCodec::encode(i64), "x"), i64);
    const std::vector<int32_t> i32 = {0, -1, std::numeric_limits<int32_t>::min(), 31999};
    EXPECT_EQ(ArrayCodec::decodeInt32s(ArrayCodec::encode(i32), "x"), i32);
    const std::vector<std::vector<int64_t>> rows = {
        {}, {1, 2, 3}, {std::numeric_limits<int64_t>::min()}, {}};
    EXPECT_EQ(ArrayCodec::decodeRows(ArrayCodec::encodeRows(rows), "x"), rows);
    EXPECT_TRUE(ArrayCodec::decodeRows(ArrayCodec::encodeRows({}), "x").empty());
}

TEST(ArrayCodec, MalformedBlobsThrowNamingTheColumn) {
    auto message = [](auto&& f) {
        try {
            f();
        } catch (const Error& e) {
            return std::string(e.what());
        }
        return std::string("no error");
    };
    EXPECT_EQ(message([] { ArrayCodec::decodeDoubles("1234567", "run 4 metrics.kl_per_step"); }),
              "run 4 metrics.kl_per_step: corrupt array (7 bytes is not a whole number of 8-byte "
              "values)");
    EXPECT_NE(message([] {
                  ArrayCodec::decodeInt32s("123", "prompt 1 token_ids");
              }).find("prompt 1 token_ids: corrupt"),
              std::string::npos);
    std::string rows = ArrayCodec::encodeRows({{1, 2}});
    EXPECT_EQ(message([&] {
                  ArrayCodec::decodeRows(rows.substr(0, rows.size() - 1), "m.bytes_per_head");
              }),
              "m.bytes_per_head: corrupt array of rows");
    EXPECT_EQ(message([&] { ArrayCodec::decodeRows(rows + "x", "m.bytes_per_head"); }),
              "m.bytes_per_head: corrupt array of rows");
}

}  // namespace
}  // namespace kvlens::sessions
