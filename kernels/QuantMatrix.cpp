#include "kernels/QuantMatrix.h"

#include <ATen/Parallel.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <memory>
#include <string>

#include "core/Error.h"
#include "kernels/CpuFeatures.h"

namespace kvlens::kernels {

const char* quantFormatName(QuantFormat f) {
    switch (f) {
        case QuantFormat::F16: return "F16";
        case QuantFormat::BF16: return "BF16";
        case QuantFormat::Q8_0: return "Q8_0";
        case QuantFormat::Q4_0: return "Q4_0";
        case QuantFormat::Q4_K: return "Q4_K";
        case QuantFormat::Q5_K: return "Q5_K";
        case QuantFormat::Q6_K: return "Q6_K";
        case QuantFormat::Other: return "other";
    }
    return "?";
}

RowDot QuantDotTable::of(QuantFormat f) const {
    switch (f) {
        case QuantFormat::F16: return f16;
        case QuantFormat::BF16: return bf16;
        case QuantFormat::Q8_0: return q8_0;
        case QuantFormat::Q4_0: return q4_0;
        case QuantFormat::Q4_K: return q4_k;
        case QuantFormat::Q5_K: return q5_k;
        case QuantFormat::Q6_K: return q6_k;
        case QuantFormat::Other: return f32;
    }
    return f32;
}

QuantFormat QuantMatrix::formatOf(uint32_t t) {
    switch (t) {  // ggml type codes
        case 1: return QuantFormat::F16;
        case 30: return QuantFormat::BF16;
        case 8: return QuantFormat::Q8_0;
        case 2: return QuantFormat::Q4_0;
        case 12: return QuantFormat::Q4_K;
        case 13: return QuantFormat::Q5_K;
        case 14: return QuantFormat::Q6_K;
        default: return QuantFormat::Other;
    }
}

QuantMatrix::QuantMatrix(int64_t cols, std::vector<Part> parts, DequantizeFn dequantize,
                         std::shared_ptr<const void> owner)
    : cols_(cols), parts_(std::move(parts)), dequantize_(dequantize), owner_(std::move(owner)) {
    if (cols_ <= 0 || cols_ % 32 != 0) {
        throw Error("quantised matrix: " + std::to_string(cols_) + " columns, not a positive multiple of 32");
    }
    for (const Part& p : parts_) {
        if (p.rows <= 0 || p.data == nullptr || p.rowBytes <= 0) throw Error("quantised matrix: an empty part");
        const QuantGeometry g = quantGeometry(p.format);
        if (p.format != QuantFormat::Other && (cols_ % g.blockElements != 0 || p.rowBytes != cols_ / g.blockElements * g.blockBytes)) {
            throw Error(std::string("quantised matrix: a ") + quantFormatName(p.format) + " row of " +
                        std::to_string(cols_) + " columns cannot take " + std::to_string(p.rowBytes) + " bytes");
        }
        firstRow_.push_back(rows_);
        rows_ += p.rows;
        uses32_ = uses32_ || p.format == QuantFormat::Q8_0 || p.format == QuantFormat::Q4_0;
        usesQ4_0_ = usesQ4_0_ || p.format == QuantFormat::Q4_0;
        usesK_ = usesK_ || p.format == QuantFormat::Q4_K || p.format == QuantFormat::Q5_K || p.format == QuantFormat::Q6_K;
    }
    if (parts_.empty()) throw Error("quantised matrix: no rows");
    // gemv hands rows out as 32-bit halves of one atomic word.
    if (rows_ > 0xffffffffLL) throw Error("quantised matrix: " + std::to_string(rows_) + " rows, more than 2^32 - 1");
}

int64_t QuantMatrix::bytes() const {
    int64_t total = 0;
    for (const Part& p : parts_) total += p.rows * p.rowBytes;
    return total;
}

const uint8_t* QuantMatrix::row(int64_t r, const Part** part) const {
    size_t i = parts_.size() - 1;
    while (firstRow_[i] > r) --i;
    *part = &parts_[i];
    return parts_[i].data + (r - firstRow_[i]) * parts_[i].rowBytes;
}

void QuantMatrix::dequantizeRows(int64_t r0, int64_t r1, float* out) const {
    at::parallel_for(r0, r1, std::max<int64_t>(1, (1 << 16) / cols_), [&](int64_t a, int64_t b) {
        for (int64_t r = a; r < b; ++r) {
            const Part* p = nullptr;
            const uint8_t* src = row(r, &p);
            dequantize_(p->ggmlType, src, out + (r - r0) * cols_, cols_);
        }
    });
}

void QuantMatrix::quantizeX(const float* x, int64_t n, int64_t block, int8_t* q, float* d, int32_t* qsum16) {
    for (int64_t b = 0; b < n / block; ++b) {
        const float* xb = x + block * b;
        float amax = 0.0f;
        for (int64_t i = 0; i < block; ++i) amax = std::max(amax, std::abs(xb[i]));
        d[b] = amax / 127.0f;
        const float inv = amax > 0.0f ? 127.0f / amax : 0.0f;
        for (int64_t i = 0; i < block; ++i) {
            const int v = static_cast<int>(std::nearbyint(xb[i] * inv));
            q[block * b + i] = static_cast<int8_t>(std::clamp(v, -127, 127));
        }
    }
    for (int64_t g = 0; qsum16 != nullptr && g < n / 16; ++g) {
        int32_t s = 0;
        for (int64_t i = 0; i < 16; ++i) s += q[16 * g + i];
        qsum16[g] = s;
    }
}

void QuantMatrix::offsets32(const int8_t* q, const float* d, int64_t n, float* off32) {
    for (int64_t b = 0; b < n / 32; ++b) {
        int32_t s = 0;
        for (int64_t i = 0; i < 32; ++i) s += q[32 * b + i];
        off32[b] = 8.0f * d[b] * static_cast<float>(s);
    }
}

void QuantMatrix::pairOrder(const int8_t* q, int64_t n, int8_t* qPairs) {
    const int64_t pairs = n / 64;
    for (int64_t p = 0; p < pairs; ++p) {
        const int8_t* a = q + 64 * p;
        int8_t* out = qPairs + 64 * p;
        std::copy(a, a + 16, out);            // block 2p, weights 0-15
        std::copy(a + 32, a + 48, out + 16);  // block 2p + 1, weights 0-15
        std::copy(a + 16, a + 32, out + 32);  // block 2p, weights 16-31
        std::copy(a + 48, a + 64, out + 48);  // block 2p + 1, weights 16-31
    }
    std::copy(q + 64 * pairs, q + n, qPairs + 64 * pairs);
}

void QuantMatrix::gemv(const float* x, int64_t M, float* y, const QuantDotTable* isa) const {
    const int64_t groups = cols_ / 32, superBlocks = cols_ / 256;
    // x quantised, and the threads' shares of the rows, in buffers of the calling thread
    // kept from call to call: a decode step's products allocate nothing once the widest
    // matrix has been seen.
    struct alignas(64) Share {
        std::atomic<uint64_t> frontBack;  // rows [front, back) not yet taken: front | back << 32
    };
    struct Scratch {
        std::unique_ptr<Share[]> shares;  // one a thread, read by all of them (see below)
        int64_t shareCount = 0;
        std::vector<int8_t> q, qK, qPairs;
        std::vector<float> d, dK, off32;
        std::vector<int32_t> qKsum16;
        std::vector<QuantX> xq;
    };
    thread_local Scratch s;
    auto atLeast = [](auto& v, int64_t n) {
        if (static_cast<int64_t>(v.size()) < n) v.resize(static_cast<size_t>(n));
    };
    atLeast(s.q, M * cols_);
    atLeast(s.qK, M * cols_);
    atLeast(s.qPairs, M * cols_);
    atLeast(s.d, M * groups);
    atLeast(s.dK, std::max<int64_t>(1, M * superBlocks));
    atLeast(s.qKsum16, M * cols_ / 16);
    atLeast(s.off32, M * groups);
    atLeast(s.xq, M);
    for (int64_t m = 0; m < M; ++m) {
        const float* xm = x + m * cols_;
        // Only what the rows' formats read (none on the plain C++ path).
        if (isa != nullptr && uses32_) {
            isa->quantize(xm, cols_, 32, s.q.data() + m * cols_, s.d.data() + m * groups, nullptr);
            if (usesQ4_0_) {  // what only Q4_0 rows read
                offsets32(s.q.data() + m * cols_, s.d.data() + m * groups, cols_, s.off32.data() + m * groups);
                pairOrder(s.q.data() + m * cols_, cols_, s.qPairs.data() + m * cols_);
            }
        }
        if (isa != nullptr && usesK_)
            isa->quantize(xm, cols_, 256, s.qK.data() + m * cols_, s.dK.data() + m * superBlocks,
                          s.qKsum16.data() + m * cols_ / 16);
        s.xq[static_cast<size_t>(m)] = {xm,
                                        s.q.data() + m * cols_,
                                        s.d.data() + m * groups,
                                        s.qK.data() + m * cols_,
                                        s.dK.data() + m * superBlocks,
                                        s.qKsum16.data() + m * cols_ / 16,
                                        s.off32.data() + m * groups,
                                        s.qPairs.data() + m * cols_};
    }
    const std::vector<QuantX>& xq = s.xq;
    const int64_t rowBytes = bytes() / rows_;
    // Each thread streams its own contiguous share of the rows front to back, a chunk
    // of about 64 KB at a time; one that finishes early takes chunks from the back of
    // the others' shares. With a static split a thread the host slowed for a moment left
    // the other waiting at the region's end (8-9% of a Q4_0 decode step, each thread);
    // handing out interleaved chunks from one counter instead broke each thread's
    // stream and cost up to a third of decode. Each row is still one thread's whole dot
    // product, so y does not depend on who took which chunk. (The constructor refuses
    // 2^32 rows or more; the largest real matrix, a vocabulary's output head, has ~10^5.)
    const int64_t chunkRows = std::max<int64_t>(4, (64 << 10) / std::max<int64_t>(rowBytes, 1));
    const int64_t threads = std::clamp<int64_t>((rows_ + chunkRows - 1) / chunkRows, 1, at::get_num_threads());
    if (s.shareCount < threads) {
        s.shares = std::make_unique<Share[]>(static_cast<size_t>(threads));
        s.shareCount = threads;
    }
    Share* shares = s.shares.get();
    for (int64_t t = 0; t < threads; ++t)
        shares[t].frontBack.store(static_cast<uint64_t>(rows_ * t / threads) |
                                  static_cast<uint64_t>(rows_ * (t + 1) / threads) << 32);
    // Takes up to chunkRows rows from the front (the share's owner) or the back of a
    // share; false when it is empty.
    auto take = [&](Share& sh, bool front, int64_t* r0, int64_t* r1) {
        uint64_t v = sh.frontBack.load(std::memory_order_relaxed);
        for (;;) {
            const int64_t f = static_cast<int64_t>(v & 0xffffffffu), b = static_cast<int64_t>(v >> 32);
            if (f >= b) return false;
            *r0 = front ? f : std::max(f, b - chunkRows);
            *r1 = front ? std::min(b, f + chunkRows) : b;
            const uint64_t next = front ? (static_cast<uint64_t>(*r1) | static_cast<uint64_t>(b) << 32)
                                        : (static_cast<uint64_t>(f) | static_cast<uint64_t>(*r0) << 32);
            if (sh.frontBack.compare_exchange_weak(v, next, std::memory_order_relaxed)) return true;
        }
    };
    // Rows [r0, r1) of one part, from its row r0 at src. `scratch` (the thread's row
    // dequantised, for formats without a kernel) is the thread's for the whole region,
    // not made anew for each chunk.
    auto partRows = [&](int64_t r0, int64_t r1, const uint8_t* src, const Part& p, std::vector<float>& scratch) {
        if (isa != nullptr && p.format != QuantFormat::Other) {
            const RowDot dot = isa->of(p.format);
            for (int64_t r = r0; r < r1; ++r, src += p.rowBytes)
                for (int64_t m = 0; m < M; ++m) y[m * rows_ + r] = dot(src, xq[static_cast<size_t>(m)], cols_);
            return;
        }
        scratch.resize(static_cast<size_t>(cols_));
        for (int64_t r = r0; r < r1; ++r, src += p.rowBytes) {
            dequantize_(p.ggmlType, src, scratch.data(), cols_);
            for (int64_t m = 0; m < M; ++m) {
                if (isa != nullptr) {
                    y[m * rows_ + r] = isa->f32(reinterpret_cast<const uint8_t*>(scratch.data()),
                                                xq[static_cast<size_t>(m)], cols_);
                } else {
                    float s = 0.0f;
                    for (int64_t i = 0; i < cols_; ++i) s += scratch[static_cast<size_t>(i)] * x[m * cols_ + i];
                    y[m * rows_ + r] = s;
                }
            }
        }
    };
    // A chunk's rows a part at a time: the part and its kernel are looked up once for
    // each run of rows, not once a row (that was ~2% of a Q4_0 decode step's samples).
    auto rowsOf = [&](int64_t r0, int64_t r1, std::vector<float>& scratch) {
        while (r0 < r1) {
            const Part* p = nullptr;
            const uint8_t* src = row(r0, &p);
            const int64_t end = std::min(r1, firstRow_[static_cast<size_t>(p - parts_.data())] + p->rows);
            partRows(r0, end, src, *p, scratch);
            r0 = end;
        }
    };
    at::parallel_for(0, threads, 1, [&](int64_t t0, int64_t t1) {
        int64_t r0 = 0, r1 = 0;
        std::vector<float> scratch;
        for (int64_t t = t0; t < t1; ++t)
            while (take(shares[t], true, &r0, &r1)) rowsOf(r0, r1, scratch);
        for (int64_t k = 1; k <= threads; ++k) {  // the others' shares, the next one first
            Share& other = shares[(t0 + k) % threads];
            while (take(other, false, &r0, &r1)) rowsOf(r0, r1, scratch);
        }
    });
}

const QuantDotTable* QuantMatrix::fastestIsa() {
    const CpuFeatures& f = CpuFeatures::detect();
    if (f.avx512vnni && quantDotAvx512Vnni()) return quantDotAvx512Vnni();
    if (f.avx512f && quantDotAvx512()) return quantDotAvx512();
    if (f.avx2 && quantDotAvx2()) return quantDotAvx2();
    return nullptr;
}

std::vector<const QuantDotTable*> QuantMatrix::runnableIsas() {
    const CpuFeatures f = CpuFeatures::probe();
    std::vector<const QuantDotTable*> out{nullptr};
    if (f.avx2 && quantDotAvx2()) out.push_back(quantDotAvx2());
    if (f.avx512f && quantDotAvx512()) out.push_back(quantDotAvx512());
    if (f.avx512vnni && quantDotAvx512Vnni()) out.push_back(quantDotAvx512Vnni());
    return out;
}

}  // namespace kvlens::kernels
