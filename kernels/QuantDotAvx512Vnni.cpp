// QuantDot's kernels for AVX-512 with VNNI: as QuantDotAvx512.cpp, the integer products in one
// vpdpbusd each, and a K-quant's scaled products in one vpdpwssd. Compiled with those
// instruction sets (kernels/CMakeLists.txt); called only where CpuFeatures has them.
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
    static __m256i dot(__m256i u, __m256i s) { return _mm256_dpbusd_epi32(_mm256_setzero_si256(), u, s); }
    static __m256i scaledAdd(__m256i acc, __m256i u, __m256i s, __m256i scales16) {
        return _mm256_dpwssd_epi32(acc, _mm256_maddubs_epi16(u, s), scales16);
    }
    static __m512i dot(__m512i u, __m512i s) { return _mm512_dpbusd_epi32(_mm512_setzero_si512(), u, s); }
    static __m512i scaledAdd(__m512i acc, __m512i u, __m512i s, __m512i scales16) {
        return _mm512_dpwssd_epi32(acc, _mm512_maddubs_epi16(u, s), scales16);
    }
};

constexpr QuantDotTable kTable = tableFor512<V>("avx512vnni");

}  // namespace

const QuantDotTable* quantDotAvx512Vnni() { return &kTable; }

}  // namespace kvlens::kernels
#else
namespace kvlens::kernels {
const QuantDotTable* quantDotAvx512Vnni() { return nullptr; }
}  // namespace kvlens::kernels
#endif
