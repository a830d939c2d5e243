// QuantDot's kernels for AVX-512 (F, BW, DQ, VL): 16-lane fp32 for F16, BF16 and F32 rows; the integer
// products as on AVX2 (vpmaddubsw + vpmaddwd). Compiled with those instruction
// sets (kernels/CMakeLists.txt); called only where CpuFeatures has them.
#include "kernels/QuantDot.h"

#if defined(__x86_64__)
// GCC 12's AVX-512 headers trip these on their own _mm512_undefined_* placeholders
// (GCC bug 105593), at every inlined intrinsic of this file.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

namespace kvlens::kernels {
namespace {

#include "kernels/QuantDotBody.h"

struct V {
    using F = __m512;
    static constexpr int N = 16;
    static F zero() { return _mm512_setzero_ps(); }
    static F load(const float* p) { return _mm512_loadu_ps(p); }
    static F add(F a, F b) { return _mm512_add_ps(a, b); }
    static F fma(F a, F b, F c) { return _mm512_fmadd_ps(a, b, c); }
    static float hsum(F a) { return _mm512_reduce_add_ps(a); }
    static F f16(const uint16_t* p) {
        return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
    }
    static F bf16(const uint16_t* p) {
        return _mm512_castsi512_ps(
            _mm512_slli_epi32(_mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p))), 16));
    }
    static __m256i dot(__m256i u, __m256i s) { return _mm256_madd_epi16(_mm256_maddubs_epi16(u, s), _mm256_set1_epi16(1)); }
};

constexpr QuantDotTable kTable = tableFor<V>("avx512");

}  // namespace

const QuantDotTable* quantDotAvx512() { return &kTable; }

}  // namespace kvlens::kernels
#else
namespace kvlens::kernels {
const QuantDotTable* quantDotAvx512() { return nullptr; }
}  // namespace kvlens::kernels
#endif
