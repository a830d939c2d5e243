// Dequantisers against values computed here from the block format definitions
// (ggml-common.h / ggml-quants.c), with a distinct value at every position so a
// wrong nibble order, scale index or bit packing changes some element.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "engine/gguf/Dequantize.h"
#include "core/Error.h"

using kvlens::GgmlType;

namespace {

uint32_t code(GgmlType t) { return static_cast<uint32_t>(t); }

void putU16(std::vector<uint8_t>& out, size_t at, uint16_t v) {
    out[at] = static_cast<uint8_t>(v & 0xFF);
    out[at + 1] = static_cast<uint8_t>(v >> 8);
}

// Independent IEEE binary16 decoding with ldexp.
double halfReference(uint16_t h) {
    const int sign = (h >> 15) ? -1 : 1;
    const int exp = (h >> 10) & 0x1F;
    const int mant = h & 0x3FF;
    if (exp == 0) return sign * std::ldexp(mant, -24);
    if (exp == 31)
        return mant ? std::numeric_limits<double>::quiet_NaN()
                    : sign * std::numeric_limits<double>::infinity();
    return sign * std::ldexp(1024 + mant, exp - 25);
}

std::vector<float> run(GgmlType t, const std::vector<uint8_t>& bytes, int64_t n,
                       size_t misalign = 0) {
    // Copies to an odd address when asked: GGUF data need not be aligned.
    std::vector<uint8_t> buf(bytes.size() + misalign);
    if (!bytes.empty()) std::memcpy(buf.data() + misalign, bytes.data(), bytes.size());
    std::vector<float> out(static_cast<size_t>(n), -12345.0f);
    kvlens::dequantize(code(t), buf.data() + misalign, out.data(), n);
    return out;
}

// Deterministic byte pattern.
std::vector<uint8_t> pattern(size_t n, uint32_t seed) {
    std::vector<uint8_t> v(n);
    uint32_t x = seed;
    for (auto& b : v) {
        x = x * 1664525u + 1013904223u;
        b = static_cast<uint8_t>(x >> 24);
    }
    return v;
}

}  // namespace

TEST(GgmlTypeTest, NamesSizesAndSupport) {
    EXPECT_STREQ(kvlens::ggmlTypeName(code(GgmlType::F32)), "F32");
    EXPECT_STREQ(kvlens::ggmlTypeName(code(GgmlType::Q4_K)), "Q4_K");
    EXPECT_STREQ(kvlens::ggmlTypeName(code(GgmlType::Q5_1)), "Q5_1");
    EXPECT_STREQ(kvlens::ggmlTypeName(code(GgmlType::BF16)), "BF16");
    EXPECT_STREQ(kvlens::ggmlTypeName(99), "type99");

    struct Row {
        GgmlType t;
        int64_t block;
        size_t bytes;
        bool supported;
    };
    const Row rows[] = {
        {GgmlType::F32, 1, 4, true},       {GgmlType::F16, 1, 2, true},
        {GgmlType::BF16, 1, 2, true},      {GgmlType::Q8_0, 32, 34, true},
        {GgmlType::Q4_0, 32, 18, true},    {GgmlType::Q4_K, 256, 144, true},
        {GgmlType::Q6_K, 256, 210, true},  {GgmlType::Q4_1, 32, 20, true},
        {GgmlType::Q5_0, 32, 22, true},    {GgmlType::Q5_1, 32, 24, true},
        {GgmlType::Q8_1, 32, 36, false},   {GgmlType::Q2_K, 256, 84, true},
        {GgmlType::Q3_K, 256, 110, true},  {GgmlType::Q5_K, 256, 176, true},
        {GgmlType::Q8_K, 256, 292, false}, {GgmlType::IQ4_NL, 32, 18, true},
        {GgmlType::IQ4_XS, 256, 136, true}, {GgmlType::IQ2_XXS, 256, 66, false},
        {GgmlType::IQ2_XS, 256, 74, false}, {GgmlType::IQ2_S, 256, 82, false},
        {GgmlType::IQ3_XXS, 256, 98, false}, {GgmlType::IQ3_S, 256, 110, false},
        {GgmlType::IQ1_S, 256, 50, false},  {GgmlType::IQ1_M, 256, 56, false},
        {GgmlType::TQ1_0, 256, 54, false},  {GgmlType::TQ2_0, 256, 66, false},
        {GgmlType::I8, 1, 1, false},        {GgmlType::I16, 1, 2, false},
        {GgmlType::I32, 1, 4, false},       {GgmlType::I64, 1, 8, false},
        {GgmlType::F64, 1, 8, false},
    };
    for (const Row& r : rows) {
        SCOPED_TRACE(kvlens::ggmlTypeName(code(r.t)));
        EXPECT_EQ(kvlens::ggmlBlockSize(code(r.t)), r.block);
        EXPECT_EQ(kvlens::ggmlBlockBytes(code(r.t)), r.bytes);
        EXPECT_EQ(kvlens::ggmlTypeSupported(code(r.t)), r.supported);
    }
    EXPECT_EQ(kvlens::ggmlBlockSize(99), 0);
    EXPECT_EQ(kvlens::ggmlBlockBytes(99), 0u);
    EXPECT_FALSE(kvlens::ggmlTypeSupported(99));
}

TEST(DequantizeTest, HalfToFloatSpecialValues) {
    EXPECT_EQ(kvlens::halfToFloat(0x3C00), 1.0f);
    EXPECT_EQ(kvlens::halfToFloat(0xC000), -2.0f);
    EXPECT_EQ(kvlens::halfToFloat(0x7BFF), 65504.0f);
    EXPECT_EQ(kvlens::halfToFloat(0x0400), std::ldexp(1.0f, -14));  // smallest normal
    EXPECT_EQ(kvlens::halfToFloat(0x0001), std::ldexp(1.0f, -24));  // smallest subnormal
    EXPECT_EQ(kvlens::halfToFloat(0x03FF), std::ldexp(1023.0f, -24));
    EXPECT_EQ(kvlens::halfToFloat(0x8001), -std::ldexp(1.0f, -24));
    const float negZero = kvlens::halfToFloat(0x8000);
    EXPECT_EQ(negZero, 0.0f);
    EXPECT_TRUE(std::signbit(negZero));
    EXPECT_FALSE(std::signbit(kvlens::halfToFloat(0x0000)));
    EXPECT_TRUE(std::isinf(kvlens::halfToFloat(0x7C00)));
    EXPECT_GT(kvlens::halfToFloat(0x7C00), 0.0f);
    EXPECT_TRUE(std::isinf(kvlens::halfToFloat(0xFC00)));
    EXPECT_LT(kvlens::halfToFloat(0xFC00), 0.0f);
    EXPECT_TRUE(std::isnan(kvlens::halfToFloat(0x7E00)));
    EXPECT_TRUE(std::isnan(kvlens::halfToFloat(0x7C01)));  // signalling-NaN payload
    EXPECT_TRUE(std::isnan(kvlens::halfToFloat(0xFFFF)));
}

TEST(DequantizeTest, F16EveryBitPatternMatchesReference) {
    std::vector<uint8_t> bytes(65536 * 2);
    for (uint32_t h = 0; h < 65536; ++h) putU16(bytes, 2 * h, static_cast<uint16_t>(h));
    const std::vector<float> viaRow = run(GgmlType::F16, bytes, 65536, 1);
    for (uint32_t h = 0; h < 65536; ++h) {
        const double ref = halfReference(static_cast<uint16_t>(h));
        const float one = kvlens::halfToFloat(static_cast<uint16_t>(h));
        if (std::isnan(ref)) {
            ASSERT_TRUE(std::isnan(one)) << std::hex << h;
            ASSERT_TRUE(std::isnan(viaRow[h])) << std::hex << h;
        } else {
            ASSERT_EQ(static_cast<double>(one), ref) << std::hex << h;
            ASSERT_EQ(static_cast<double>(viaRow[h]), ref) << std::hex << h;
            ASSERT_EQ(std::signbit(one), std::signbit(ref)) << std::hex << h;
            ASSERT_EQ(std::signbit(viaRow[h]), std::signbit(ref)) << std::hex << h;
        }
    }
}

TEST(DequantizeTest, BF16) {
    EXPECT_EQ(kvlens::bf16ToFloat(0x3F80), 1.0f);
    EXPECT_EQ(kvlens::bf16ToFloat(0xC040), -3.0f);
    EXPECT_EQ(kvlens::bf16ToFloat(0x3EAB), 0.333984375f);
    EXPECT_EQ(kvlens::bf16ToFloat(0x0001), std::ldexp(1.0f, -133));  // subnormal
    EXPECT_TRUE(std::signbit(kvlens::bf16ToFloat(0x8000)));
    EXPECT_TRUE(std::isinf(kvlens::bf16ToFloat(0x7F80)));
    EXPECT_TRUE(std::isinf(kvlens::bf16ToFloat(0xFF80)));
    EXPECT_TRUE(std::isnan(kvlens::bf16ToFloat(0x7FC0)));

    const uint16_t in[] = {0x3F80, 0xC040, 0x4049, 0x0001, 0x7F80};
    std::vector<uint8_t> bytes(sizeof in);
    for (size_t i = 0; i < 5; ++i) putU16(bytes, 2 * i, in[i]);
    const std::vector<float> out = run(GgmlType::BF16, bytes, 5, 3);
    EXPECT_EQ(out[0], 1.0f);
    EXPECT_EQ(out[1], -3.0f);
    EXPECT_EQ(out[2], 3.140625f);
    EXPECT_EQ(out[3], std::ldexp(1.0f, -133));
    EXPECT_TRUE(std::isinf(out[4]));
}

TEST(DequantizeTest, F32IsCopiedFromUnalignedData) {
    const std::vector<float> values = {1.5f, -0.0f, 3e-40f, 1e30f,
                                       std::numeric_limits<float>::infinity()};
    std::vector<uint8_t> bytes(values.size() * 4);
    std::memcpy(bytes.data(), values.data(), bytes.size());
    const std::vector<float> out = run(GgmlType::F32, bytes, 5, 1);
    for (size_t i = 0; i < values.size(); ++i) {
        EXPECT_EQ(std::memcmp(&out[i], &values[i], 4), 0) << i;
    }
}

// Q8_0 block: f16 d, int8 qs[32]; x[j] = qs[j] * d.
TEST(DequantizeTest, Q8_0) {
    const uint16_t d[2] = {0x3800 /* 0.5 */, 0xB400 /* -0.25 */};
    std::vector<uint8_t> bytes(2 * 34);
    for (int b = 0; b < 2; ++b) {
        putU16(bytes, 34 * b, d[b]);
        for (int j = 0; j < 32; ++j) {
            bytes[34 * b + 2 + j] = static_cast<uint8_t>(static_cast<int8_t>(j * 7 - 100 + b));
        }
    }
    const std::vector<float> out = run(GgmlType::Q8_0, bytes, 64, 1);
    for (int b = 0; b < 2; ++b) {
        for (int j = 0; j < 32; ++j) {
            const float expected = static_cast<float>(j * 7 - 100 + b) * (b == 0 ? 0.5f : -0.25f);
            EXPECT_EQ(out[32 * b + j], expected) << "block " << b << " element " << j;
        }
    }
}

// Q4_0 block: f16 d, 16 bytes; byte j holds element j in its low nibble and
// element j+16 in its high nibble; x = (nibble - 8) * d.
TEST(DequantizeTest, Q4_0) {
    std::vector<uint8_t> bytes(2 * 18);
    const uint16_t d[2] = {0x4000 /* 2 */, 0x3400 /* 0.25 */};
    for (int b = 0; b < 2; ++b) {
        putU16(bytes, 18 * b, d[b]);
        for (int j = 0; j < 16; ++j) {
            const int lo = (j + b) % 16;  // element j
            const int hi = 15 - j;        // element j+16
            bytes[18 * b + 2 + j] = static_cast<uint8_t>(lo | (hi << 4));
        }
    }
    const std::vector<float> out = run(GgmlType::Q4_0, bytes, 64, 1);
    for (int b = 0; b < 2; ++b) {
        const float db = b == 0 ? 2.0f : 0.25f;
        for (int j = 0; j < 16; ++j) {
            EXPECT_EQ(out[32 * b + j], static_cast<float>((j + b) % 16 - 8) * db) << b << "/" << j;
            EXPECT_EQ(out[32 * b + 16 + j], static_cast<float>(15 - j - 8) * db) << b << "/" << j;
        }
    }
}

namespace {

// Q4_K's 12 scale bytes, packed from the format definition: sub-blocks 0..3 keep
// scale and min in the low 6 bits of bytes 0..3 and 4..7; sub-blocks 4..7 keep
// their low 4 bits in bytes 8..11 (scale low nibble, min high nibble) and their
// top 2 bits in the top 2 bits of bytes 0..3 (scale) and 4..7 (min).
std::vector<uint8_t> packQ4KScales(const int sc[8], const int m[8]) {
    std::vector<uint8_t> s(12, 0);
    for (int j = 0; j < 4; ++j) {
        s[j] = static_cast<uint8_t>((sc[j] & 63) | ((sc[j + 4] >> 4) << 6));
        s[j + 4] = static_cast<uint8_t>((m[j] & 63) | ((m[j + 4] >> 4) << 6));
        s[j + 8] = static_cast<uint8_t>((sc[j + 4] & 15) | ((m[j + 4] & 15) << 4));
    }
    return s;
}

}  // namespace

// Q4_K super-block: f16 d, f16 dmin, 12 scale bytes, 128 qs bytes. Element e is
// in sub-block e/32 (scale sc, min m); chunk e/64 uses qs[32*(e/64) .. +32]:
// even sub-blocks the low nibbles, odd ones the high nibbles.
// x = d*sc*q - dmin*m.
TEST(DequantizeTest, Q4_K) {
    const int sc[2][8] = {{1, 5, 9, 13, 33, 47, 58, 63}, {63, 0, 17, 2, 16, 31, 48, 7}};
    const int mn[2][8] = {{2, 7, 11, 17, 40, 51, 60, 62}, {0, 63, 3, 30, 61, 15, 32, 49}};
    const uint16_t d[2] = {0x3800 /* 0.5 */, 0x3C00 /* 1 */};
    const uint16_t dmin[2] = {0x3400 /* 0.25 */, 0x3000 /* 0.125 */};
    const float df[2] = {0.5f, 1.0f};
    const float dminf[2] = {0.25f, 0.125f};
    std::vector<uint8_t> bytes(2 * 144);
    const std::vector<uint8_t> qs = pattern(2 * 128, 7);
    for (int b = 0; b < 2; ++b) {
        uint8_t* blk = bytes.data() + 144 * b;
        blk[0] = static_cast<uint8_t>(d[b]);
        blk[1] = static_cast<uint8_t>(d[b] >> 8);
        blk[2] = static_cast<uint8_t>(dmin[b]);
        blk[3] = static_cast<uint8_t>(dmin[b] >> 8);
        const std::vector<uint8_t> s = packQ4KScales(sc[b], mn[b]);
        std::memcpy(blk + 4, s.data(), 12);
        std::memcpy(blk + 16, qs.data() + 128 * b, 128);
    }
    const std::vector<float> out = run(GgmlType::Q4_K, bytes, 512, 1);
    for (int b = 0; b < 2; ++b) {
        for (int e = 0; e < 256; ++e) {
            const int sub = e / 32;
            const uint8_t byte = qs[128 * b + 32 * (e / 64) + e % 32];
            const int q = (sub % 2 == 0) ? (byte & 0x0F) : (byte >> 4);
            const float expected = df[b] * static_cast<float>(sc[b][sub]) * static_cast<float>(q) -
                                   dminf[b] * static_cast<float>(mn[b][sub]);
            ASSERT_FLOAT_EQ(out[256 * b + e], expected) << "block " << b << " element " << e;
        }
    }
}

// Q6_K super-block: ql[128], qh[64], int8 scales[16], f16 d. Element e: half
// h = e/128, quarter k = (e%128)/32, l = e%32. Low 4 bits: k=0 low nibble of
// ql[64h+l], k=1 low nibble of ql[64h+32+l], k=2 high nibble of ql[64h+l], k=3
// high nibble of ql[64h+32+l]. High 2 bits: bits 2k..2k+1 of qh[32h+l].
// x = d * scales[e/16] * (q - 32).
TEST(DequantizeTest, Q6_K) {
    int8_t sc[2][16];
    for (int b = 0; b < 2; ++b) {
        for (int i = 0; i < 16; ++i) {
            sc[b][i] = static_cast<int8_t>((i % 2 ? -1 : 1) * (3 * i + 1 + 5 * b));
        }
    }
    const uint16_t d[2] = {0x3000 /* 0.125 */, 0xBC00 /* -1 */};
    const float df[2] = {0.125f, -1.0f};
    const std::vector<uint8_t> ql = pattern(2 * 128, 11);
    const std::vector<uint8_t> qh = pattern(2 * 64, 13);
    std::vector<uint8_t> bytes(2 * 210);
    for (int b = 0; b < 2; ++b) {
        uint8_t* blk = bytes.data() + 210 * b;
        std::memcpy(blk, ql.data() + 128 * b, 128);
        std::memcpy(blk + 128, qh.data() + 64 * b, 64);
        std::memcpy(blk + 192, sc[b], 16);
        blk[208] = static_cast<uint8_t>(d[b]);
        blk[209] = static_cast<uint8_t>(d[b] >> 8);
    }
    const std::vector<float> out = run(GgmlType::Q6_K, bytes, 512, 3);
    for (int b = 0; b < 2; ++b) {
        for (int e = 0; e < 256; ++e) {
            const int h = e / 128, k = (e % 128) / 32, l = e % 32;
            const uint8_t lowByte = ql[128 * b + 64 * h + (k % 2) * 32 + l];
            const int low = k < 2 ? (lowByte & 0x0F) : (lowByte >> 4);
            const int high = (qh[64 * b + 32 * h + l] >> (2 * k)) & 3;
            const int q = (low | (high << 4)) - 32;
            const float expected =
                df[b] * static_cast<float>(sc[b][e / 16]) * static_cast<float>(q);
            ASSERT_FLOAT_EQ(out[256 * b + e], expected) << "block " << b << " element " << e;
        }
    }
}

TEST(DequantizeTest, RefusesUnsupportedTypesAndPartialBlocks) {
    std::vector<uint8_t> bytes(256, 0);
    std::vector<float> out(256);
    try {
        kvlens::dequantize(code(GgmlType::IQ2_XXS), bytes.data(), out.data(), 256);
        FAIL() << "no error";
    } catch (const kvlens::Error& e) {
        EXPECT_NE(std::string(e.what()).find("cannot dequantize type IQ2_XXS (supported: F32"), std::string::npos)
            << e.what();
    }
    try {
        kvlens::dequantize(code(GgmlType::Q8_0), bytes.data(), out.data(), 31);
        FAIL() << "no error";
    } catch (const kvlens::Error& e) {
        EXPECT_NE(std::string(e.what()).find("block size 32"), std::string::npos) << e.what();
    }
    EXPECT_THROW(kvlens::dequantize(99, bytes.data(), out.data(), 1), kvlens::Error);
}
