// The 16-lane fp32 operations QuantDotBody.h asks of V, for the two AVX-512 units
// (QuantDotAvx512.cpp, QuantDotAvx512Vnni.cpp), which differ only in V::dot.
// Included inside each unit's anonymous namespace, after <immintrin.h>.

struct Lanes512 {
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
};
