// Mutation fuzzer for the GGUF reader: corrupts valid files, parses and
// dequantises the result, and fails on anything but a clean kvlens::Error.
//
// Built with ASan/UBSan, so an out-of-bounds read or an overflow aborts the run
// too. Deterministic for a given --seed; --verbose prints each iteration before
// it runs, to find the one a sanitizer report came from. A mutant that throws
// something other than kvlens::Error is saved as gguf_fuzz_failure.gguf.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "engine/gguf/Dequantize.h"
#include "FuzzMutator.h"
#include "core/Error.h"
#include "engine/gguf/GgufFile.h"
#include "support/GgufBuilder.h"

#ifndef KVLENS_SHARED_DIR
#define KVLENS_SHARED_DIR "."
#endif

using kvlens::GgmlType;
using kvlens::GgufFile;
using kvlens::GgufValue;
using kvlens::GgufValueType;
using kvlens::test::GgufBuilder;

namespace {

constexpr int64_t kMaxDequantElements = int64_t(1) << 22;
constexpr size_t kMaxMutantBytes = size_t(8) << 20;
volatile double g_sink;  // keeps the dequantised values observable

struct Seed {
    std::string name;
    std::vector<uint8_t> bytes;
    size_t headerEnd = 0;  // where tensor data starts; most mutations land before it
};

std::vector<uint8_t> pattern(size_t n, uint32_t seed) {
    std::vector<uint8_t> v(n);
    uint32_t x = seed;
    for (auto& b : v) {
        x = x * 1664525u + 1013904223u;
        b = static_cast<uint8_t>(x >> 24);
    }
    return v;
}

// Quantised blocks with sane f16 scales (random bytes would give NaN scales,
// which is fine too, but these keep the values realistic).
std::vector<uint8_t> blocks(GgmlType t, int nBlocks, uint32_t seed) {
    const size_t bb = kvlens::ggmlBlockBytes(static_cast<uint32_t>(t));
    std::vector<uint8_t> v = pattern(bb * nBlocks, seed);
    for (int b = 0; b < nBlocks; ++b) {
        uint8_t* blk = v.data() + bb * b;
        switch (t) {
            case GgmlType::Q8_0:
            case GgmlType::Q4_0:
            case GgmlType::Q4_K:  // d (and dmin) = 0.5
                blk[0] = 0x00, blk[1] = 0x38;
                if (t == GgmlType::Q4_K) blk[2] = 0x00, blk[3] = 0x34;
                break;
            case GgmlType::Q6_K:
                blk[208] = 0x00, blk[209] = 0x30;
                break;
            default:
                break;
        }
    }
    return v;
}

std::vector<uint8_t> builderSeed(uint32_t version, uint64_t alignment) {
    GgufBuilder b;
    b.setVersion(version);
    if (alignment != 32) b.setAlignment(alignment);
    b.addString("general.architecture", "llama")
        .addUInt8("t.u8", 200)
        .addInt8("t.i8", -5)
        .addUInt16("t.u16", 60000)
        .addInt16("t.i16", -300)
        .addUInt32("llama.block_count", 2)
        .addInt32("t.i32", -70000)
        .addUInt64("t.u64", uint64_t(1) << 40)
        .addInt64("t.i64", -(int64_t(1) << 40))
        .addFloat32("llama.attention.layer_norm_rms_epsilon", 1e-5f)
        .addFloat64("t.f64", 0.125)
        .addBool("t.bool", true)
        .addStringArray("tokenizer.ggml.tokens", {"<unk>", "<s>", "</s>", "a", "b"})
        .addFloat32Array("tokenizer.ggml.scores", {0, 0, 0, -1, -2})
        .addInt32Array("tokenizer.ggml.token_type", {2, 3, 3, 1, 1})
        .addUInt32Array("t.u32s", {1, 2, 3});
    GgufValue nested;
    nested.type = GgufValueType::Array;
    nested.arrayType = GgufValueType::Array;
    GgufValue inner;
    inner.type = GgufValueType::Array;
    inner.arrayType = GgufValueType::String;
    GgufValue s;
    s.type = GgufValueType::String;
    s.s = "x";
    inner.array = {s, s};
    nested.array = {inner, inner};
    b.addValue("t.nested", nested);

    std::vector<float> f(16);
    for (size_t i = 0; i < f.size(); ++i) f[i] = static_cast<float>(i) * 0.25f - 2.0f;
    b.addTensorF32("f32", {8, 2}, f);
    b.addTensorF16("f16", {8}, std::vector<float>(f.begin(), f.begin() + 8));
    b.addTensorBF16("bf16", {8}, std::vector<float>(f.begin(), f.begin() + 8));
    b.addTensor("q8_0", static_cast<uint32_t>(GgmlType::Q8_0), {32, 2},
                blocks(GgmlType::Q8_0, 2, 1));
    b.addTensor("q4_0", static_cast<uint32_t>(GgmlType::Q4_0), {64}, blocks(GgmlType::Q4_0, 2, 2));
    b.addTensor("q4_k", static_cast<uint32_t>(GgmlType::Q4_K), {256}, blocks(GgmlType::Q4_K, 1, 3));
    b.addTensor("q6_k", static_cast<uint32_t>(GgmlType::Q6_K), {256, 2},
                blocks(GgmlType::Q6_K, 2, 4));
    b.addTensor("q5_1", static_cast<uint32_t>(GgmlType::Q5_1), {32}, pattern(24, 5));
    return b.build();
}

bool addSeed(std::vector<Seed>& seeds, const std::string& name, std::vector<uint8_t> bytes) {
    const uint8_t* base = bytes.data();
    const size_t size = bytes.size();
    Seed s;
    s.name = name;
    s.bytes = bytes;
    try {
        GgufFile f(std::move(bytes), name);  // a moved vector keeps its buffer
        s.headerEnd = size;
        for (const auto& t : f.tensors()) {
            const size_t at = static_cast<size_t>(f.tensorData(t) - base);
            if (at < s.headerEnd) s.headerEnd = at;
        }
    } catch (const kvlens::Error& e) {
        std::fprintf(stderr, "seed %s does not parse: %s\n", name.c_str(), e.what());
        return false;
    }
    seeds.push_back(std::move(s));
    return true;
}

std::vector<uint8_t> readFile(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) return {};
    return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), {});
}

class Mutator {
public:
    explicit Mutator(uint64_t seed) : rng_(seed) {}

    uint64_t below(uint64_t n) { return n == 0 ? 0 : rng_() % n; }

    // A position, mostly inside the header where the parser looks.
    size_t position(const std::vector<uint8_t>& v, size_t headerEnd) {
        if (v.empty()) return 0;
        if (headerEnd > 0 && headerEnd <= v.size() && below(10) < 8) return below(headerEnd);
        return below(v.size());
    }

    void mutate(std::vector<uint8_t>& v, size_t headerEnd) {
        static const uint64_t extremes[] = {0,
                                            1,
                                            2,
                                            3,
                                            4,
                                            5,
                                            8,
                                            13,
                                            31,
                                            32,
                                            33,
                                            64,
                                            255,
                                            256,
                                            0x7F,
                                            0x80,
                                            0xFF,
                                            0x7FFF,
                                            0x8000,
                                            0xFFFF,
                                            0x10000,
                                            0x7FFFFFFF,
                                            0x80000000,
                                            0xFFFFFFFF,
                                            uint64_t(1) << 32,
                                            (uint64_t(1) << 32) + 1,
                                            uint64_t(1) << 60,
                                            uint64_t(1) << 62,
                                            uint64_t(1) << 63,
                                            ~uint64_t(0),
                                            ~uint64_t(0) - 31,
                                            0x7FFFFFFFFFFFFFFF};
        const int n = 1 + static_cast<int>(below(4));
        for (int k = 0; k < n; ++k) {
            if (v.empty()) return;
            switch (below(8)) {
                case 0: {  // flip a bit
                    v[position(v, headerEnd)] ^= static_cast<uint8_t>(1u << below(8));
                    break;
                }
                case 1: {  // set a byte
                    v[position(v, headerEnd)] = static_cast<uint8_t>(below(256));
                    break;
                }
                case 2: {  // truncate
                    v.resize(position(v, headerEnd + 64));
                    break;
                }
                case 3:
                case 4: {  // an extreme integer, 4 or 8 bytes, aligned or not
                    const uint64_t x = extremes[below(sizeof extremes / sizeof extremes[0])];
                    const size_t width = below(2) ? 8 : 4;
                    size_t at = position(v, headerEnd);
                    if (below(2)) at &= ~size_t(7);
                    if (at + width > v.size()) break;
                    std::memcpy(v.data() + at, &x, width);
                    break;
                }
                case 5: {  // duplicate a chunk
                    const size_t from = position(v, headerEnd);
                    const size_t len = std::min<size_t>(1 + below(64), v.size() - from);
                    const size_t to = position(v, headerEnd);
                    if (v.size() + len > kMaxMutantBytes) break;
                    std::vector<uint8_t> chunk(v.begin() + from, v.begin() + from + len);
                    v.insert(v.begin() + to, chunk.begin(), chunk.end());
                    break;
                }
                case 6: {  // delete a chunk
                    const size_t from = position(v, headerEnd);
                    const size_t len = std::min<size_t>(1 + below(64), v.size() - from);
                    v.erase(v.begin() + from, v.begin() + from + len);
                    break;
                }
                case 7: {  // copy a chunk over another place
                    const size_t from = position(v, headerEnd);
                    const size_t to = position(v, headerEnd);
                    const size_t len =
                        std::min<size_t>({1 + below(32), v.size() - from, v.size() - to});
                    std::memmove(v.data() + to, v.data() + from, len);
                    break;
                }
            }
        }
    }

private:
    std::mt19937_64 rng_;
};

// Touches what a loader would: getters, arrays, every tensor's values.
double exercise(const GgufFile& f) {
    double sink = 0;
    const char* keys[] = {"general.architecture",
                          "llama.block_count",
                          "t.u64",
                          "llama.attention.layer_norm_rms_epsilon",
                          "tokenizer.ggml.tokens",
                          "tokenizer.ggml.scores",
                          "t.bool",
                          "general.alignment"};
    for (const char* k : keys) {
        try {
            sink += static_cast<double>(f.getUIntOr(k, 0));
        } catch (const kvlens::Error&) {
        }
        try {
            sink += f.getFloatOr(k, 0);
        } catch (const kvlens::Error&) {
        }
        try {
            sink += f.getBoolOr(k, false);
        } catch (const kvlens::Error&) {
        }
        try {
            sink += static_cast<double>(f.getStringOr(k, "").size());
        } catch (const kvlens::Error&) {
        }
        try {
            sink += static_cast<double>(f.getStringArray(k).size());
        } catch (const kvlens::Error&) {
        }
        try {
            sink += static_cast<double>(f.getNumberArray(k).size());
        } catch (const kvlens::Error&) {
        }
    }
    for (const auto& t : f.tensors()) {
        if (t.numel() > kMaxDequantElements) continue;
        try {
            const std::vector<float> v = f.dequantize(t);
            if (!v.empty()) sink += v[0] + v[v.size() - 1];
        } catch (const kvlens::Error&) {
            // unsupported type: expected for q5_1
        }
    }
    return sink;
}

void usage() {
    std::fprintf(
        stderr, "usage: kvlens_gguf_fuzz [--seed N] [--iterations N] [--model PATH] [--verbose]\n");
}

}  // namespace

int main(int argc, char** argv) {
    uint64_t seed = 1;
    uint64_t iterations = 4000;
    bool verbose = false;
    std::string model = KVLENS_SHARED_DIR "/models/stories260K.gguf";
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        if (kvlens::test::fuzzCountFlag(argc, argv, i, seed, iterations)) {
            continue;
        } else if (a == "--model" && i + 1 < argc) {
            model = argv[++i];
        } else if (a == "--verbose") {
            verbose = true;
        } else {
            usage();
            return 2;
        }
    }

    const auto start = std::chrono::steady_clock::now();
    std::vector<Seed> seeds;
    if (!addSeed(seeds, "builder-v3", builderSeed(3, 32))) return 1;
    if (!addSeed(seeds, "builder-v2-align64", builderSeed(2, 64))) return 1;
    std::vector<uint8_t> modelBytes = readFile(model);
    if (!modelBytes.empty()) {
        if (!addSeed(seeds, "stories260K", std::move(modelBytes))) return 1;
    } else {
        std::printf("note: %s not found, fuzzing builder seeds only\n", model.c_str());
    }

    Mutator mut(seed);
    uint64_t parsed = 0, rejected = 0;
    double sink = 0;
    for (uint64_t it = 0; it < iterations; ++it) {
        // The model is 100x bigger than the builder seeds; pick it less often.
        const size_t si = seeds.size() > 2 && mut.below(4) == 0 ? 2 : mut.below(2);
        const Seed& s = seeds[si];
        std::vector<uint8_t> bytes = s.bytes;
        mut.mutate(bytes, s.headerEnd);
        if (verbose)
            std::fprintf(stderr, "iteration %llu seed %s size %zu\n",
                         static_cast<unsigned long long>(it), s.name.c_str(), bytes.size());
        const std::vector<uint8_t> keep = bytes;
        try {
            GgufFile f(std::move(bytes), "fuzz.gguf");
            sink += exercise(f);
            ++parsed;
        } catch (const kvlens::Error& e) {
            const std::string msg = e.what();
            if (msg.rfind("fuzz.gguf: ", 0) != 0 || msg.find('\n') != std::string::npos) {
                std::fprintf(stderr, "seed %llu iteration %llu: malformed error message: %s\n",
                             static_cast<unsigned long long>(seed),
                             static_cast<unsigned long long>(it), msg.c_str());
                return 1;
            }
            ++rejected;
        } catch (const std::exception& e) {
            std::ofstream("gguf_fuzz_failure.gguf", std::ios::binary)
                .write(reinterpret_cast<const char*>(keep.data()),
                       static_cast<std::streamsize>(keep.size()));
            std::fprintf(stderr,
                         "seed %llu iteration %llu (from %s): unexpected exception: %s "
                         "(mutant saved as gguf_fuzz_failure.gguf)\n",
                         static_cast<unsigned long long>(seed), static_cast<unsigned long long>(it),
                         s.name.c_str(), e.what());
            return 1;
        } catch (...) {
            std::fprintf(stderr, "seed %llu iteration %llu (from %s): unknown exception\n",
                         static_cast<unsigned long long>(seed), static_cast<unsigned long long>(it),
                         s.name.c_str());
            return 1;
        }
    }
    const double secs =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    g_sink = sink;
    std::printf(
        "gguf fuzz: seed %llu, %llu iterations, %llu parsed OK, %llu rejected, "
        "%zu seeds, %.1f s\n",
        static_cast<unsigned long long>(seed), static_cast<unsigned long long>(iterations),
        static_cast<unsigned long long>(parsed), static_cast<unsigned long long>(rejected),
        seeds.size(), secs);
    return 0;
}
