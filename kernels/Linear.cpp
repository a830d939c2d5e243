#include "kernels/Linear.h"

#include <ATen/Parallel.h>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "kernels/CpuFeatures.h"

namespace kvlens::kernels {
namespace {

#if defined(__x86_64__)
// Rows [r0, r1) of y[m][r] = sum_i w[r][i] x[m][i], bf16 in, fp32 accumulate.
// Weight rows are streamed once, four at a time so that the dot-product chains
// are independent; x (M rows, M fixed at compile time) stays in L1.
__attribute__((target("avx512f"))) inline float horizontalSum(__m512 v) {
    alignas(64) float lanes[16];
    _mm512_store_ps(lanes, v);
    float sum = 0.0f;
    for (float lane : lanes) sum += lane;
    return sum;
}

template <int M>
__attribute__((target("avx512f,avx512bw,avx512bf16"))) void gemvBf16Rows(
    const uint16_t* w, const uint16_t* x, float* y, int64_t in, int64_t out, int64_t r0,
    int64_t r1) {
    constexpr int R = 4;
    const int64_t full = in / 32 * 32;
    const __mmask32 tailMask = in % 32 ? ((__mmask32)((1ull << (in % 32)) - 1)) : 0;
    int64_t r = r0;
    for (; r + R <= r1; r += R) {
        __m512 acc[R][M];
        for (int j = 0; j < R; ++j)
            for (int m = 0; m < M; ++m) acc[j][m] = _mm512_setzero_ps();
        for (int64_t i = 0; i < full; i += 32) {
            __m512i xv[M];
            for (int m = 0; m < M; ++m) xv[m] = _mm512_loadu_si512(x + m * in + i);
            for (int j = 0; j < R; ++j) {
                const __m512i wv = _mm512_loadu_si512(w + (r + j) * in + i);
                for (int m = 0; m < M; ++m)
                    acc[j][m] = _mm512_dpbf16_ps(acc[j][m], (__m512bh)wv, (__m512bh)xv[m]);
            }
        }
        if (tailMask) {
            __m512i xv[M];
            for (int m = 0; m < M; ++m) xv[m] = _mm512_maskz_loadu_epi16(tailMask, x + m * in + full);
            for (int j = 0; j < R; ++j) {
                const __m512i wv = _mm512_maskz_loadu_epi16(tailMask, w + (r + j) * in + full);
                for (int m = 0; m < M; ++m)
                    acc[j][m] = _mm512_dpbf16_ps(acc[j][m], (__m512bh)wv, (__m512bh)xv[m]);
            }
        }
        for (int j = 0; j < R; ++j)
            for (int m = 0; m < M; ++m) y[m * out + r + j] = horizontalSum(acc[j][m]);
    }
    for (; r < r1; ++r) {
        __m512 acc[M];
        for (int m = 0; m < M; ++m) acc[m] = _mm512_setzero_ps();
        for (int64_t i = 0; i < full; i += 32) {
            const __m512i wv = _mm512_loadu_si512(w + r * in + i);
            for (int m = 0; m < M; ++m)
                acc[m] = _mm512_dpbf16_ps(acc[m], (__m512bh)wv,
                                          (__m512bh)_mm512_loadu_si512(x + m * in + i));
        }
        if (tailMask) {
            const __m512i wv = _mm512_maskz_loadu_epi16(tailMask, w + r * in + full);
            for (int m = 0; m < M; ++m)
                acc[m] = _mm512_dpbf16_ps(
                    acc[m], (__m512bh)wv,
                    (__m512bh)_mm512_maskz_loadu_epi16(tailMask, x + m * in + full));
        }
        for (int m = 0; m < M; ++m) y[m * out + r] = horizontalSum(acc[m]);
    }
}

void gemvBf16(const uint16_t* w, const uint16_t* x, float* y, int64_t M, int64_t in, int64_t out,
              int64_t r0, int64_t r1) {
    switch (M) {
        case 1: return gemvBf16Rows<1>(w, x, y, in, out, r0, r1);
        case 2: return gemvBf16Rows<2>(w, x, y, in, out, r0, r1);
        case 3: return gemvBf16Rows<3>(w, x, y, in, out, r0, r1);
        default: return gemvBf16Rows<4>(w, x, y, in, out, r0, r1);
    }
}
#endif

bool useBf16Gemv(const at::Tensor& x, const at::Tensor& w) {
#if defined(__x86_64__)
    return x.device().is_cpu() && x.scalar_type() == at::kBFloat16 &&
           w.scalar_type() == at::kBFloat16 && x.dim() == 2 && x.size(0) <= kGemvMaxRows &&
           w.is_contiguous() && CpuFeatures::detect().avx512bf16;
#else
    return false;
#endif
}

}  // namespace

at::Tensor linear(const at::Tensor& x, const at::Tensor& w, const at::Tensor& bias,
                  c10::optional<c10::ScalarType> outType) {
    const c10::ScalarType type = outType.value_or(x.scalar_type());
    if (!useBf16Gemv(x, w)) {
        at::Tensor y = bias.defined() ? at::linear(x, w, bias) : at::linear(x, w);
        return y.scalar_type() == type ? y : y.to(type);
    }
#if defined(__x86_64__)
    const at::Tensor xc = x.contiguous();
    const int64_t M = xc.size(0), in = xc.size(1), out = w.size(0);
    at::Tensor y = at::empty({M, out}, xc.options().dtype(at::kFloat));
    const auto* wp = reinterpret_cast<const uint16_t*>(w.data_ptr<at::BFloat16>());
    const auto* xp = reinterpret_cast<const uint16_t*>(xc.data_ptr<at::BFloat16>());
    float* yp = y.data_ptr<float>();
    // Chunks of rows large enough that thread start-up is noise.
    const int64_t grain = std::max<int64_t>(16, (1 << 18) / std::max<int64_t>(in, 1));
    at::parallel_for(0, out, grain, [&](int64_t r0, int64_t r1) {
        gemvBf16(wp, xp, yp, M, in, out, r0, r1);
    });
    if (bias.defined()) y.add_(bias);
    return type == at::kFloat ? y : y.to(type);
#else
    return {};
#endif
}

at::Tensor linear(const at::Tensor& x, const Weight& w, const at::Tensor& bias,
                  c10::optional<c10::ScalarType> outType) {
    if (!w.quantised()) return linear(x, w.dense(), bias, outType);
    const QuantMatrix& q = w.quant();
    const c10::ScalarType type = outType.value_or(x.scalar_type());
    const int64_t M = x.size(0), out = q.rows();
    if (M <= kQuantGemvMaxRows) {
        const at::Tensor xf = x.to(at::kFloat).contiguous();
        at::Tensor y = at::empty({M, out}, xf.options());
        q.gemv(xf.data_ptr<float>(), M, y.data_ptr<float>(), QuantMatrix::fastestIsa());
        if (bias.defined()) y.add_(bias);
        return type == at::kFloat ? y : y.to(type);
    }
    // A prefill: tiles of rows dequantised into x's dtype, each one GEMM.
    at::Tensor y = at::empty({M, out}, x.options().dtype(type));
    const int64_t tileRows = std::max<int64_t>(64, kQuantTileBytes / (4 * q.cols()));
    at::Tensor tile = at::empty({std::min(tileRows, out), q.cols()}, x.options().dtype(at::kFloat));
    for (int64_t r0 = 0; r0 < out; r0 += tileRows) {
        const int64_t n = std::min(tileRows, out - r0);
        at::Tensor t = tile.narrow(0, 0, n);
        q.dequantizeRows(r0, r0 + n, t.data_ptr<float>());
        y.narrow(1, r0, n).copy_(at::linear(x, x.scalar_type() == at::kFloat ? t : t.to(x.scalar_type())));
    }
    if (bias.defined()) y.add_(bias);
    return y;
}

at::Tensor embeddingRows(const Weight& w, const std::vector<int64_t>& ids) {
    if (!w.quantised()) {
        const at::Tensor idx = at::tensor(ids, at::kLong).to(w.dense().device());
        return w.dense().index_select(0, idx).to(at::kFloat);
    }
    const QuantMatrix& q = w.quant();
    at::Tensor out = at::empty({static_cast<int64_t>(ids.size()), q.cols()}, at::kFloat);
    for (size_t i = 0; i < ids.size(); ++i) {
        q.dequantizeRows(ids[i], ids[i] + 1, out.data_ptr<float>() + static_cast<int64_t>(i) * q.cols());
    }
    return out;
}

}  // namespace kvlens::kernels
