// The quantised matrix-vector products (kernels/QuantMatrix, QuantDot) against the
// dequantised fp32 product in double precision, for every format read in place and
// one read through a scratch row, on every instruction set this machine runs (plain
// C++, AVX2, AVX-512, AVX-512 VNNI). Blocks are random bytes with valid scales, and
// real blocks written by llama-quantize (tests/data/gguf). The bound: each product
// w_i x_i and the sum of n of them in fp32, with the block's scale products rounded in
// between, err <= 4 n u sum |w_i x_i| with u = 2^-24 (the classic bound of a float
// sum, times a few roundings per term), against the product with x as the integer
// kernels quantise it; against x itself, plus sum_i |w_i| d_x(i) / 2 (the int8
// rounding of x, block scale d_x). Measured errors are far smaller.
#include <gtest/gtest.h>

#include <ATen/Parallel.h>
#include <c10/util/Half.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "core/Error.h"
#include "engine/gguf/Dequantize.h"
#include "engine/gguf/GgufFile.h"
#include "kernels/CpuFeatures.h"
#include "kernels/Linear.h"
#include "kernels/QuantMatrix.h"

namespace kvlens {
namespace {

using kernels::QuantDotTable;
using kernels::QuantFormat;
using kernels::QuantMatrix;

uint16_t halfBits(float f) { return c10::Half(f).x; }

void dequantizeRow(uint32_t type, const void* src, float* dst, int64_t n) { kvlens::dequantize(type, src, dst, n); }

// Random blocks of ggml type `type` for `rows` rows of `cols`, scales kept sane.
std::vector<uint8_t> randomRows(uint32_t type, int64_t rows, int64_t cols, uint64_t seed) {
    const int64_t blocks = rows * cols / ggmlBlockSize(type);
    const size_t bb = ggmlBlockBytes(type);
    std::vector<uint8_t> bytes(static_cast<size_t>(blocks) * bb);
    std::mt19937_64 rng(seed);
    for (uint8_t& b : bytes) b = static_cast<uint8_t>(rng());
    std::uniform_real_distribution<float> scale(0.002f, 0.05f), unit(-1.0f, 1.0f);
    auto setHalf = [&](uint8_t* p, float f) {
        const uint16_t h = halfBits(f);
        std::memcpy(p, &h, 2);
    };
    for (int64_t b = 0; b < blocks; ++b) {
        uint8_t* blk = bytes.data() + static_cast<size_t>(b) * bb;
        switch (static_cast<GgmlType>(type)) {
            case GgmlType::F16: setHalf(blk, unit(rng)); break;
            case GgmlType::BF16: {
                const float f = unit(rng);
                uint32_t bits;
                std::memcpy(&bits, &f, 4);
                const uint16_t h = static_cast<uint16_t>(bits >> 16);
                std::memcpy(blk, &h, 2);
                break;
            }
            case GgmlType::Q8_0:
            case GgmlType::Q4_0:
            case GgmlType::Q5_0: setHalf(blk, scale(rng)); break;
            case GgmlType::Q4_K:
            case GgmlType::Q5_K:
                setHalf(blk, scale(rng));
                setHalf(blk + 2, scale(rng));
                break;
            case GgmlType::Q6_K: setHalf(blk + 208, scale(rng)); break;
            case GgmlType::Q3_K: setHalf(blk + 108, scale(rng)); break;
            default: break;
        }
    }
    return bytes;
}

std::string isaName(const QuantDotTable* t) { return t ? t->isa : "scalar"; }

// x as the integer kernels see it, from QuantDot.h's definition: blocks of 32 with
// scale amax / 127, rounded to nearest; also each block's half-scale (its error bound).
std::vector<double> quantisedX(const std::vector<float>& x, size_t block, std::vector<double>* halfScale) {
    std::vector<double> out(x.size());
    halfScale->assign(x.size(), 0.0);
    for (size_t b = 0; b < x.size() / block; ++b) {
        float amax = 0;
        for (size_t i = 0; i < block; ++i) amax = std::max(amax, std::abs(x[block * b + i]));
        const float d = amax / 127.0f;
        for (size_t i = 0; i < block; ++i) {
            (*halfScale)[block * b + i] = d / 2.0;
            out[block * b + i] = amax > 0 ? double(d) * std::nearbyint(x[block * b + i] * (127.0f / amax)) : 0.0;
        }
    }
    return out;
}

// Checks gemv of M rows of x against the dequantised product, on every ISA: exactly
// (within fp32 rounding) against the product with x as the kernels quantise it, and
// within the quantisation's own bound against the product with x itself.
void checkMatrix(const QuantMatrix& q, const std::string& what) {
    const int64_t rows = q.rows(), cols = q.cols();
    std::vector<float> dense(static_cast<size_t>(rows * cols));
    q.dequantizeRows(0, rows, dense.data());
    std::mt19937_64 rng(99);
    std::normal_distribution<float> normal;
    for (int64_t M : {1, 3}) {
        std::vector<float> x(static_cast<size_t>(M * cols));
        for (float& v : x) v = normal(rng);
        std::vector<double> halfScale32, halfScale256;
        const std::vector<double> xhat32 = quantisedX(x, 32, &halfScale32);
        const std::vector<double> xhat256 = cols % 256 == 0 ? quantisedX(x, 256, &halfScale256) : xhat32;
        if (cols % 256 != 0) halfScale256 = halfScale32;
        for (const QuantDotTable* isa : QuantMatrix::runnableIsas()) {
            std::vector<float> y(static_cast<size_t>(M * rows), NAN);
            q.gemv(x.data(), M, y.data(), isa);
            for (int64_t m = 0; m < M; ++m)
                for (int64_t r = 0; r < rows; ++r) {
                    // Which rows meet quantised x: those of integer formats on an ISA.
                    int64_t first = 0;
                    QuantFormat format = QuantFormat::Other;
                    for (const QuantMatrix::Part& p : q.parts()) {
                        if (r < first + p.rows) {
                            format = p.format;
                            break;
                        }
                        first += p.rows;
                    }
                    const bool integer = isa != nullptr && format != QuantFormat::Other &&
                                         format != QuantFormat::F16 && format != QuantFormat::BF16;
                    const bool kQuant = format == QuantFormat::Q4_K || format == QuantFormat::Q5_K ||
                                        format == QuantFormat::Q6_K;
                    const std::vector<double>& xhat = kQuant ? xhat256 : xhat32;
                    const std::vector<double>& halfScale = kQuant ? halfScale256 : halfScale32;
                    double want = 0, exact = 0, magnitude = 0, quantBound = 0;
                    for (int64_t i = 0; i < cols; ++i) {
                        const size_t at = static_cast<size_t>(m * cols + i);
                        const double w = dense[static_cast<size_t>(r * cols + i)];
                        const double xi = integer ? xhat[at] : double(x[at]);
                        want += w * xi;
                        exact += w * x[at];
                        magnitude += std::abs(w * xi);
                        quantBound += std::abs(w) * halfScale[at];
                    }
                    const double bound = 4.0 * double(cols) * std::ldexp(1.0, -24) * magnitude + 1e-30;
                    const float got = y[static_cast<size_t>(m * rows + r)];
                    ASSERT_NEAR(got, want, bound) << what << " on " << isaName(isa) << ", M=" << M << ", row " << r;
                    ASSERT_NEAR(got, exact, bound + (integer ? quantBound : 0.0))
                        << what << " on " << isaName(isa) << " against unquantised x, row " << r;
                }
        }
    }
}

QuantMatrix randomMatrix(uint32_t type, int64_t rows, int64_t cols, std::vector<uint8_t>& keep) {
    keep = randomRows(type, rows, cols, type * 7 + 1);
    const int64_t rowBytes = cols / ggmlBlockSize(type) * static_cast<int64_t>(ggmlBlockBytes(type));
    return QuantMatrix(cols, {{QuantMatrix::formatOf(type), type, keep.data(), rows, rowBytes}}, &dequantizeRow, nullptr);
}

TEST(QuantMatrix, EveryFormatEqualsTheDequantisedProductOnEveryInstructionSet) {
    for (GgmlType t : {GgmlType::F16, GgmlType::BF16, GgmlType::Q8_0, GgmlType::Q4_0, GgmlType::Q4_K,
                       GgmlType::Q5_K, GgmlType::Q6_K, GgmlType::Q3_K, GgmlType::Q5_0}) {
        const uint32_t type = static_cast<uint32_t>(t);
        // 37 rows (threads split them unevenly) of 768 columns (three K-quant blocks;
        // F16's 2N-lane loop leaves a tail on AVX-512 at 768 - 736).
        std::vector<uint8_t> keep;
        const QuantMatrix q = randomMatrix(type, 37, 768, keep);
        checkMatrix(q, ggmlTypeName(type));
    }
    const std::vector<const QuantDotTable*> isas = QuantMatrix::runnableIsas();
    RecordProperty("instruction_sets", std::to_string(isas.size()));
    if (CpuFeatures::probe().avx2) { EXPECT_GE(isas.size(), 2u); }  // the AVX2 path ran
    if (CpuFeatures::probe().avx512f) { EXPECT_GE(isas.size(), 3u); }
    if (CpuFeatures::probe().avx512vnni) { EXPECT_EQ(isas.size(), 4u); }
}

// Rows whose blocks of 32 are not a multiple of the kernels' step (four Q4_0/Q8_0 blocks,
// eight Q4_0 blocks on AVX2, 64 F16/BF16/F32 elements on AVX-512): 25 and 27 blocks, so
// each kernel's tail runs, and 4 blocks and 1 (the tail alone on AVX2's Q4_0).
TEST(QuantMatrix, RowsOfAnyBlockCountRunTheKernelsTails) {
    for (GgmlType t : {GgmlType::Q4_0, GgmlType::Q8_0, GgmlType::F16, GgmlType::BF16, GgmlType::Q5_0}) {
        for (int64_t blocks : {1, 4, 25, 27}) {
            std::vector<uint8_t> keep;
            const uint32_t type = static_cast<uint32_t>(t);
            const QuantMatrix q = randomMatrix(type, 9, 32 * blocks, keep);
            checkMatrix(q, std::string(ggmlTypeName(type)) + " with " + std::to_string(blocks) + " blocks");
        }
    }
}

// A fused matrix of parts in different formats, as [q | k | v] of a Q4_K_M file.
TEST(QuantMatrix, MixedPartsReadEachRowInItsOwnFormat) {
    std::vector<uint8_t> a = randomRows(12, 5, 512, 1), b = randomRows(14, 3, 512, 2), c = randomRows(8, 4, 512, 3);
    const QuantMatrix q(512,
                        {{QuantFormat::Q4_K, 12, a.data(), 5, 2 * 144},
                         {QuantFormat::Q6_K, 14, b.data(), 3, 2 * 210},
                         {QuantFormat::Q8_0, 8, c.data(), 4, 16 * 34}},
                        &dequantizeRow, nullptr);
    EXPECT_EQ(q.rows(), 12);
    checkMatrix(q, "Q4_K+Q6_K+Q8_0");
}

// Real blocks: every projection of the llama-quantize files in tests/data/gguf.
TEST(QuantMatrix, RealBlocksFromLlamaQuantize) {
    int checked = 0;
    for (const char* name : {"tiny-llama3-Q4_K_M", "tiny-qwen2-Q8_0", "tiny-Q5_K_M", "tiny-Q2_K"}) {
        GgufFile file(std::string(KVLENS_SOURCE_DIR) + "/tests/data/gguf/" + name + ".gguf");
        for (const GgufTensorInfo& t : file.tensors()) {
            if (t.shape.size() != 2 || t.name.find("blk.0.") != 0) continue;
            const int64_t cols = t.shape[0], rows = t.shape[1];
            const int64_t rowBytes = cols / ggmlBlockSize(t.type) * static_cast<int64_t>(ggmlBlockBytes(t.type));
            const QuantMatrix q(cols,
                                {{QuantMatrix::formatOf(t.type), t.type, file.tensorData(t), rows, rowBytes}},
                                &dequantizeRow, nullptr);
            checkMatrix(q, std::string(name) + " " + t.name + " (" + ggmlTypeName(t.type) + ")");
            ++checked;
        }
    }
    EXPECT_GE(checked, 20);
}

// Decode's products hand rows out to the threads in chunks of about 64 KB from a
// shared counter: a matrix of many chunks with a short last one (1000 Q4_0 rows of
// 2048 columns: chunks of 56 rows, the last 48) gives every row, bit for bit the same
// on one thread as on two or three, on every instruction set.
TEST(QuantMatrix, RowsHandedOutInChunksGiveTheSameProductOnAnyThreadCount) {
    std::vector<uint8_t> keep;
    const QuantMatrix q = randomMatrix(static_cast<uint32_t>(GgmlType::Q4_0), 1000, 2048, keep);
    std::mt19937_64 rng(5);
    std::normal_distribution<float> normal;
    std::vector<float> x(2 * 2048);
    for (float& v : x) v = normal(rng);
    const int threadsBefore = at::get_num_threads();
    for (const QuantDotTable* isa : QuantMatrix::runnableIsas()) {
        std::vector<std::vector<float>> byThreads;
        for (int threads : {1, 2, 3}) {
            at::set_num_threads(threads);
            std::vector<float> y(2 * 1000, NAN);
            q.gemv(x.data(), 2, y.data(), isa);
            byThreads.push_back(y);
        }
        at::set_num_threads(threadsBefore);
        for (size_t i = 0; i < byThreads[0].size(); ++i) {
            ASSERT_FALSE(std::isnan(byThreads[0][i])) << isaName(isa) << ": row " << i % 1000 << " never written";
            for (size_t t = 1; t < byThreads.size(); ++t)
                ASSERT_EQ(byThreads[t][i], byThreads[0][i])
                    << isaName(isa) << ": row " << i % 1000 << " on " << t + 1 << " threads";
        }
    }
    checkMatrix(q, "Q4_0 1000 x 2048");
}

// Each instruction set quantises x in registers (QuantDotTable::quantize, what gemv
// calls); the plain C++ quantizeX is the reference, and the two must agree bit for bit
// in q, d and the sums of 16: on normal values, on exact halves after scaling (ties go
// to the even integer), on an all-zero block, on tiny, huge and negative-zero values,
// and on blocks holding a NaN or an infinity.
TEST(QuantMatrix, EveryInstructionSetQuantisesXAsThePlainReferenceBitForBit) {
    constexpr int64_t n = 2048;
    std::mt19937_64 rng(11);
    std::normal_distribution<float> normal;
    std::vector<float> x(n);
    for (float& v : x) v = normal(rng);
    // Block 2 (of 32) and super-block 1 (of 256): amax 127, so x * 127 / amax is x.
    for (int64_t i = 64; i < 96; ++i) x[i] = static_cast<float>(i - 80) + 0.5f;
    x[95] = 127.0f;
    for (int64_t i = 256; i < 512; ++i) x[i] = static_cast<float>(i % 64) - 31.5f;
    x[300] = -127.0f;
    for (int64_t i = 512; i < 768; ++i) x[i] = 0.0f;  // all zero: d 0, q 0
    x[800] = -0.0f;
    for (int64_t i = 832; i < 864; ++i) x[i] = 1e-40f * static_cast<float>(i - 840);  // subnormal
    for (int64_t i = 1024; i < 1056; ++i) x[i] = 3e37f * normal(rng);                  // huge
    x[1300] = NAN;
    x[1600] = INFINITY;
    x[1601] = -5.0f;
    for (const QuantDotTable* isa : QuantMatrix::runnableIsas()) {
        if (isa == nullptr) continue;  // plain C++ does not quantise x
        for (int64_t block : {32, 256}) {
            std::vector<int8_t> q0(n), q1(n);
            std::vector<float> d0(n / block), d1(n / block, -1.0f);
            std::vector<int32_t> s0(n / 16), s1(n / 16, -1);
            QuantMatrix::quantizeX(x.data(), n, block, q0.data(), d0.data(), s0.data());
            isa->quantize(x.data(), n, block, q1.data(), d1.data(), s1.data());
            for (int64_t i = 0; i < n; ++i)
                ASSERT_EQ(q1[i], q0[i]) << isaName(isa) << ", blocks of " << block << ": q[" << i << "] of x " << x[i];
            for (int64_t b = 0; b < n / block; ++b)
                ASSERT_EQ(std::memcmp(&d1[b], &d0[b], sizeof(float)), 0)
                    << isaName(isa) << ", blocks of " << block << ": d[" << b << "] " << d1[b] << " against " << d0[b];
            for (int64_t g = 0; g < n / 16; ++g)
                ASSERT_EQ(s1[g], s0[g]) << isaName(isa) << ", blocks of " << block << ": sum of 16 number " << g;
        }
    }
    // The reference itself on the ties: 2.5 -> 2, -3.5 -> -4, 0.5 -> 0 (to even).
    std::vector<int8_t> q(n);
    std::vector<float> d(n / 32);
    QuantMatrix::quantizeX(x.data(), n, 32, q.data(), d.data(), nullptr);
    EXPECT_EQ(q[82], 2);
    EXPECT_EQ(q[76], -4);
    EXPECT_EQ(q[80], 0);
    EXPECT_EQ(q[1300], -127);  // NaN: no integer
}

TEST(QuantMatrix, LinearTakesTheGemvForDecodeAndTilesForPrefill) {
    std::vector<uint8_t> keep;
    const auto q = std::make_shared<QuantMatrix>(randomMatrix(12, 300, 512, keep));
    std::vector<float> dense(300 * 512);
    q->dequantizeRows(0, 300, dense.data());
    const at::Tensor w = at::from_blob(dense.data(), {300, 512}, at::kFloat).clone();
    const kernels::Weight weight(q);
    for (int64_t M : {1, 4, 9, 70}) {
        const at::Tensor x = at::randn({M, 512});
        const at::Tensor bias = at::randn({300});
        const at::Tensor want = at::linear(x.to(at::kDouble), w.to(at::kDouble), bias.to(at::kDouble));
        const at::Tensor got = kernels::linear(x, weight, bias);
        EXPECT_EQ(got.sizes(), want.sizes());
        // Decode's rows meet x quantised to int8 (half a block scale per element).
        const at::Tensor halfScale =
            (x.view({M, 16, 32}).abs().amax(2, true) / 254.0).expand({M, 16, 32}).reshape({M, 512});
        // Either path sums in fp32: its rounding grows with sum |x| |w| (~1e3 here),
        // and with the GEMM's blocking, which the threads free at the time decide.
        const at::Tensor fp32 = 1e-5 * at::linear(x.abs().to(at::kDouble), w.abs().to(at::kDouble)) + 1e-4;
        const at::Tensor bound = M <= kernels::kQuantGemvMaxRows
                                     ? at::linear(halfScale.to(at::kDouble), w.abs().to(at::kDouble)) + fp32
                                     : fp32;
        EXPECT_TRUE(((got.to(at::kDouble) - want).abs() <= bound).all().item<bool>()) << "M=" << M;
    }
    const at::Tensor rows = kernels::embeddingRows(weight, {3, 299, 0});
    EXPECT_TRUE(at::equal(rows[1], w[299]));
}

TEST(QuantMatrix, BadShapesAndIsaNamesAreOneLine) {
    std::vector<uint8_t> bytes(1000);
    try {
        QuantMatrix(100, {{QuantFormat::Q8_0, 8, bytes.data(), 1, 100}}, &dequantizeRow, nullptr);
        FAIL();
    } catch (const Error& e) {
        EXPECT_STREQ(e.what(), "quantised matrix: 100 columns, not a positive multiple of 32");
    }
    try {
        QuantMatrix(64, {{QuantFormat::Q8_0, 8, bytes.data(), 1, 70}}, &dequantizeRow, nullptr);
        FAIL();
    } catch (const Error& e) {
        EXPECT_STREQ(e.what(), "quantised matrix: a Q8_0 row of 64 columns cannot take 70 bytes");
    }
    try {  // rows are counted, not read, when the matrix is made
        QuantMatrix(64, {{QuantFormat::Q8_0, 8, bytes.data(), int64_t{1} << 32, 68}}, &dequantizeRow, nullptr);
        FAIL();
    } catch (const Error& e) {
        EXPECT_STREQ(e.what(), "quantised matrix: 4294967296 rows, more than 2^32 - 1");
    }
    try {
        CpuFeatures::capped(CpuFeatures::probe(), "sse9");
        FAIL();
    } catch (const Error& e) {
        EXPECT_STREQ(e.what(), "KVLENS_ISA='sse9': use native, avx2 (no AVX-512) or scalar (no AVX)");
    }
    const CpuFeatures avx2 = CpuFeatures::capped(CpuFeatures::probe(), "avx2");
    EXPECT_FALSE(avx2.avx512f);
    EXPECT_FALSE(avx2.avx512bf16);
    EXPECT_FALSE(CpuFeatures::capped(CpuFeatures::probe(), "scalar").avx2);
}

}  // namespace
}  // namespace kvlens
