// The row dot products of QuantDot.h, written once and included by each instruction
// set's translation unit inside its own anonymous namespace, after it defines V:
//   F, N                          a float vector of N lanes (8 or 16) for F16/BF16/F32 rows:
//   zero(), load, add, fma, hsum, f16(p), bf16(p)
//   dot(u, s)                     __m256i of 8 int32: each the sum of 4 products of
//                                 unsigned bytes u and signed bytes s (maddubs + madd,
//                                 or VNNI's vpdpbusd)
//   scaledAdd(acc, u, s, scales16) acc plus the pairs of products of u and s times
//                                 16-bit scales, as 8 int32 (maddubs, then madd + add,
//                                 or VNNI's vpdpwssd)
//   dot2(u1, s1, u2, s2)          dot(u1, s1) + dot(u2, s2) for u1, u2 under 16 (the two
//                                 maddubs add up in 16 bits; AVX2's table only)
// The integer kernels use AVX2's 256-bit forms, which every set here has.
// No standard library here: what these units emit must not be shared with code
// compiled for another instruction set.

inline uint16_t loadU16(const uint8_t* p) { return static_cast<uint16_t>(p[0] | (p[1] << 8)); }
inline float halfToFloat(const uint8_t* p) { return _cvtsh_ss(loadU16(p)); }
inline __m256i load256(const void* p) { return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)); }
inline __m256 cvt(__m256i v) { return _mm256_cvtepi32_ps(v); }
inline float hsum4(__m128 a) {
    const __m128 s = _mm_add_ps(a, _mm_movehl_ps(a, a));
    return _mm_cvtss_f32(_mm_add_ss(s, _mm_movehdup_ps(s)));
}
inline float hsum8(__m256 a) { return hsum4(_mm_add_ps(_mm256_castps256_ps128(a), _mm256_extractf128_ps(a, 1))); }
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

// Four accumulator chains: one FMA chain waits its latency (4 cycles) between steps,
// so two chains capped an F16 row at 8 bytes a cycle (AVX2), under the memory's rate.
template <class V>
float dotF32(const uint8_t* row, const QuantX& xq, int64_t n) {
    const float* w = reinterpret_cast<const float*>(row);
    const float* x = xq.x;
    typename V::F a0 = V::zero(), a1 = V::zero(), a2 = V::zero(), a3 = V::zero();
    int64_t i = 0;
    for (; i + 4 * V::N <= n; i += 4 * V::N) {
        a0 = V::fma(V::load(w + i), V::load(x + i), a0);
        a1 = V::fma(V::load(w + i + V::N), V::load(x + i + V::N), a1);
        a2 = V::fma(V::load(w + i + 2 * V::N), V::load(x + i + 2 * V::N), a2);
        a3 = V::fma(V::load(w + i + 3 * V::N), V::load(x + i + 3 * V::N), a3);
    }
    for (; i + V::N <= n; i += V::N) a0 = V::fma(V::load(w + i), V::load(x + i), a0);
    float s = V::hsum(V::add(V::add(a0, a1), V::add(a2, a3)));
    for (; i < n; ++i) s += w[i] * x[i];
    return s;
}

template <class V, bool Bf16>
inline typename V::F halfAt(const uint16_t* w) {
    return Bf16 ? V::bf16(w) : V::f16(w);
}

template <class V, bool Bf16>
float dotHalf(const uint8_t* row, const QuantX& xq, int64_t n) {
    const uint16_t* w = reinterpret_cast<const uint16_t*>(row);
    const float* x = xq.x;
    typename V::F a0 = V::zero(), a1 = V::zero(), a2 = V::zero(), a3 = V::zero();
    int64_t i = 0;
    for (; i + 4 * V::N <= n; i += 4 * V::N) {
        prefetch<kHalfAhead, kHalfHint>(reinterpret_cast<const uint8_t*>(w + i), 8 * V::N);  // this step's lines
        a0 = V::fma(halfAt<V, Bf16>(w + i), V::load(x + i), a0);
        a1 = V::fma(halfAt<V, Bf16>(w + i + V::N), V::load(x + i + V::N), a1);
        a2 = V::fma(halfAt<V, Bf16>(w + i + 2 * V::N), V::load(x + i + 2 * V::N), a2);
        a3 = V::fma(halfAt<V, Bf16>(w + i + 3 * V::N), V::load(x + i + 3 * V::N), a3);
    }
    for (; i + V::N <= n; i += V::N) a0 = V::fma(halfAt<V, Bf16>(w + i), V::load(x + i), a0);
    float s = V::hsum(V::add(V::add(a0, a1), V::add(a2, a3)));
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

// Q4_0: d (q - 8) . x as d (q . x) - 8 d sum(x): the nibbles 0..15 meet x as unsigned
// bytes (no sign juggling), and 8 dx sum(x) of each block, computed once per product
// (QuantX::off32), gives the offset. The 16 bytes go to both halves in one load;
// shifting the high half's 64-bit lanes by 4 and masking gives [low nibbles | high nibbles].
inline __m256i q4_0Nibbles(const uint8_t* blk) {
    const __m256i q = _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(blk + 2)));
    return _mm256_and_si256(_mm256_srlv_epi64(q, _mm256_set_epi64x(4, 4, 0, 0)), _mm256_set1_epi8(0x0F));
}

// One block: acc gets d dx (q . x) in 8 lanes; the offset d (8 dx sum(x)) is returned.
template <class V>
inline float q4_0Block(const uint8_t* blk, const QuantX& xq, int64_t b, __m256& acc) {
    const float d = halfToFloat(blk);
    acc = _mm256_fmadd_ps(cvt(V::dot(q4_0Nibbles(blk), load256(xq.q + 32 * b))), _mm256_set1_ps(d * xq.d[b]), acc);
    return d * xq.off32[b];
}

// Eight blocks' fp16 scales (blocks b..b+7 from blk) as fp32, gathered in two general
// registers (no vector shuffles).
inline __m256 q4_0Scales8(const uint8_t* blk) {
    auto four = [](const uint8_t* p) {
        return static_cast<long long>(static_cast<uint64_t>(loadU16(p)) | static_cast<uint64_t>(loadU16(p + 18)) << 16 |
                                      static_cast<uint64_t>(loadU16(p + 36)) << 32 | static_cast<uint64_t>(loadU16(p + 54)) << 48);
    };
    return _mm256_cvtph_ps(_mm_set_epi64x(four(blk + 72), four(blk)));
}

// Two blocks' products with x in pair order (QuantX::qPairs): one load brings b's 16
// nibble bytes into the low lane and b+1's into the high one, so the low nibbles meet
// [x_b 0-15 | x_b+1 0-15] and the high ones [x_b 16-31 | x_b+1 16-31]. Result: [b's
// four partial sums | b+1's], 8 int32.
template <class V>
inline __m256i q4_0Pair(const uint8_t* blk, const int8_t* xp) {
    const __m256i q = _mm256_loadu2_m128i(reinterpret_cast<const __m128i*>(blk + 20), reinterpret_cast<const __m128i*>(blk + 2));
    const __m256i m4 = _mm256_set1_epi8(0x0F);
    return V::dot2(_mm256_and_si256(q, m4), load256(xp), _mm256_and_si256(_mm256_srli_epi16(q, 4), m4), load256(xp + 32));
}

// Eight blocks a step: each pair's sums lie one block a 128-bit lane, so two rounds of
// vphaddd leave one complete sum a lane ([b0 b2 b4 b6 | b1 b3 b5 b7], put in order by
// one vpermd), and one conversion and one FMA serve eight blocks.
template <class V>
float dotQ4_0(const uint8_t* row, const QuantX& xq, int64_t n) {
    __m256 acc = _mm256_setzero_ps(), offset = _mm256_setzero_ps(), tail = _mm256_setzero_ps();
    const __m256i inOrder = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
    const int64_t blocks = n / 32;
    int64_t b = 0;
    for (; b + 7 < blocks; b += 8) {
        const uint8_t* blk = row + 18 * b;
        prefetch<kQ4Ahead, kQ4Hint>(blk, 144);
        const int8_t* xp = xq.qPairs + 32 * b;
        const __m256i h0 = _mm256_hadd_epi32(q4_0Pair<V>(blk, xp), q4_0Pair<V>(blk + 36, xp + 64));
        const __m256i h1 = _mm256_hadd_epi32(q4_0Pair<V>(blk + 72, xp + 128), q4_0Pair<V>(blk + 108, xp + 192));
        const __m256i sums = _mm256_permutevar8x32_epi32(_mm256_hadd_epi32(h0, h1), inOrder);
        const __m256 w8 = q4_0Scales8(blk);
        offset = _mm256_fmadd_ps(w8, _mm256_loadu_ps(xq.off32 + b), offset);
        acc = _mm256_fmadd_ps(cvt(sums), _mm256_mul_ps(w8, _mm256_loadu_ps(xq.d + b)), acc);
    }
    float tailOffset = 0.0f;
    for (; b < blocks; ++b) tailOffset += q4_0Block<V>(row + 18 * b, xq, b, tail);
    return hsum8(_mm256_sub_ps(_mm256_add_ps(acc, tail), offset)) - tailOffset;  // one horizontal sum
}

// A Q4_K/Q5_K super-block's first 16 bytes: d and dmin (fp16), then 12 bytes holding
// 8 six-bit scales and 8 six-bit mins (get_scale_min_k4, see engine/gguf/Dequantize.cpp).
// Unpacked in vector lanes: bytes 0-7 of the result are the scales, bytes 8-15 the
// mins; `dd` gets d x dx and dmin x dx in lanes 0 and 1.
inline __m128i scalesMinsK4(const uint8_t* blk, float dx, __m128* dd) {
    const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(blk));  // lanes: d|dmin, w0, w1, w2
    *dd = _mm_mul_ps(_mm_cvtph_ps(v), _mm_set1_ps(dx));
    const __m128i a = _mm_shuffle_epi32(v, _MM_SHUFFLE(3, 2, 3, 1));  // w0, w2, w1, w2
    const __m128i b = _mm_shuffle_epi32(v, _MM_SHUFFLE(2, 2, 1, 1));  // w0, w0, w1, w1
    // scales 0-3: w0 & 63; 4-7: w2's low nibbles, w0's top 2 bits above them;
    // mins 0-3: w1 & 63; 4-7: w2's high nibbles, w1's top 2 bits above them.
    const __m128i low = _mm_and_si128(_mm_srlv_epi32(a, _mm_set_epi32(4, 0, 0, 0)),
                                      _mm_set_epi32(0x0F0F0F0F, 0x3F3F3F3F, 0x0F0F0F0F, 0x3F3F3F3F));
    const __m128i top = _mm_and_si128(_mm_srli_epi32(b, 2), _mm_set_epi32(0x30303030, 0, 0x30303030, 0));
    return _mm_or_si128(low, top);
}

// A shuffle that puts 16-bit lane `lo` of each 128-bit half into every lane of the
// low half and lane `hi` into every lane of the high half.
inline __m256i lanePick16(int lo, int hi) {
    return _mm256_set_m128i(_mm_set1_epi16(static_cast<short>((2 * hi) | ((2 * hi + 1) << 8))),
                            _mm_set1_epi16(static_cast<short>((2 * lo) | ((2 * lo + 1) << 8))));
}

// The sums of x over each 32 of a super-block (8 int32, in order) from its 16 sums over 16.
inline __m256i sums32(const int32_t* ys) {
    const __m256i h = _mm256_hadd_epi32(load256(ys), load256(ys + 8));  // 0 1 4 5 | 2 3 6 7
    return _mm256_permute4x64_epi64(h, 0xD8);
}

// A Q4_K/Q5_K super-block's mins (bytes 8-15 of scalesMinsK4's result) times x's sums
// over its 8 sub-blocks: 8 int32.
inline __m256i minsTimesSums(__m128i scalesMins, const int32_t* ys) {
    return _mm256_mullo_epi32(sums32(ys), _mm256_cvtepu8_epi32(_mm_srli_si128(scalesMins, 8)));
}

// A Q6_K super-block's 16 scales times x's 16 sums over 16: 8 int32 (the offset of 32).
inline __m256i scalesTimesSums6(__m128i scales, const int32_t* ys) {
    return _mm256_add_epi32(_mm256_mullo_epi32(_mm256_cvtepi8_epi32(scales), load256(ys)),
                            _mm256_mullo_epi32(_mm256_cvtepi8_epi32(_mm_srli_si128(scales, 8)), load256(ys + 8)));
}

// Q4_K and Q5_K: sum over sub-blocks j of d sc_j (q . x) - dmin m_j sum(x). A
// super-block's scaled integer products add up in int32 before one fp32 multiply;
// the scales are unpacked and broadcast in vector registers and the mins' term is
// one vector product with x's sums over 32, as vectors (not a scalar per sub-block).
template <class V, bool FifthBit>
float dotQ4_5_K(const uint8_t* row, const QuantX& xq, int64_t n) {
    constexpr int64_t kBytes = FifthBit ? 176 : 144;
    const __m256i m4 = _mm256_set1_epi8(0x0F), bit4 = _mm256_set1_epi8(0x10);
    __m256 acc = _mm256_setzero_ps(), accMins = _mm256_setzero_ps();
    for (int64_t b = 0; b < n / 256; ++b) {
        const uint8_t* blk = row + kBytes * b;
        prefetch<kKAhead, kKHint>(blk, static_cast<int>(kBytes));
        __m128 dd;
        const __m128i scm = scalesMinsK4(blk, xq.dK[b], &dd);
        const __m256i scales = _mm256_broadcastsi128_si256(_mm_cvtepu8_epi16(scm));
        const __m256i mins = minsTimesSums(scm, xq.qKsum16 + 16 * b);
        accMins = _mm256_fmadd_ps(cvt(mins), _mm256_broadcastss_ps(_mm_movehdup_ps(dd)), accMins);
        const __m256i hb = FifthBit ? load256(blk + 16) : _mm256_setzero_si256();
        const uint8_t* q = blk + (FifthBit ? 48 : 16);
        const int8_t* y = xq.qK + 256 * b;
        __m256i sumLo = _mm256_setzero_si256(), sumHi = _mm256_setzero_si256();
        #pragma GCC unroll 4
        for (int c = 0; c < 4; ++c) {
            const __m256i bytes = load256(q + 32 * c);
            __m256i lo = _mm256_and_si256(bytes, m4);
            __m256i hi = _mm256_and_si256(_mm256_srli_epi16(bytes, 4), m4);
            if (FifthBit) {  // bit 2c of qh is the fifth bit of sub-block 2c, bit 2c+1 of 2c+1
                lo = _mm256_or_si256(lo, _mm256_and_si256(c < 2 ? _mm256_slli_epi16(hb, 4 - 2 * c) : srl16(hb, 2 * c - 4), bit4));
                hi = _mm256_or_si256(hi, _mm256_and_si256(c < 2 ? _mm256_slli_epi16(hb, 3 - 2 * c) : srl16(hb, 2 * c - 3), bit4));
            }
            sumLo = V::scaledAdd(sumLo, lo, load256(y + 64 * c), _mm256_shuffle_epi8(scales, lanePick16(2 * c, 2 * c)));
            sumHi = V::scaledAdd(sumHi, hi, load256(y + 64 * c + 32),
                                 _mm256_shuffle_epi8(scales, lanePick16(2 * c + 1, 2 * c + 1)));
        }
        acc = _mm256_fmadd_ps(cvt(_mm256_add_epi32(sumLo, sumHi)), _mm256_broadcastss_ps(dd), acc);
    }
    return hsum8(acc) - hsum8(accMins);
}

// Q6_K: d sc (q - 32) with q of 6 bits in 0..63 and a scale per 16 weights (in a
// 32-byte vector, 16-bit lanes 0-7 hold the first 16 weights' pairs). The -32 term is
// one vector product of the 16 scales with x's sums over 16.
template <class V>
float dotQ6_K(const uint8_t* row, const QuantX& xq, int64_t n) {
    const __m256i m4 = _mm256_set1_epi8(0x0F), m3 = _mm256_set1_epi8(3);
    __m256 acc = _mm256_setzero_ps(), accOffset = _mm256_setzero_ps();
    for (int64_t b = 0; b < n / 256; ++b) {
        const uint8_t* blk = row + 210 * b;
        prefetch<kKAhead, kKHint>(blk, 210);
        const float d = halfToFloat(blk + 208) * xq.dK[b];
        const __m128i sc8 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(blk + 192));
        const __m256i offset = scalesTimesSums6(sc8, xq.qKsum16 + 16 * b);
        accOffset = _mm256_fmadd_ps(cvt(offset), _mm256_set1_ps(32.0f * d), accOffset);
        const __m256i sc16 = _mm256_cvtepi8_epi16(sc8);
        __m256i sum0 = _mm256_setzero_si256(), sum1 = _mm256_setzero_si256();
        #pragma GCC unroll 2
        for (int h = 0; h < 2; ++h) {
            const __m256i A = load256(blk + 64 * h), B = load256(blk + 64 * h + 32);
            const __m256i H = load256(blk + 128 + 32 * h);
            const __m256i sc = h == 0 ? _mm256_permute2x128_si256(sc16, sc16, 0x00) : _mm256_permute2x128_si256(sc16, sc16, 0x11);
            const int8_t* y = xq.qK + 256 * b + 128 * h;
            const __m256i q0 = _mm256_or_si256(_mm256_and_si256(A, m4), _mm256_slli_epi16(_mm256_and_si256(H, m3), 4));
            const __m256i q1 = _mm256_or_si256(_mm256_and_si256(B, m4),
                                               _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(H, 2), m3), 4));
            const __m256i q2 = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(A, 4), m4),
                                               _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(H, 4), m3), 4));
            const __m256i q3 = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(B, 4), m4),
                                               _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(H, 6), m3), 4));
            // Chunk k's 32 weights take scales 2k (first 16) and 2k + 1 of this half's 8.
            sum0 = V::scaledAdd(sum0, q0, load256(y), _mm256_shuffle_epi8(sc, lanePick16(0, 1)));
            sum1 = V::scaledAdd(sum1, q1, load256(y + 32), _mm256_shuffle_epi8(sc, lanePick16(2, 3)));
            sum0 = V::scaledAdd(sum0, q2, load256(y + 64), _mm256_shuffle_epi8(sc, lanePick16(4, 5)));
            sum1 = V::scaledAdd(sum1, q3, load256(y + 96), _mm256_shuffle_epi8(sc, lanePick16(6, 7)));
        }
        acc = _mm256_fmadd_ps(cvt(_mm256_add_epi32(sum0, sum1)), _mm256_set1_ps(d), acc);
    }
    return hsum8(acc) - hsum8(accOffset);
}

// QuantMatrix::quantizeX (the plain C++ reference) in registers, with the same
// operation on every element, so q, d and the sums equal it bit for bit
// (QuantMatrixTest): |x|'s maximum (vmaxps keeps the running maximum where |x| is NaN,
// as std::max does), d = amax / 127, x times 127 / amax rounded to nearest even by
// vcvtps2dq (std::nearbyint in the default rounding mode), clamped to +-127. A
// decode step quantises every product's input on the calling thread while the other
// threads wait: the reference's call to nearbyintf per element was 3-4% of a Q4_0
// decode step on two cores.
inline void quantizeBlocks(const float* x, int64_t n, int64_t block, int8_t* q, float* d, int32_t* qsum16) {
    const __m256 signBit = _mm256_set1_ps(-0.0f);
    const __m256i lo = _mm256_set1_epi32(-127), hi = _mm256_set1_epi32(127);
    const __m256i inOrder = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
    for (int64_t b = 0; b < n / block; ++b) {
        const float* xb = x + block * b;
        __m256 m8 = _mm256_setzero_ps();
        for (int64_t i = 0; i < block; i += 8) m8 = _mm256_max_ps(_mm256_andnot_ps(signBit, _mm256_loadu_ps(xb + i)), m8);
        __m128 m = _mm_max_ps(_mm256_castps256_ps128(m8), _mm256_extractf128_ps(m8, 1));
        m = _mm_max_ps(m, _mm_movehl_ps(m, m));
        const float amax = _mm_cvtss_f32(_mm_max_ss(m, _mm_movehdup_ps(m)));
        d[b] = amax / 127.0f;
        const __m256 inv = _mm256_set1_ps(amax > 0.0f ? 127.0f / amax : 0.0f);
        for (int64_t i = 0; i < block; i += 32) {
            auto eight = [&](int k) {
                const __m256i v = _mm256_cvtps_epi32(_mm256_mul_ps(_mm256_loadu_ps(xb + i + 8 * k), inv));
                return _mm256_min_epi32(_mm256_max_epi32(v, lo), hi);
            };
            // Packing interleaves the four 8s by 128-bit lane; vpermd puts them back in order.
            const __m256i p = _mm256_packs_epi16(_mm256_packs_epi32(eight(0), eight(1)), _mm256_packs_epi32(eight(2), eight(3)));
            _mm256_storeu_si256(reinterpret_cast<__m256i*>(q + block * b + i), _mm256_permutevar8x32_epi32(p, inOrder));
        }
    }
    if (qsum16 == nullptr) return;
    // q + 128 as unsigned bytes, summed in 8s by vpsadbw: the sum of 16 is both 8s'
    // less 16 x 128.
    const __m128i flip = _mm_set1_epi8(static_cast<char>(0x80));
    for (int64_t g = 0; g < n / 16; ++g) {
        const __m128i s = _mm_sad_epu8(_mm_xor_si128(_mm_loadu_si128(reinterpret_cast<const __m128i*>(q + 16 * g)), flip),
                                       _mm_setzero_si128());
        qsum16[g] = _mm_cvtsi128_si32(s) + _mm_extract_epi16(s, 4) - 16 * 128;
    }
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
                         &dotF32<V>,
                         &quantizeBlocks};
}
