// ggml block formats, decoded as ggml-quants.c decodes them (dequantize_row_*).
// Blocks are read through byte pointers and memcpy, never cast to structs, so
// unaligned tensor data (any GGUF offset) is fine.
#include "engine/gguf/Dequantize.h"

#include <cstring>
#include <string>

#include "core/Error.h"

namespace kvlens {

namespace {

constexpr int64_t kQK = 32;     // elements per Q8_0 / Q4_0 block
constexpr int64_t kQK_K = 256;  // elements per K-quant super-block

// Bytes per block of each layout (ggml-common.h).
constexpr size_t kQ8_0Bytes = 2 + 32;             // f16 d, int8 qs[32]
constexpr size_t kQ4_0Bytes = 2 + 16;             // f16 d, uint8 qs[16]
constexpr size_t kQ4_KBytes = 2 + 2 + 12 + 128;   // f16 d, f16 dmin, scales[12], qs[128]
constexpr size_t kQ6_KBytes = 128 + 64 + 16 + 2;  // ql[128], qh[64], int8 scales[16], f16 d

inline uint16_t loadU16(const uint8_t* p) { return static_cast<uint16_t>(p[0] | (p[1] << 8)); }

float halfToFloatBits(uint16_t h) {
    const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
    const uint32_t exp = (h >> 10) & 0x1Fu;
    const uint32_t mant = h & 0x3FFu;
    uint32_t bits;
    if (exp == 0x1F) {  // inf / NaN (payload kept)
        bits = sign | 0x7F800000u | (mant << 13);
    } else if (exp != 0) {  // normal
        bits = sign | ((exp + 112u) << 23) | (mant << 13);
    } else if (mant == 0) {  // signed zero
        bits = sign;
    } else {  // subnormal: mant * 2^-24, exact in float
        float f = static_cast<float>(mant) * (1.0f / 16777216.0f);
        uint32_t fb;
        std::memcpy(&fb, &f, 4);
        bits = sign | fb;
    }
    float out;
    std::memcpy(&out, &bits, 4);
    return out;
}

// Every half value decoded once; F16 tensors become a table lookup per element.
const float* halfTable() {
    static const float* table = [] {
        static float t[65536];
        for (uint32_t i = 0; i < 65536; ++i) t[i] = halfToFloatBits(static_cast<uint16_t>(i));
        return t;
    }();
    return table;
}

void dequantF32(const uint8_t* src, float* dst, int64_t n) {
    std::memcpy(dst, src, static_cast<size_t>(n) * 4);
}

void dequantF16(const uint8_t* src, float* dst, int64_t n) {
    const float* table = halfTable();
    for (int64_t i = 0; i < n; ++i) dst[i] = table[loadU16(src + 2 * i)];
}

void dequantBF16(const uint8_t* src, float* dst, int64_t n) {
    for (int64_t i = 0; i < n; ++i) {
        const uint32_t bits = static_cast<uint32_t>(loadU16(src + 2 * i)) << 16;
        std::memcpy(dst + i, &bits, 4);
    }
}

// Q8_0: x[j] = d * qs[j].
void dequantQ8_0(const uint8_t* src, float* dst, int64_t n) {
    const float* table = halfTable();
    for (int64_t b = 0; b < n / kQK; ++b) {
        const uint8_t* blk = src + b * kQ8_0Bytes;
        const float d = table[loadU16(blk)];
        const int8_t* qs = reinterpret_cast<const int8_t*>(blk + 2);
        float* y = dst + b * kQK;
        for (int j = 0; j < kQK; ++j) y[j] = static_cast<float>(qs[j]) * d;
    }
}

// Q4_0: byte j holds element j (low nibble) and element j+16 (high nibble); x = (q-8)*d.
void dequantQ4_0(const uint8_t* src, float* dst, int64_t n) {
    const float* table = halfTable();
    for (int64_t b = 0; b < n / kQK; ++b) {
        const uint8_t* blk = src + b * kQ4_0Bytes;
        const float d = table[loadU16(blk)];
        const uint8_t* qs = blk + 2;
        float* y = dst + b * kQK;
        for (int j = 0; j < kQK / 2; ++j) {
            y[j] = static_cast<float>((qs[j] & 0x0F) - 8) * d;
            y[j + kQK / 2] = static_cast<float>((qs[j] >> 4) - 8) * d;
        }
    }
}

// get_scale_min_k4: 8 six-bit scales and 8 six-bit mins in 12 bytes. Sub-blocks
// 0..3 use the low 6 bits of bytes 0..3 (scale) and 4..7 (min); sub-blocks 4..7
// take their low 4 bits from bytes 8..11 and their top 2 bits from the top bits
// of bytes 0..3 (scale) and 4..7 (min).
inline void scaleMinK4(int j, const uint8_t* q, int& sc, int& m) {
    if (j < 4) {
        sc = q[j] & 63;
        m = q[j + 4] & 63;
    } else {
        sc = (q[j + 4] & 0x0F) | ((q[j - 4] >> 6) << 4);
        m = (q[j + 4] >> 4) | ((q[j] >> 6) << 4);
    }
}

// Q4_K: 4 chunks of 64 elements; chunk c uses 32 bytes of qs: low nibbles are
// elements 0..31 (sub-block 2c), high nibbles 32..63 (sub-block 2c+1).
// x = d*sc*q - dmin*m.
// Q5_K adds qh[32] after the scales: chunk c takes its fifth bits from qh bit
// 2c (first 32 elements) and bit 2c+1 (second 32). One body for both.
void dequantQ4_5_K(const uint8_t* src, float* dst, int64_t n, bool fifthBit) {
    const float* table = halfTable();
    const size_t bytes = fifthBit ? 176 : kQ4_KBytes;
    for (int64_t b = 0; b < n / kQK_K; ++b) {
        const uint8_t* blk = src + b * bytes;
        const float d = table[loadU16(blk)];
        const float dmin = table[loadU16(blk + 2)];
        const uint8_t* scales = blk + 4;
        const uint8_t* qh = fifthBit ? blk + 16 : nullptr;
        const uint8_t* q = blk + (fifthBit ? 48 : 16);
        float* y = dst + b * kQK_K;
        for (int c = 0; c < 4; ++c) {
            int sc, m;
            scaleMinK4(2 * c, scales, sc, m);
            const float d1 = d * static_cast<float>(sc);
            const float m1 = dmin * static_cast<float>(m);
            scaleMinK4(2 * c + 1, scales, sc, m);
            const float d2 = d * static_cast<float>(sc);
            const float m2 = dmin * static_cast<float>(m);
            const uint8_t u1 = uint8_t(1 << (2 * c)), u2 = uint8_t(2 << (2 * c));
            for (int l = 0; l < 32; ++l) {
                const int high = qh && (qh[l] & u1) ? 16 : 0;
                y[l] = d1 * static_cast<float>((q[l] & 0x0F) + high) - m1;
            }
            for (int l = 0; l < 32; ++l) {
                const int high = qh && (qh[l] & u2) ? 16 : 0;
                y[32 + l] = d2 * static_cast<float>((q[l] >> 4) + high) - m2;
            }
            q += 32;
            y += 64;
        }
    }
}

// Q6_K: 2 halves of 128 elements; half h uses ql[64h..64h+63], qh[32h..32h+31]
// and scales[8h..8h+7]. For l in 0..31: element l = low nibble of ql[l] with
// qh bits 0-1, l+32 = low nibble of ql[l+32] with bits 2-3, l+64 = high nibble of
// ql[l] with bits 4-5, l+96 = high nibble of ql[l+32] with bits 6-7; q-32 times
// d * scales[l/16 + {0,2,4,6}].
void dequantQ6_K(const uint8_t* src, float* dst, int64_t n) {
    const float* table = halfTable();
    for (int64_t b = 0; b < n / kQK_K; ++b) {
        const uint8_t* blk = src + b * kQ6_KBytes;
        const uint8_t* ql = blk;
        const uint8_t* qh = blk + 128;
        const int8_t* sc = reinterpret_cast<const int8_t*>(blk + 192);
        const float d = table[loadU16(blk + 208)];
        float* y = dst + b * kQK_K;
        for (int half = 0; half < 2; ++half) {
            for (int g = 0; g < 2; ++g) {  // l in [16g, 16g+16) share scales sc[g + 2k]
                const float s0 = d * static_cast<float>(sc[g + 0]);
                const float s1 = d * static_cast<float>(sc[g + 2]);
                const float s2 = d * static_cast<float>(sc[g + 4]);
                const float s3 = d * static_cast<float>(sc[g + 6]);
                for (int l = 16 * g; l < 16 * g + 16; ++l) {
                    const int q1 = ((ql[l] & 0x0F) | (((qh[l] >> 0) & 3) << 4)) - 32;
                    const int q2 = ((ql[l + 32] & 0x0F) | (((qh[l] >> 2) & 3) << 4)) - 32;
                    const int q3 = ((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32;
                    const int q4 = ((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32;
                    y[l] = s0 * static_cast<float>(q1);
                    y[l + 32] = s1 * static_cast<float>(q2);
                    y[l + 64] = s2 * static_cast<float>(q3);
                    y[l + 96] = s3 * static_cast<float>(q4);
                }
            }
            y += 128;
            ql += 64;
            qh += 32;
            sc += 8;
        }
    }
}

// Q4_1: as Q4_0 with a minimum: x = q*d + m.
void dequantQ4_1(const uint8_t* src, float* dst, int64_t n) {
    const float* table = halfTable();
    for (int64_t b = 0; b < n / kQK; ++b) {
        const uint8_t* blk = src + b * 20;
        const float d = table[loadU16(blk)];
        const float m = table[loadU16(blk + 2)];
        const uint8_t* qs = blk + 4;
        float* y = dst + b * kQK;
        for (int j = 0; j < kQK / 2; ++j) {
            y[j] = static_cast<float>(qs[j] & 0x0F) * d + m;
            y[j + kQK / 2] = static_cast<float>(qs[j] >> 4) * d + m;
        }
    }
}

// Q5_0 / Q5_1: Q4's nibbles plus a fifth bit per element from the 32-bit qh
// (bit j for element j, bit j+16 for element j+16). Q5_0: x = (q-16)*d;
// Q5_1: x = q*d + m.
void dequantQ5(const uint8_t* src, float* dst, int64_t n, bool withMin) {
    const float* table = halfTable();
    const size_t bytes = withMin ? 24 : 22;
    for (int64_t b = 0; b < n / kQK; ++b) {
        const uint8_t* blk = src + b * bytes;
        const float d = table[loadU16(blk)];
        const float m = withMin ? table[loadU16(blk + 2)] : 0.0f;
        const uint8_t* h = blk + (withMin ? 4 : 2);
        const uint32_t qh = uint32_t(h[0]) | uint32_t(h[1]) << 8 | uint32_t(h[2]) << 16 | uint32_t(h[3]) << 24;
        const uint8_t* qs = h + 4;
        float* y = dst + b * kQK;
        for (int j = 0; j < kQK / 2; ++j) {
            const int q0 = (qs[j] & 0x0F) | int((qh >> j) & 1) << 4;
            const int q1 = (qs[j] >> 4) | int((qh >> (j + 16)) & 1) << 4;
            if (withMin) {
                y[j] = static_cast<float>(q0) * d + m;
                y[j + kQK / 2] = static_cast<float>(q1) * d + m;
            } else {
                y[j] = static_cast<float>(q0 - 16) * d;
                y[j + kQK / 2] = static_cast<float>(q1 - 16) * d;
            }
        }
    }
}

// Q2_K: 16 sub-blocks of 16; scales[i] holds sub-block i's scale (low nibble)
// and min (high nibble). Each 128-element half reads 32 bytes of qs four times,
// two bits at a time (shift 0, 2, 4, 6), 16 bytes per sub-block. x = d*sc*q - dmin*m.
void dequantQ2_K(const uint8_t* src, float* dst, int64_t n) {
    const float* table = halfTable();
    for (int64_t b = 0; b < n / kQK_K; ++b) {
        const uint8_t* blk = src + b * 84;
        const uint8_t* scales = blk;
        const uint8_t* q = blk + 16;
        const float d = table[loadU16(blk + 80)];
        const float dmin = table[loadU16(blk + 82)];
        float* y = dst + b * kQK_K;
        int is = 0;
        for (int half = 0; half < 2; ++half) {
            for (int shift = 0; shift < 8; shift += 2) {
                for (int part = 0; part < 2; ++part) {
                    const uint8_t sc = scales[is++];
                    const float dl = d * static_cast<float>(sc & 0x0F);
                    const float ml = dmin * static_cast<float>(sc >> 4);
                    for (int l = 0; l < 16; ++l)
                        *y++ = dl * static_cast<float>((q[l + 16 * part] >> shift) & 3) - ml;
                }
            }
            q += 32;
        }
    }
}

// Q3_K: 16 six-bit scales packed in 12 bytes (low nibbles in bytes 0..7, top
// two bits in 8..11), offset by 32; two low bits of each element from qs as in
// Q2_K and a third from hmask (bit set: +0, clear: -4). x = d*(sc-32)*q.
void dequantQ3_K(const uint8_t* src, float* dst, int64_t n) {
    const float* table = halfTable();
    for (int64_t b = 0; b < n / kQK_K; ++b) {
        const uint8_t* blk = src + b * 110;
        const uint8_t* hm = blk;
        const uint8_t* q = blk + 32;
        const uint8_t* packed = blk + 96;
        const float d = table[loadU16(blk + 108)];
        int scales[16];
        for (int i = 0; i < 16; ++i) {
            const int low = i < 8 ? packed[i] & 0x0F : packed[i - 8] >> 4;
            const int high = (packed[8 + i % 4] >> (2 * (i / 4))) & 3;
            scales[i] = (low | high << 4) - 32;
        }
        float* y = dst + b * kQK_K;
        int is = 0;
        uint8_t mask = 1;
        for (int half = 0; half < 2; ++half) {
            for (int shift = 0; shift < 8; shift += 2) {
                for (int part = 0; part < 2; ++part) {
                    const float dl = d * static_cast<float>(scales[is++]);
                    for (int l = 0; l < 16; ++l) {
                        const int k = l + 16 * part;
                        const int v = int((q[k] >> shift) & 3) - ((hm[k] & mask) ? 0 : 4);
                        *y++ = dl * static_cast<float>(v);
                    }
                }
                mask = uint8_t(mask << 1);
            }
            q += 32;
        }
    }
}

// IQ4_NL and IQ4_XS: 4-bit indices into one non-linear table of 16 levels.
constexpr int8_t kIq4Levels[16] = {-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113};

// IQ4_NL: blocks of 32 like Q4_0: x = d * level[q].
void dequantIQ4_NL(const uint8_t* src, float* dst, int64_t n) {
    const float* table = halfTable();
    for (int64_t b = 0; b < n / kQK; ++b) {
        const uint8_t* blk = src + b * 18;
        const float d = table[loadU16(blk)];
        const uint8_t* qs = blk + 2;
        float* y = dst + b * kQK;
        for (int j = 0; j < 16; ++j) {
            y[j] = d * static_cast<float>(kIq4Levels[qs[j] & 0x0F]);
            y[j + 16] = d * static_cast<float>(kIq4Levels[qs[j] >> 4]);
        }
    }
}

// IQ4_XS: super-blocks of 256 in 8 sub-blocks of 32, each with a six-bit scale
// (low nibble from scales_l, top two bits from scales_h) offset by 32.
void dequantIQ4_XS(const uint8_t* src, float* dst, int64_t n) {
    const float* table = halfTable();
    for (int64_t b = 0; b < n / kQK_K; ++b) {
        const uint8_t* blk = src + b * 136;
        const float d = table[loadU16(blk)];
        const uint16_t scalesH = loadU16(blk + 2);
        const uint8_t* scalesL = blk + 4;
        const uint8_t* qs = blk + 8;
        float* y = dst + b * kQK_K;
        for (int ib = 0; ib < 8; ++ib) {
            const int ls = ((scalesL[ib / 2] >> (4 * (ib % 2))) & 0x0F) | (((scalesH >> (2 * ib)) & 3) << 4);
            const float dl = d * static_cast<float>(ls - 32);
            for (int j = 0; j < 16; ++j) {
                y[j] = dl * static_cast<float>(kIq4Levels[qs[j] & 0x0F]);
                y[j + 16] = dl * static_cast<float>(kIq4Levels[qs[j] >> 4]);
            }
            y += 32;
            qs += 16;
        }
    }
}

}  // namespace

const char* ggmlTypeName(uint32_t type) {
    switch (static_cast<GgmlType>(type)) {
        case GgmlType::F32:
            return "F32";
        case GgmlType::F16:
            return "F16";
        case GgmlType::Q4_0:
            return "Q4_0";
        case GgmlType::Q4_1:
            return "Q4_1";
        case GgmlType::Q5_0:
            return "Q5_0";
        case GgmlType::Q5_1:
            return "Q5_1";
        case GgmlType::Q8_0:
            return "Q8_0";
        case GgmlType::Q8_1:
            return "Q8_1";
        case GgmlType::Q2_K:
            return "Q2_K";
        case GgmlType::Q3_K:
            return "Q3_K";
        case GgmlType::Q4_K:
            return "Q4_K";
        case GgmlType::Q5_K:
            return "Q5_K";
        case GgmlType::Q6_K:
            return "Q6_K";
        case GgmlType::Q8_K:
            return "Q8_K";
        case GgmlType::IQ2_XXS:
            return "IQ2_XXS";
        case GgmlType::IQ2_XS:
            return "IQ2_XS";
        case GgmlType::IQ3_XXS:
            return "IQ3_XXS";
        case GgmlType::IQ1_S:
            return "IQ1_S";
        case GgmlType::IQ4_NL:
            return "IQ4_NL";
        case GgmlType::IQ3_S:
            return "IQ3_S";
        case GgmlType::IQ2_S:
            return "IQ2_S";
        case GgmlType::IQ4_XS:
            return "IQ4_XS";
        case GgmlType::I8:
            return "I8";
        case GgmlType::I16:
            return "I16";
        case GgmlType::I32:
            return "I32";
        case GgmlType::I64:
            return "I64";
        case GgmlType::F64:
            return "F64";
        case GgmlType::IQ1_M:
            return "IQ1_M";
        case GgmlType::BF16:
            return "BF16";
        case GgmlType::TQ1_0:
            return "TQ1_0";
        case GgmlType::TQ2_0:
            return "TQ2_0";
    }
    // Codes this build does not know; a small ring so a few names can coexist in one message.
    static thread_local char names[4][24];
    static thread_local unsigned next = 0;
    char* out = names[next++ % 4];
    std::string s = "type" + std::to_string(type);
    std::strncpy(out, s.c_str(), sizeof(names[0]) - 1);
    out[sizeof(names[0]) - 1] = '\0';
    return out;
}

bool ggmlTypeSupported(uint32_t type) {
    switch (static_cast<GgmlType>(type)) {
        case GgmlType::F32:
        case GgmlType::F16:
        case GgmlType::BF16:
        case GgmlType::Q4_0:
        case GgmlType::Q4_1:
        case GgmlType::Q5_0:
        case GgmlType::Q5_1:
        case GgmlType::Q8_0:
        case GgmlType::Q2_K:
        case GgmlType::Q3_K:
        case GgmlType::Q4_K:
        case GgmlType::Q5_K:
        case GgmlType::Q6_K:
        case GgmlType::IQ4_NL:
        case GgmlType::IQ4_XS:
            return true;
        default:
            return false;
    }
}

const char* ggmlSupportedTypeList() {
    return "F32, F16, BF16, Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, IQ4_NL, IQ4_XS";
}

int64_t ggmlBlockSize(uint32_t type) {
    switch (static_cast<GgmlType>(type)) {
        case GgmlType::F32:
        case GgmlType::F16:
        case GgmlType::BF16:
        case GgmlType::I8:
        case GgmlType::I16:
        case GgmlType::I32:
        case GgmlType::I64:
        case GgmlType::F64:
            return 1;
        case GgmlType::Q4_0:
        case GgmlType::Q4_1:
        case GgmlType::Q5_0:
        case GgmlType::Q5_1:
        case GgmlType::Q8_0:
        case GgmlType::Q8_1:
        case GgmlType::IQ4_NL:
            return kQK;
        case GgmlType::Q2_K:
        case GgmlType::Q3_K:
        case GgmlType::Q4_K:
        case GgmlType::Q5_K:
        case GgmlType::Q6_K:
        case GgmlType::Q8_K:
        case GgmlType::IQ2_XXS:
        case GgmlType::IQ2_XS:
        case GgmlType::IQ3_XXS:
        case GgmlType::IQ1_S:
        case GgmlType::IQ3_S:
        case GgmlType::IQ2_S:
        case GgmlType::IQ4_XS:
        case GgmlType::IQ1_M:
        case GgmlType::TQ1_0:
        case GgmlType::TQ2_0:
            return kQK_K;
    }
    return 0;
}

size_t ggmlBlockBytes(uint32_t type) {
    switch (static_cast<GgmlType>(type)) {
        case GgmlType::F32:
            return 4;
        case GgmlType::F16:
            return 2;
        case GgmlType::BF16:
            return 2;
        case GgmlType::Q4_0:
            return kQ4_0Bytes;
        case GgmlType::Q4_1:
            return 2 + 2 + 16;  // d, m, qs[16]
        case GgmlType::Q5_0:
            return 2 + 4 + 16;  // d, qh[4], qs[16]
        case GgmlType::Q5_1:
            return 2 + 2 + 4 + 16;  // d, m, qh[4], qs[16]
        case GgmlType::Q8_0:
            return kQ8_0Bytes;
        case GgmlType::Q8_1:
            return 2 + 2 + 32;  // d, s, qs[32]
        case GgmlType::Q2_K:
            return 16 + 64 + 2 + 2;  // scales, qs, d, dmin
        case GgmlType::Q3_K:
            return 32 + 64 + 12 + 2;  // hmask, qs, scales, d
        case GgmlType::Q4_K:
            return kQ4_KBytes;
        case GgmlType::Q5_K:
            return 2 + 2 + 12 + 32 + 128;  // d, dmin, scales, qh, qs
        case GgmlType::Q6_K:
            return kQ6_KBytes;
        case GgmlType::Q8_K:
            return 4 + 256 + 32;  // float d, qs[256], int16 bsums[16]
        case GgmlType::IQ2_XXS:
            return 2 + 64;  // d, uint16 qs[32]
        case GgmlType::IQ2_XS:
            return 2 + 64 + 8;  // d, qs, scales[8]
        case GgmlType::IQ3_XXS:
            return 2 + 96;  // d, qs[96]
        case GgmlType::IQ1_S:
            return 2 + 32 + 16;  // d, qs[32], uint16 qh[8]
        case GgmlType::IQ4_NL:
            return 2 + 16;  // d, qs[16]
        case GgmlType::IQ3_S:
            return 2 + 64 + 8 + 32 + 4;  // d, qs, qh, signs, scales
        case GgmlType::IQ2_S:
            return 2 + 64 + 16;  // d, qs[64], qh[8], scales[8]
        case GgmlType::IQ4_XS:
            return 2 + 2 + 4 + 128;  // d, scales_h, scales_l[4], qs[128]
        case GgmlType::I8:
            return 1;
        case GgmlType::I16:
            return 2;
        case GgmlType::I32:
            return 4;
        case GgmlType::I64:
        case GgmlType::F64:
            return 8;
        case GgmlType::IQ1_M:
            return 32 + 16 + 8;  // qs, qh, scales
        case GgmlType::TQ1_0:
            return 48 + 4 + 2;  // qs[48], qh[4], d
        case GgmlType::TQ2_0:
            return 64 + 2;  // qs[64], d
    }
    return 0;
}

void dequantize(uint32_t type, const void* src, float* dst, int64_t n) {
    if (!ggmlTypeSupported(type)) {
        throw Error(std::string("cannot dequantize type ") + ggmlTypeName(type) + " (supported: " +
                    ggmlSupportedTypeList() + ")");
    }
    const int64_t bs = ggmlBlockSize(type);
    if (n < 0 || n % bs != 0) {
        throw Error("cannot dequantize " + std::to_string(n) + " elements of type " +
                    ggmlTypeName(type) + ": not a multiple of its block size " +
                    std::to_string(bs));
    }
    if (n == 0) return;
    const uint8_t* s = static_cast<const uint8_t*>(src);
    switch (static_cast<GgmlType>(type)) {
        case GgmlType::F32:
            dequantF32(s, dst, n);
            break;
        case GgmlType::F16:
            dequantF16(s, dst, n);
            break;
        case GgmlType::BF16:
            dequantBF16(s, dst, n);
            break;
        case GgmlType::Q8_0:
            dequantQ8_0(s, dst, n);
            break;
        case GgmlType::Q4_0:
            dequantQ4_0(s, dst, n);
            break;
        case GgmlType::Q4_K:
            dequantQ4_5_K(s, dst, n, false);
            break;
        case GgmlType::Q6_K:
            dequantQ6_K(s, dst, n);
            break;
        case GgmlType::Q4_1:
            dequantQ4_1(s, dst, n);
            break;
        case GgmlType::Q5_0:
            dequantQ5(s, dst, n, false);
            break;
        case GgmlType::Q5_1:
            dequantQ5(s, dst, n, true);
            break;
        case GgmlType::Q2_K:
            dequantQ2_K(s, dst, n);
            break;
        case GgmlType::Q3_K:
            dequantQ3_K(s, dst, n);
            break;
        case GgmlType::Q5_K:
            dequantQ4_5_K(s, dst, n, true);
            break;
        case GgmlType::IQ4_NL:
            dequantIQ4_NL(s, dst, n);
            break;
        case GgmlType::IQ4_XS:
            dequantIQ4_XS(s, dst, n);
            break;
        default:
            break;  // unreachable: checked above
    }
}

float halfToFloat(uint16_t h) { return halfToFloatBits(h); }

float bf16ToFloat(uint16_t b) {
    const uint32_t bits = static_cast<uint32_t>(b) << 16;
    float out;
    std::memcpy(&out, &bits, 4);
    return out;
}

}  // namespace kvlens
