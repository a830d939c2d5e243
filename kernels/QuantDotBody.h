// The row dot products of QuantDot.h, written once and included by each instruction
// set's translation unit inside its own anonymous namespace, after it defines V:
//   F, N                          a float vector of N lanes (8 or 16) for F16/BF16/F32 rows:
//   zero(), load, add, fma, hsum, f16(p), bf16(p)
//   dot(u, s)                     __m256i of 8 int32: each the sum of 4 products of
//                                 unsigned bytes u and signed bytes s (maddubs + madd,
//                                 or VNNI's vpdpbusd)
// The integer kernels use AVX2's 256-bit forms, which every set here has.
// No standard library here: what these units emit must not be shared with code
// compiled for another instruction set.

inline uint16_t loadU16(const uint8_t* p) { return static_cast<uint16_t>(p[0] | (p[1] << 8)); }
inline float halfToFloat(const uint8_t* p) { return _cvtsh_ss(loadU16(p)); }
inline __m256i load256(const void* p) { return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)); }
inline __m256 cvt(__m256i v) { return _mm256_cvtepi32_ps(v); }
inline float hsum8(__m256 a) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(a), _mm256_extractf128_ps(a, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}
inline __m256i srl16(__m256i v, int n) { return _mm256_srl_epi16(v, _mm_cvtsi32_si128(n)); }
// Rows are streamed once per token: ask for the bytes `Ahead` beyond the block in
// hand (the next rows, past a row's end) into cache level `Hint`, so the loads do not
// wait on memory. The best distance depends on how many instructions a format spends
// per byte; each format's was measured on decode (kvlens bench, README).
template <int Ahead, int Hint>
inline void prefetch(const uint8_t* blk, int bytes) {
    for (int o = 0; o < bytes; o += 64)
        _mm_prefetch(reinterpret_cast<const char*>(blk + Ahead + o), static_cast<_mm_hint>(Hint));
}
constexpr int kHalfAhead = 16384, kHalfHint = _MM_HINT_T2;
constexpr int kQ8Ahead = 3072, kQ8Hint = _MM_HINT_T0;
constexpr int kQ4Ahead = 8192, kQ4Hint = _MM_HINT_T2;
constexpr int kKAhead = 2048, kKHint = _MM_HINT_T0;

template <class V>
float dotF32(const uint8_t* row, const QuantX& xq, int64_t n) {
    const float* w = reinterpret_cast<const float*>(row);
    const float* x = xq.x;
    typename V::F a0 = V::zero(), a1 = V::zero();
    int64_t i = 0;
    for (; i + 2 * V::N <= n; i += 2 * V::N) {
        a0 = V::fma(V::load(w + i), V::load(x + i), a0);
        a1 = V::fma(V::load(w + i + V::N), V::load(x + i + V::N), a1);
    }
    for (; i + V::N <= n; i += V::N) a0 = V::fma(V::load(w + i), V::load(x + i), a0);
    float s = V::hsum(V::add(a0, a1));
    for (; i < n; ++i) s += w[i] * x[i];
    return s;
}

template <class V, bool Bf16>
float dotHalf(const uint8_t* row, const QuantX& xq, int64_t n) {
    const uint16_t* w = reinterpret_cast<const uint16_t*>(row);
    const float* x = xq.x;
    typename V::F a0 = V::zero(), a1 = V::zero();
    int64_t i = 0;
    for (; i + 2 * V::N <= n; i += 2 * V::N) {
        if (i % 32 == 0) prefetch<kHalfAhead, kHalfHint>(reinterpret_cast<const uint8_t*>(w + i), 64);
        a0 = V::fma(Bf16 ? V::bf16(w + i) : V::f16(w + i), V::load(x + i), a0);
        a1 = V::fma(Bf16 ? V::bf16(w + i + V::N) : V::f16(w + i + V::N), V::load(x + i + V::N), a1);
    }
    for (; i + V::N <= n; i += V::N) a0 = V::fma(Bf16 ? V::bf16(w + i) : V::f16(w + i), V::load(x + i), a0);
    float s = V::hsum(V::add(a0, a1));
    for (; i < n; ++i) {
        float f;
        if (Bf16) {
            const uint32_t bits = static_cast<uint32_t>(w[i]) << 16;
            __builtin_memcpy(&f, &bits, 4);
        } else {
            f = _cvtsh_ss(w[i]);
        }
        s += f * x[i];
    }
    return s;
}

// Q8_0: signed weights; vpmaddubsw wants the unsigned operand first, so |w| meets
// x with w's sign.
template <class V>
inline __m256 q8_0Block(const uint8_t* blk, const QuantX& xq, int64_t b, __m256 acc) {
    const __m256i w = load256(blk + 2);
    const __m256i x = load256(xq.q + 32 * b);
    const __m256i s = V::dot(_mm256_abs_epi8(w), _mm256_sign_epi8(x, w));
    return _mm256_fmadd_ps(cvt(s), _mm256_set1_ps(halfToFloat(blk) * xq.d[b]), acc);
}

template <class V>
float dotQ8_0(const uint8_t* row, const QuantX& xq, int64_t n) {
    __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();  // two chains
    const int64_t blocks = n / 32;
    int64_t b = 0;
    for (; b + 1 < blocks; b += 2) {
        const uint8_t* blk = row + 34 * b;
        prefetch<kQ8Ahead, kQ8Hint>(blk, 64);  // one line per 68 bytes: the stream's next lines, about
        acc0 = q8_0Block<V>(blk, xq, b, acc0);
        acc1 = q8_0Block<V>(blk + 34, xq, b + 1, acc1);
    }
    if (b < blocks) acc0 = q8_0Block<V>(row + 34 * b, xq, b, acc0);
    return hsum8(_mm256_add_ps(acc0, acc1));
}

// Q4_0: d (q - 8): the nibbles less 8 as signed bytes, then as Q8_0 (|w| meets x with
// w's sign); two blocks in flight, no scalar chain across blocks.
template <class V>
inline __m256 q4_0Block(const uint8_t* blk, const QuantX& xq, int64_t b, __m256 acc) {
    const __m128i m4 = _mm_set1_epi8(0x0F);
    const __m128i q = _mm_loadu_si128(reinterpret_cast<const __m128i*>(blk + 2));
    const __m256i w = _mm256_sub_epi8(
        _mm256_set_m128i(_mm_and_si128(_mm_srli_epi16(q, 4), m4), _mm_and_si128(q, m4)), _mm256_set1_epi8(8));
    const __m256i s = V::dot(_mm256_abs_epi8(w), _mm256_sign_epi8(load256(xq.q + 32 * b), w));
    return _mm256_fmadd_ps(cvt(s), _mm256_set1_ps(halfToFloat(blk) * xq.d[b]), acc);
}

template <class V>
float dotQ4_0(const uint8_t* row, const QuantX& xq, int64_t n) {
    __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
    const int64_t blocks = n / 32;
    int64_t b = 0;
    for (; b + 1 < blocks; b += 2) {
        const uint8_t* blk = row + 18 * b;
        if (b % 4 == 0) prefetch<kQ4Ahead, kQ4Hint>(blk, 72);
        acc0 = q4_0Block<V>(blk, xq, b, acc0);
        acc1 = q4_0Block<V>(blk + 18, xq, b + 1, acc1);
    }
    if (b < blocks) acc0 = q4_0Block<V>(row + 18 * b, xq, b, acc0);
    return hsum8(_mm256_add_ps(acc0, acc1));
}

// The 8 six-bit scales and mins of a Q4_K/Q5_K super-block (get_scale_min_k4, see
// engine/gguf/Dequantize.cpp).
inline void scalesMinsK4(const uint8_t* q, int16_t* sc, int16_t* m) {
    for (int j = 0; j < 4; ++j) {
        sc[j] = static_cast<int16_t>(q[j] & 63);
        m[j] = static_cast<int16_t>(q[j + 4] & 63);
    }
    for (int j = 4; j < 8; ++j) {
        sc[j] = static_cast<int16_t>((q[j + 4] & 0x0F) | ((q[j - 4] >> 6) << 4));
        m[j] = static_cast<int16_t>((q[j + 4] >> 4) | ((q[j] >> 6) << 4));
    }
}

// Unsigned weight bytes u times x's signed bytes s, pairs of products times 16-bit
// scales: 8 int32 lanes (vpmaddubsw, then vpmaddwd with the scales).
inline __m256i scaledDot(__m256i u, __m256i s, __m256i scales16) {
    return _mm256_madd_epi16(_mm256_maddubs_epi16(u, s), scales16);
}

// Q4_K and Q5_K: sum over sub-blocks j of d sc_j (q . x) - dmin m_j sum(x); a
// super-block's scaled integer products add up in int32 before one fp32 multiply.
template <class V, bool FifthBit>
float dotQ4_5_K(const uint8_t* row, const QuantX& xq, int64_t n) {
    constexpr int64_t kBytes = FifthBit ? 176 : 144;
    const __m256i m4 = _mm256_set1_epi8(0x0F), one = _mm256_set1_epi8(1);
    __m256 acc = _mm256_setzero_ps();
    float mins = 0.0f;
    for (int64_t b = 0; b < n / 256; ++b) {
        const uint8_t* blk = row + kBytes * b;
        prefetch<kKAhead, kKHint>(blk, static_cast<int>(kBytes));
        const float dx = xq.dK[b];
        const float d = halfToFloat(blk) * dx;
        const float dmin = halfToFloat(blk + 2) * dx;
        int16_t sc[8], m[8];
        scalesMinsK4(blk + 4, sc, m);
        const __m256i hb = FifthBit ? load256(blk + 16) : _mm256_setzero_si256();
        const uint8_t* q = blk + (FifthBit ? 48 : 16);
        const int8_t* y = xq.qK + 256 * b;
        const int32_t* ys = xq.qKsum16 + 16 * b;
        __m256i sumi = _mm256_setzero_si256();
        int32_t minSum = 0;
        for (int c = 0; c < 4; ++c) {
            const __m256i bytes = load256(q + 32 * c);
            __m256i lo = _mm256_and_si256(bytes, m4);
            __m256i hi = _mm256_and_si256(_mm256_srli_epi16(bytes, 4), m4);
            if (FifthBit) {
                lo = _mm256_or_si256(lo, _mm256_slli_epi16(_mm256_and_si256(srl16(hb, 2 * c), one), 4));
                hi = _mm256_or_si256(hi, _mm256_slli_epi16(_mm256_and_si256(srl16(hb, 2 * c + 1), one), 4));
            }
            sumi = _mm256_add_epi32(sumi, scaledDot(lo, load256(y + 64 * c), _mm256_set1_epi16(sc[2 * c])));
            sumi = _mm256_add_epi32(sumi, scaledDot(hi, load256(y + 64 * c + 32), _mm256_set1_epi16(sc[2 * c + 1])));
            minSum += m[2 * c] * (ys[4 * c] + ys[4 * c + 1]) + m[2 * c + 1] * (ys[4 * c + 2] + ys[4 * c + 3]);
        }
        acc = _mm256_fmadd_ps(cvt(sumi), _mm256_set1_ps(d), acc);
        mins += dmin * static_cast<float>(minSum);
    }
    return hsum8(acc) - mins;
}

// Q6_K: d sc (q - 32) with q of 6 bits in 0..63 and a scale per 16 weights (in a
// 32-byte vector, 16-bit lanes 0-7 hold the first 16 weights' pairs).
template <class V>
float dotQ6_K(const uint8_t* row, const QuantX& xq, int64_t n) {
    const __m256i m4 = _mm256_set1_epi8(0x0F), m3 = _mm256_set1_epi8(3);
    __m256 acc = _mm256_setzero_ps();
    float offset = 0.0f;
    for (int64_t b = 0; b < n / 256; ++b) {
        const uint8_t* blk = row + 210 * b;
        prefetch<kKAhead, kKHint>(blk, 210);
        const float d = halfToFloat(blk + 208) * xq.dK[b];
        const int8_t* scales = reinterpret_cast<const int8_t*>(blk + 192);
        const int32_t* ys = xq.qKsum16 + 16 * b;
        __m256i sumi = _mm256_setzero_si256();
        int32_t offsetSum = 0;
        for (int h = 0; h < 2; ++h) {
            const __m256i A = load256(blk + 64 * h), B = load256(blk + 64 * h + 32);
            const __m256i H = load256(blk + 128 + 32 * h);
            const int8_t* sc = scales + 8 * h;
            const int8_t* y = xq.qK + 256 * b + 128 * h;
            const __m256i q[4] = {
                _mm256_or_si256(_mm256_and_si256(A, m4), _mm256_slli_epi16(_mm256_and_si256(H, m3), 4)),
                _mm256_or_si256(_mm256_and_si256(B, m4),
                                _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(H, 2), m3), 4)),
                _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(A, 4), m4),
                                _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(H, 4), m3), 4)),
                _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(B, 4), m4),
                                _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(H, 6), m3), 4))};
            for (int k = 0; k < 4; ++k) {
                const __m256i s16 = _mm256_set_m128i(_mm_set1_epi16(sc[2 * k + 1]), _mm_set1_epi16(sc[2 * k]));
                sumi = _mm256_add_epi32(sumi, scaledDot(q[k], load256(y + 32 * k), s16));
                const int g = 8 * h + 2 * k;  // x's group of 16 within the super-block
                offsetSum += sc[2 * k] * ys[g] + sc[2 * k + 1] * ys[g + 1];
            }
        }
        acc = _mm256_fmadd_ps(cvt(sumi), _mm256_set1_ps(d), acc);
        offset += 32.0f * d * static_cast<float>(offsetSum);
    }
    return hsum8(acc) - offset;
}

template <class V>
constexpr QuantDotTable tableFor(const char* isa) {
    return QuantDotTable{isa,
                         &dotHalf<V, false>,
                         &dotHalf<V, true>,
                         &dotQ8_0<V>,
                         &dotQ4_0<V>,
                         &dotQ4_5_K<V, false>,
                         &dotQ4_5_K<V, true>,
                         &dotQ6_K<V>,
                         &dotF32<V>};
}
