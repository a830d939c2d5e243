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
void dequantQ4_K(const uint8_t* src, float* dst, int64_t n) {
    const float* table = halfTable();
    for (int64_t b = 0; b < n / kQK_K; ++b) {
        const uint8_t* blk = src + b * kQ4_KBytes;
        const float d = table[loadU16(blk)];
        const float dmin = table[loadU16(blk + 2)];
        const uint8_t* scales = blk + 4;
        const uint8_t* q = blk + 16;
        float* y = dst + b * kQK_K;
        for (int c = 0; c < 4; ++c) {
            int sc, m;
            scaleMinK4(2 * c, scales, sc, m);
            const float d1 = d * static_cast<float>(sc);
            const float m1 = dmin * static_cast<float>(m);
            scaleMinK4(2 * c + 1, scales, sc, m);
            const float d2 = d * static_cast<float>(sc);
            const float m2 = dmin * static_cast<float>(m);
            for (int l = 0; l < 32; ++l) y[l] = d1 * static_cast<float>(q[l] & 0x0F) - m1;
            for (int l = 0; l < 32; ++l) y[32 + l] = d2 * static_cast<float>(q[l] >> 4) - m2;
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
        case GgmlType::BF16:
            return "BF16";
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
        case GgmlType::Q8_0:
        case GgmlType::Q4_0:
        case GgmlType::Q4_K:
        case GgmlType::Q6_K:
            return true;
        default:
            return false;
    }
}

int64_t ggmlBlockSize(uint32_t type) {
    switch (static_cast<GgmlType>(type)) {
        case GgmlType::F32:
        case GgmlType::F16:
        case GgmlType::BF16:
            return 1;
        case GgmlType::Q4_0:
        case GgmlType::Q4_1:
        case GgmlType::Q5_0:
        case GgmlType::Q5_1:
        case GgmlType::Q8_0:
        case GgmlType::Q8_1:
            return kQK;
        case GgmlType::Q2_K:
        case GgmlType::Q3_K:
        case GgmlType::Q4_K:
        case GgmlType::Q5_K:
        case GgmlType::Q6_K:
        case GgmlType::Q8_K:
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
    }
    return 0;
}

void dequantize(uint32_t type, const void* src, float* dst, int64_t n) {
    if (!ggmlTypeSupported(type)) {
        throw Error(std::string("cannot dequantize type ") + ggmlTypeName(type) +
                    " (supported: F32, F16, BF16, Q8_0, Q4_0, Q4_K, Q6_K)");
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
            dequantQ4_K(s, dst, n);
            break;
        case GgmlType::Q6_K:
            dequantQ6_K(s, dst, n);
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
