// Decode's matrix-vector products on weights kept in their file format
// (kernels/QuantMatrix): one fp32 vector times a [rows, 2048] matrix of random
// blocks, for each format read in place and each instruction set this machine runs
// (scalar = dequantise each row, then an fp32 dot product). Large: 32768 rows
// (37-134 MB, beyond the caches: the bytes/s is the streaming rate decode sees);
// Small: 256 rows (in cache; also the suite's smoke run).
// Run: build/tests/kvlens_benchmarks --benchmark_filter=QuantGemv
#include <benchmark/benchmark.h>

#include <c10/util/Half.h>

#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "engine/gguf/Dequantize.h"
#include "kernels/QuantMatrix.h"

namespace kvlens {
namespace {

using kernels::QuantMatrix;

void dequantizeRow(uint32_t type, const void* src, float* dst, int64_t n) { kvlens::dequantize(type, src, dst, n); }

constexpr GgmlType kTypes[] = {GgmlType::F16, GgmlType::Q8_0, GgmlType::Q4_0, GgmlType::Q4_K, GgmlType::Q5_K,
                               GgmlType::Q6_K, GgmlType::Q3_K};

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
    constexpr int64_t cols = 2048;
    const std::vector<uint8_t> blocks = randomBlocks(type, rows, cols);
    const int64_t rowBytes = cols / ggmlBlockSize(type) * static_cast<int64_t>(ggmlBlockBytes(type));
    const QuantMatrix q(cols, {{QuantMatrix::formatOf(type), type, blocks.data(), rows, rowBytes}}, &dequantizeRow,
                        nullptr);
    std::vector<float> x(cols, 0.5f), y(static_cast<size_t>(rows));
    for (auto _ : state) {
        q.gemv(x.data(), 1, y.data(), isa);
        benchmark::DoNotOptimize(y.data());
    }
    state.SetLabel(std::string(ggmlTypeName(type)) + " " + (isa ? isa->isa : "scalar"));
    state.SetBytesProcessed(state.iterations() * rows * rowBytes);
    state.counters["weights/s"] =
        benchmark::Counter(double(rows * cols), benchmark::Counter::kIsIterationInvariantRate);
}

void QuantGemvLarge(benchmark::State& state) { run(state, 32768); }
void QuantGemvSmall(benchmark::State& state) { run(state, 256); }

void formatsAndIsas(benchmark::internal::Benchmark* b) {
    for (int64_t t = 0; t < static_cast<int64_t>(std::size(kTypes)); ++t)
        for (int64_t i = 0; i < 4; ++i) b->Args({t, i});
}

BENCHMARK(QuantGemvLarge)->Apply(formatsAndIsas)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(QuantGemvSmall)->Apply(formatsAndIsas)->UseRealTime()->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace kvlens
