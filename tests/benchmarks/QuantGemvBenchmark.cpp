// Decode's matrix-vector products on weights kept in their file format
// (kernels/QuantMatrix): one fp32 vector times a [rows, 2048] matrix of random
// blocks, for each format read in place and each instruction set this machine runs
// (scalar = dequantise each row, then an fp32 dot product). Large: 32768 rows
// (37-134 MB, beyond the caches: the bytes/s is the streaming rate decode sees);
// Small: 256 rows (in cache; also the suite's smoke run).
// RowDot: one thread's row kernel on 64 rows kept in L2, without gemv's threads: the
// rate the kernel's instructions allow (if Large falls well below both it x 2 threads
// and StreamRead, the loads wait; if near it, the instructions are the bound).
// StreamRead: the bound those rates meet on this machine: the same bytes (a Q8_0 and
// an F16 matrix's worth) read once, summed as 64-bit words on the same intra-op
// threads, with no work per byte.
// Large and StreamRead hold their bytes as decode holds a model's weights: anonymous
// memory advised to huge pages (engine/gguf/GgufFile.cpp, loadIntoMemory; here through
// engine/model/CachingHostAllocator, which maps large blocks the same way). On 4 KB
// pages (a std::vector where transparent huge pages are 'madvise') StreamRead/128 read
// 17-21 GB/s on an AMD EPYC Zen 3, against 23-31 GB/s on huge pages and the 25 GB/s
// decode of an F16 file reached there: a bound under decode's own rate.
// Run: build/tests/kvlens_benchmarks --benchmark_filter='QuantGemv|StreamRead'

#include <ATen/Parallel.h>
#include <benchmark/benchmark.h>

#include <c10/util/Half.h>

#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "engine/gguf/Dequantize.h"
#include "engine/model/CachingHostAllocator.h"
#include "kernels/QuantMatrix.h"

namespace kvlens {
namespace {

using kernels::QuantMatrix;

void dequantizeRow(uint32_t type, const void* src, float* dst, int64_t n) { kvlens::dequantize(type, src, dst, n); }

// Decode's threads as side-by-side runs it (THREADS=2), as the selection benchmarks do.
constexpr int kThreads = 2;

constexpr GgmlType kTypes[] = {GgmlType::F16, GgmlType::Q8_0, GgmlType::Q4_0, GgmlType::Q4_K, GgmlType::Q5_K,
                               GgmlType::Q6_K, GgmlType::Q3_K};

// Memory as decode's is: the project's CPU allocator maps blocks of 1 MB and more as
// anonymous memory advised to huge pages, as the model's weights are held.
c10::DataPtr hugePages(size_t bytes) { return CachingHostAllocator::install().allocate(bytes); }

std::vector<uint8_t> randomBlocks(uint32_t type, int64_t rows, int64_t cols) {
    const int64_t blocks = rows * cols / ggmlBlockSize(type);
    const size_t bb = ggmlBlockBytes(type);
    std::vector<uint8_t> bytes(static_cast<size_t>(blocks) * bb);
    std::mt19937_64 rng(type);
    for (uint8_t& b : bytes) b = static_cast<uint8_t>(rng());
    const uint16_t half = c10::Half(0.01f).x;
    for (int64_t b = 0; b < blocks; ++b) {
        uint8_t* blk = bytes.data() + static_cast<size_t>(b) * bb;
        switch (static_cast<GgmlType>(type)) {
            case GgmlType::F16: std::memcpy(blk, &half, 2); break;
            case GgmlType::Q6_K: std::memcpy(blk + 208, &half, 2); break;
            case GgmlType::Q3_K: std::memcpy(blk + 108, &half, 2); break;
            case GgmlType::Q4_K:
            case GgmlType::Q5_K: std::memcpy(blk + 2, &half, 2); [[fallthrough]];
            default: std::memcpy(blk, &half, 2);
        }
    }
    return bytes;
}

void run(benchmark::State& state, int64_t rows) {
    const uint32_t type = static_cast<uint32_t>(kTypes[state.range(0)]);
    const std::vector<const kernels::QuantDotTable*> isas = QuantMatrix::runnableIsas();
    if (state.range(1) >= static_cast<int64_t>(isas.size())) {
        state.SkipWithError("this machine has no such instruction set");
        return;
    }
    const kernels::QuantDotTable* isa = isas[static_cast<size_t>(state.range(1))];
    at::set_num_threads(kThreads);
    constexpr int64_t cols = 2048;
    const std::vector<uint8_t> random = randomBlocks(type, rows, cols);
    const c10::DataPtr held = hugePages(random.size());
    auto* blocks = static_cast<uint8_t*>(held.get());
    std::memcpy(blocks, random.data(), random.size());
    const int64_t rowBytes = cols / ggmlBlockSize(type) * static_cast<int64_t>(ggmlBlockBytes(type));
    const QuantMatrix q(cols, {{QuantMatrix::formatOf(type), type, blocks, rows, rowBytes}}, &dequantizeRow,
                        nullptr);
    std::vector<float> x(cols, 0.5f), y(static_cast<size_t>(rows));
    for (auto _ : state) {
        q.gemv(x.data(), 1, y.data(), isa);
        benchmark::DoNotOptimize(y.data());
    }
    state.SetLabel(std::string(ggmlTypeName(type)) + " " + (isa ? isa->isa : "scalar") + ", " +
                   std::to_string(at::get_num_threads()) + " threads");
    state.SetBytesProcessed(state.iterations() * rows * rowBytes);
    state.counters["weights/s"] =
        benchmark::Counter(double(rows * cols), benchmark::Counter::kIsIterationInvariantRate);
}

void RowDot(benchmark::State& state) {
    const uint32_t type = static_cast<uint32_t>(kTypes[state.range(0)]);
    const std::vector<const kernels::QuantDotTable*> isas = QuantMatrix::runnableIsas();
    if (state.range(1) == 0 || state.range(1) >= static_cast<int64_t>(isas.size())) {
        state.SkipWithError("this machine has no such instruction set");
        return;
    }
    const kernels::QuantDotTable* isa = isas[static_cast<size_t>(state.range(1))];
    constexpr int64_t cols = 2048, rows = 64;  // at most 256 KB (F16)
    const std::vector<uint8_t> blocks = randomBlocks(type, rows, cols);
    const int64_t rowBytes = cols / ggmlBlockSize(type) * static_cast<int64_t>(ggmlBlockBytes(type));
    std::vector<float> x(cols, 0.5f), d(cols / 32), dK(cols / 256), off32(cols / 32);
    std::vector<int8_t> q(cols), qK(cols), qPairs(cols);
    std::vector<int32_t> qKsum16(cols / 16);
    QuantMatrix::quantizeX(x.data(), cols, 32, q.data(), d.data(), nullptr);
    QuantMatrix::offsets32(q.data(), d.data(), cols, off32.data());
    QuantMatrix::pairOrder(q.data(), cols, qPairs.data());
    QuantMatrix::quantizeX(x.data(), cols, 256, qK.data(), dK.data(), qKsum16.data());
    const kernels::QuantX xq{x.data(), q.data(), d.data(), qK.data(), dK.data(), qKsum16.data(), off32.data(), qPairs.data()};
    const kernels::RowDot dot = isa->of(QuantMatrix::formatOf(type));
    float sum = 0.0f;
    for (auto _ : state) {
        for (int64_t r = 0; r < rows; ++r) sum += dot(blocks.data() + r * rowBytes, xq, cols);
        benchmark::DoNotOptimize(sum);
    }
    state.SetLabel(std::string(ggmlTypeName(type)) + " " + isa->isa + ", 1 thread, in L2");
    state.SetBytesProcessed(state.iterations() * rows * rowBytes);
}

void QuantGemvLarge(benchmark::State& state) { run(state, 32768); }
void QuantGemvSmall(benchmark::State& state) { run(state, 256); }

void StreamRead(benchmark::State& state) {
    at::set_num_threads(kThreads);
    const int64_t bytes = state.range(0) << 20;
    const c10::DataPtr held = hugePages(static_cast<size_t>(bytes));
    auto* words = static_cast<uint64_t*>(held.get());
    const int64_t count = bytes / 8;
    for (int64_t i = 0; i < count; ++i) words[i] = static_cast<uint64_t>(i) * 0x9E3779B97F4A7C15ull;
    std::vector<uint64_t> partial(64);
    for (auto _ : state) {
        // One chunk per thread, as gemv's row ranges are.
        at::parallel_for(0, count, 1 << 16, [&](int64_t a, int64_t b) {
            uint64_t s0 = 0, s1 = 0, s2 = 0, s3 = 0;
            for (int64_t i = a; i + 4 <= b; i += 4) {
                s0 += words[i];
                s1 += words[i + 1];
                s2 += words[i + 2];
                s3 += words[i + 3];
            }
            partial[static_cast<size_t>(at::get_thread_num() % 64)] += s0 ^ s1 ^ s2 ^ s3;
        });
        benchmark::DoNotOptimize(partial.data());
    }
    state.SetLabel(std::to_string(state.range(0)) + " MB, " + std::to_string(at::get_num_threads()) + " threads, huge pages");
    state.SetBytesProcessed(state.iterations() * bytes);
}

void formatsAndIsas(benchmark::internal::Benchmark* b) {
    for (int64_t t = 0; t < static_cast<int64_t>(std::size(kTypes)); ++t)
        for (int64_t i = 0; i < 4; ++i) b->Args({t, i});
}

BENCHMARK(QuantGemvLarge)->Apply(formatsAndIsas)->UseRealTime()->Unit(benchmark::kMillisecond);
// 37 MB (a Q8_0 matrix of 32768 x 2048) and 128 MB (F16).
BENCHMARK(StreamRead)->Arg(37)->Arg(128)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(RowDot)->Apply(formatsAndIsas)->Unit(benchmark::kMicrosecond);
BENCHMARK(QuantGemvSmall)->Apply(formatsAndIsas)->UseRealTime()->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace kvlens
