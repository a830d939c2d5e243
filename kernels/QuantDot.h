// One weight row's dot product with an activation vector, the row read in its file
// format, per instruction set. F16 and BF16 rows are widened to fp32 in registers and
// multiplied with x in fp32. Quantised rows (Q8_0, Q4_0, Q4_K, Q5_K, Q6_K) are
// multiplied as integers with x quantised to int8 in blocks of 32 (QuantX: scale
// amax / 127, round to nearest), as llama.cpp does, and scaled in fp32 per block:
// the error this adds is at most half of x's block scale times the sum of the block's
// |w| (QuantMatrixTest checks both that bound and the exact integer product).
//
// Each instruction set lives in its own translation unit compiled for it, from the
// one body in QuantDotBody.h: AVX2 with FMA and F16C (the baseline), AVX-512 (F, BW,
// DQ, VL: 16-lane fp32 for F16/BF16 and 512-bit integer kernels, QuantDotBody512.h), and
// AVX-512 VNNI (vpdpbusd / vpdpwssd for the integer products). Callers pick the table
// the CPU can run (CpuFeatures), at run time.
#pragma once

#include <cstdint>

#include "kernels/QuantFormat.h"

namespace kvlens::kernels {

// An activation vector of n elements (n a multiple of 32), with what the kernels read.
// x quantised twice: in blocks of 32 for Q8_0 and Q4_0 rows, in blocks of 256 for
// the K-quants (one scale per super-block, so a super-block's integer products add up
// before one fp32 multiply, as llama.cpp's Q8_K does).
struct QuantX {
    const float* x;            // n floats (for F16, BF16 and F32 rows)
    const int8_t* q;           // n: x quantised, block b of 32 scaled by d[b]
    const float* d;            // n / 32
    const int8_t* qK;          // n: x quantised, block b of 256 scaled by dK[b] (n % 256 == 0)
    const float* dK;           // n / 256
    const int32_t* qKsum16;    // n / 16: the sum of qK over each 16
    const float* off32;        // n / 32: 8 d[b] times the sum of q over block b (Q4_0's offset of 8)
    const int8_t* qPairs;      // n: q with each two blocks' first 16 bytes, then their last 16
                               // (AVX2's Q4_0 kernel; a last odd block as in q)
};

using RowDot = float (*)(const uint8_t* row, const QuantX& x, int64_t n);
// QuantMatrix::quantizeX's contract, in registers (equal to it bit for bit).
using QuantizeX = void (*)(const float* x, int64_t n, int64_t block, int8_t* q, float* d, int32_t* qsum16);

struct QuantDotTable {
    const char* isa;  // "avx2", "avx512", "avx512vnni"
    RowDot f16, bf16, q8_0, q4_0, q4_k, q5_k, q6_k;
    RowDot f32;  // a plain fp32 row (a dequantised scratch row of another type)
    QuantizeX quantize;  // x into QuantX's q, d and qKsum16, as the products above read it

    RowDot of(QuantFormat f) const;  // f32 for Other
};

// The tables this build has for x86-64 (nullptr elsewhere); whether the CPU runs
// them is the caller's to check.
const QuantDotTable* quantDotAvx2();
const QuantDotTable* quantDotAvx512();
const QuantDotTable* quantDotAvx512Vnni();

}  // namespace kvlens::kernels
