// A weight matrix [rows, cols] kept in its GGUF file's own format and read in place
// (`owner` keeps the file's mapping alive): parts of consecutive rows, each in one
// format, so a fused [q | k | v] may mix types as Q4_K_M files do (Q4_K q and k, Q6_K v).
// Decode's few-row products read the blocks and dequantise in registers (QuantDot, on
// the instruction set chosen by the caller); other formats go a row at a time through
// a scratch row. Prefill dequantises tiles of rows and multiplies them with LibTorch's
// GEMM (kernels::linear).
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "kernels/QuantDot.h"
#include "kernels/QuantFormat.h"

namespace kvlens::kernels {

class QuantMatrix {
public:
    // Dequantises `n` elements of ggml type `type` (engine/gguf's dequantize).
    using DequantizeFn = void (*)(uint32_t type, const void* src, float* dst, int64_t n);

    struct Part {
        QuantFormat format = QuantFormat::Other;
        uint32_t ggmlType = 0;  // the file's type code
        const uint8_t* data = nullptr;
        int64_t rows = 0;
        int64_t rowBytes = 0;
    };

    // Every part has `cols` columns (a multiple of 32); throws kvlens::Error otherwise.
    QuantMatrix(int64_t cols, std::vector<Part> parts, DequantizeFn dequantize, std::shared_ptr<const void> owner);

    int64_t rows() const { return rows_; }
    int64_t cols() const { return cols_; }
    int64_t bytes() const;  // of the blocks read
    const std::vector<Part>& parts() const { return parts_; }

    // y[m][r] = sum_i W[r][i] x[m][i] for m < M; x: [M, cols], y: [M, rows], fp32,
    // contiguous. `isa`: the kernels to use (quantised rows meet x quantised to int8,
    // QuantDot.h); nullptr for plain C++ (dequantise each row, then an fp32 dot
    // product with x itself). Runs on LibTorch's intra-op threads.
    void gemv(const float* x, int64_t M, float* y, const QuantDotTable* isa) const;

    // x (n a multiple of `block`, 32 or 256) quantised as the integer kernels read it
    // (QuantX): q, d (n / block scales, amax / 127) and, unless qsum16 is nullptr, the
    // sums of q over each 16. The plain C++ reference: gemv calls the instruction set's
    // own QuantDotTable::quantize, which equals it bit for bit.
    static void quantizeX(const float* x, int64_t n, int64_t block, int8_t* q, float* d, int32_t* qsum16);
    // QuantX::off32 of x quantised in blocks of 32 (q, d: n / 32 blocks): 8 d[b] sum(q of b).
    static void offsets32(const int8_t* q, const float* d, int64_t n, float* off32);
    // QuantX::qPairs of q (n a multiple of 32).
    static void pairOrder(const int8_t* q, int64_t n, int8_t* qPairs);

    // Rows [r0, r1) as fp32, [r1 - r0, cols] row-major, into `out`.
    void dequantizeRows(int64_t r0, int64_t r1, float* out) const;

    // The kernels of the best instruction set CpuFeatures::detect() reports (nullptr:
    // plain C++), and every set this machine can run, for tests and benchmarks.
    static const QuantDotTable* fastestIsa();
    static std::vector<const QuantDotTable*> runnableIsas();  // nullptr first

    // The format a ggml type is read in (Other for those without kernels).
    static QuantFormat formatOf(uint32_t ggmlType);

private:
    // The part holding row r and the row's bytes.
    const uint8_t* row(int64_t r, const Part** part) const;

    int64_t rows_ = 0, cols_ = 0;
    std::vector<Part> parts_;
    std::vector<int64_t> firstRow_;  // of each part
    bool uses32_ = false, usesK_ = false;  // parts that read x quantised in 32s / in 256s
    bool usesQ4_0_ = false;                // parts that read x's offsets32 and pair order too
    DequantizeFn dequantize_;
    std::shared_ptr<const void> owner_;
};

}  // namespace kvlens::kernels
