// Tokenizer speed: encoding 1 MB of English and C++ (this README and the BPE
// tokenizer's source, repeated) with the Llama-3-style vocabulary of
// ../shared/testdata/vocab (dbrx: the Llama 3 regex on a cl100k-style vocab),
// and with the SentencePiece one. The same text for llama-tokenize is written
// to $KVLENS_BENCH_TEXT_OUT when set, so both read identical bytes.
// Run: build/tests/kvlens_benchmarks --benchmark_filter=Tokenize
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "engine/gguf/GgufFile.h"
#include "engine/tokenizer/GgufTokenizer.h"

namespace kvlens {
namespace {

std::string slurp(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
}

const std::string& benchText() {
    static const std::string text = [] {
        const std::string readme = slurp(std::string(KVLENS_SOURCE_DIR) + "/README.md");
        const std::string code =
            slurp(std::string(KVLENS_SOURCE_DIR) + "/engine/tokenizer/BpeTokenizer.cpp");
        std::string t;
        while (t.size() < 1000000) t += readme + code;
        size_t cut = 1000000;
        while (cut > 0 && (static_cast<unsigned char>(t[cut]) & 0xC0) == 0x80)
            --cut;  // a whole character
        t.resize(cut);
        if (const char* out = std::getenv("KVLENS_BENCH_TEXT_OUT"))
            std::ofstream(out, std::ios::binary) << t;
        return t;
    }();
    return text;
}

void encode(benchmark::State& state, const char* vocab) {
    const std::string path =
        std::string(KVLENS_SHARED_DIR) + "/testdata/vocab/ggml-vocab-" + vocab + ".gguf";
    if (!std::ifstream(path).good()) {
        state.SkipWithError(("needs " + path).c_str());
        return;
    }
    GgufFile file(path);
    const auto tokenizer = GgufTokenizer::fromGguf(file);
    const std::string& text = benchText();
    size_t tokens = 0;
    for (auto _ : state) {
        const std::vector<int32_t> ids = tokenizer->encode(text, false);
        tokens = ids.size();
        benchmark::DoNotOptimize(ids.data());
    }
    state.SetBytesProcessed(int64_t(state.iterations()) * int64_t(text.size()));
    state.counters["tokens"] = double(tokens);
}

BENCHMARK_CAPTURE(encode, Tokenize1MB_llama3_dbrx, "dbrx")->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(encode, Tokenize1MB_gpt2, "gpt-2")->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(encode, Tokenize1MB_llama_spm, "llama-spm")->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace kvlens
