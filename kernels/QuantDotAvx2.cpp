// QuantDot's kernels for AVX2 with FMA and F16C, the baseline: 8-lane fp32 for F16,
// BF16 and F32 rows, vpmaddubsw + vpmaddwd for the integer products. Compiled with
// those instruction sets (kernels/CMakeLists.txt); called only where CpuFeatures has them.
#include "kernels/QuantDot.h"

#if defined(__x86_64__)
#include <immintrin.h>

namespace kvlens::kernels {
namespace {

#include "kernels/QuantDotBody.h"

struct V {
    using F = __m256;
    static constexpr int N = 8;
    static F zero() { return _mm256_setzero_ps(); }
    static F load(const float* p) { return _mm256_loadu_ps(p); }
    static F add(F a, F b) { return _mm256_add_ps(a, b); }
    static F fma(F a, F b, F c) { return _mm256_fmadd_ps(a, b, c); }
    static float hsum(F a) { return hsum8(a); }
    static F f16(const uint16_t* p) { return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))); }
    static F bf16(const uint16_t* p) {
        return _mm256_castsi256_ps(
            _mm256_slli_epi32(_mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))), 16));
    }
    static __m256i dot(__m256i u, __m256i s) {
        return _mm256_madd_epi16(_mm256_maddubs_epi16(u, s), _mm256_set1_epi16(1));
    }
    static __m256i dot2(__m256i u1, __m256i s1, __m256i u2, __m256i s2) {  // |u s + u s| <= 4 x 15 x 127
        return _mm256_madd_epi16(_mm256_add_epi16(_mm256_maddubs_epi16(u1, s1), _mm256_maddubs_epi16(u2, s2)),
                                 _mm256_set1_epi16(1));
    }
    static __m256i scaledAdd(__m256i acc, __m256i u, __m256i s, __m256i scales16) {
        return _mm256_add_epi32(acc, _mm256_madd_epi16(_mm256_maddubs_epi16(u, s), scales16));
    }
};

constexpr QuantDotTable kTable = tableFor<V>("avx2");

}  // namespace

const QuantDotTable* quantDotAvx2() { return &kTable; }

}  // namespace kvlens::kernels
#else
namespace kvlens::kernels {
const QuantDotTable* quantDotAvx2() { return nullptr; }
}  // namespace kvlens::kernels
#endif
