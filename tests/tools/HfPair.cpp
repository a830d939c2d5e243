// kvlens_hf_pair OUTDIR [--from GGUF] [--layers N --embed E --heads H --kv-heads K --ffn F --context C]
//     [--arch llama|qwen2|qwen3] [--dtype F32|BF16] [--shards N]: writes one model twice, as
// OUTDIR/model.gguf (dense, in --dtype) and as the Hugging Face folder OUTDIR/hf (HfFolderWriter),
// for timing a folder against its GGUF with `kvlens bench` (docs/models.md: Hugging Face folders).
// Without --from the model is a TinyModelFile of the given shape (seeded random weights,
// the tiny SentencePiece vocabulary, written with tokenizer.model).
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "engine/gguf/GgufFile.h"
#include "support/HfFolderWriter.h"
#include "support/TinyModelFile.h"

int main(int argc, char** argv) {
    const char* usage = "usage: kvlens_hf_pair OUTDIR [--from GGUF] [--layers N] [--embed E] [--heads H] "
                        "[--kv-heads K] [--ffn F] [--context C] [--arch A] [--dtype F32|BF16] [--shards N]\n";
    if (argc >= 2 && (std::string(argv[1]) == "--help" || std::string(argv[1]) == "-h")) {
        std::fputs(usage, stdout);
        return 0;
    }
    // OUTDIR first, never a flag (--help made a folder named "--help"); flags in pairs.
    if (argc < 2 || argv[1][0] == '-' || argc % 2 != 0) {
        std::fputs(usage, stderr);
        return 2;
    }
    const std::string out = argv[1];
    std::string from, dtype = "BF16";
    kvlens::test::TinyModelShape shape;
    int shards = 1;
    for (int i = 2; i + 1 < argc; i += 2) {
        const std::string flag = argv[i], value = argv[i + 1];
        char* end = nullptr;
        const long long n = std::strtoll(value.c_str(), &end, 10);
        const bool number = !value.empty() && *end == '\0' && n > 0;
        if (!number && flag != "--from" && flag != "--dtype" && flag != "--arch") {
            std::fprintf(stderr, "kvlens_hf_pair: %s: '%s' is not a positive number\n", flag.c_str(), value.c_str());
            return 2;
        }
        if (flag == "--from") from = value;
        else if (flag == "--dtype") dtype = value;
        else if (flag == "--shards") shards = int(n);
        else if (flag == "--arch") shape.architecture = value;
        else if (flag == "--layers") shape.layers = n;
        else if (flag == "--embed") shape.embed = n;
        else if (flag == "--heads") shape.heads = n;
        else if (flag == "--kv-heads") shape.kvHeads = n;
        else if (flag == "--ffn") shape.ffn = n;
        else if (flag == "--context") shape.context = n;
        else {
            std::fprintf(stderr, "kvlens_hf_pair: unknown flag %s\n", flag.c_str());
            return 2;
        }
    }
    try {
        std::filesystem::create_directories(out);
        std::string source = from;
        if (source.empty()) {
            source = out + "/source-f32.gguf";
            kvlens::test::makeTinyModelFile(shape).builder.writeFile(source);
        }
        {
            const kvlens::GgufFile src(source);
            kvlens::test::writeDenseGguf(src, out + "/model.gguf", dtype);
            kvlens::test::HfWriteOptions o;
            o.dtype = dtype;
            o.shards = shards;
            o.sentencePiece = true;
            std::filesystem::remove_all(out + "/hf");
            kvlens::test::writeHfFolder(src, out + "/hf", o);
        }
        if (from.empty()) std::filesystem::remove(source);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "kvlens_hf_pair: %s\n", e.what());
        return 1;
    }
    std::printf("%s/model.gguf and %s/hf\n", out.c_str(), out.c_str());
    return 0;
}
