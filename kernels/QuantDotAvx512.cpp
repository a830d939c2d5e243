// QuantDot's kernels for AVX-512 (F, BW, DQ, VL): 16-lane fp32 for F16, BF16 and F32 rows; the integer
// rows in 512-bit registers (QuantDotBody512.h), their products by vpmaddubsw + vpmaddwd.
// Compiled with those instruction sets (kernels/CMakeLists.txt); called only where
// CpuFeatures has them.
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

#include "kernels/QuantDotLanes512.h"

#include "kernels/QuantDotBody512.h"

struct V : Lanes512 {
    static __m256i dot(__m256i u, __m256i s) { return _mm256_madd_epi16(_mm256_maddubs_epi16(u, s), _mm256_set1_epi16(1)); }
    static __m256i scaledAdd(__m256i acc, __m256i u, __m256i s, __m256i scales16) {
        return _mm256_add_epi32(acc, _mm256_madd_epi16(_mm256_maddubs_epi16(u, s), scales16));
    }
    static __m512i dot(__m512i u, __m512i s) { return _mm512_madd_epi16(_mm512_maddubs_epi16(u, s), _mm512_set1_epi16(1)); }
    static __m512i scaledAdd(__m512i acc, __m512i u, __m512i s, __m512i scales16) {
        return _mm512_add_epi32(acc, _mm512_madd_epi16(_mm512_maddubs_epi16(u, s), scales16));
    }
};

constexpr QuantDotTable kTable = tableFor512<V>("avx512");

}  // namespace

const QuantDotTable* quantDotAvx512() { return &kTable; }

}  // namespace kvlens::kernels
#else
namespace kvlens::kernels {
const QuantDotTable* quantDotAvx512() { return nullptr; }
}  // namespace kvlens::kernels
#endif
