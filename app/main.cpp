// kvlens: the headless command-line front end of KV Lens.
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "app/Commands.h"
#include "app/PressOptions.h"
#include "core/Error.h"

namespace {

const char* kUsage =
    "usage: kvlens <command> [flags]\n"
    "\n"
    "commands:\n"
    "  info       the model's architecture, shape, tensor types and KV bytes per token\n"
    "  tokenize   token ids and pieces of a prompt\n"
    "  generate   generate text with the full KV cache, streamed as it comes\n"
    "  bench      prefill and decode tokens/s at a given prompt length\n"
    "  select     positions a compression method keeps, from dumped per-layer tensors\n"
    "  methods    the method table: family, knobs, needs, decode form, kvpress (--json, --markdown)\n"
    "  run        compress the KV cache with one method and measure what it costs\n"
    "  compare    one prefill, then every method and budget: memory and quality table\n"
    "  inspect    pictures of what a method keeps: attention funnel, kept positions,\n"
    "             attention maps, hit rates, overlaps and memory (SVG/PNG + CSV)\n"
    "  niah       needle-in-a-haystack sweeps with ground truth: accuracy and needle kept\n"
    "             per method and budget, one capture per sample\n"
    "  sweep      a study's grid from a sweep file: plan it, run it (or a shard), or write\n"
    "             the Slurm job array that runs its shards and merges their stores\n"
    "  eval       task accuracy on LongBench-format .jsonl records or a generated task\n"
    "  sessions   saved runs: list, show, rename, delete, export, import (run/compare --save)\n"
    "  report     a session's runs compared: self-contained HTML, PDF, figures (SVG/PNG) and CSV\n"
    "  train-testbed  train the retrieval testbed model (CPU, from a seed) and write it as GGUF\n"
    "\n"
    "models: --model PATH.gguf, a Hugging Face folder (config.json, safetensors, tokenizer),\n"
    "        or random:<preset>[:layers=N][:seed=S][:ctx=N][:window=W[:window-period=P]] with presets\n"
    "        tiny, tinyllama-1.1b, llama2-7b, llama3-8b, mistral-7b; default $KVLENS_MODEL,\n"
    "        then the project's testbed models/kvlens-testbed.gguf, then\n"
    "        ../shared/models/stories260K.gguf.\n"
    "run 'kvlens <command> --help' for a command's flags.\n";

std::string firstLine(const std::string& s) { return s.substr(0, s.find('\n')); }

}  // namespace

int main(int argc, char** argv) {
    if (argc < 2 || !std::strcmp(argv[1], "--help") || !std::strcmp(argv[1], "-h") ||
        !std::strcmp(argv[1], "help")) {
        std::fputs(kUsage, argc < 2 ? stderr : stdout);
        return argc < 2 ? 2 : 0;
    }
    const std::string command = argv[1];
    const std::vector<std::string> args(argv + 2, argv + argc);
    // The notes a command's methods left, after it succeeded (an error stays one line).
    auto noted = [](int rc) {
        if (rc == 0)
            for (const std::string& note : kvlens::PressOptions::notes()) std::fprintf(stderr, "%s\n", note.c_str());
        return rc;
    };
    try {
        if (command == "info") return kvlens::runInfo(args);
        if (command == "tokenize") return kvlens::runTokenize(args);
        if (command == "generate") return kvlens::runGenerate(args);
        if (command == "bench") return noted(kvlens::runBench(args));
        if (command == "select") return noted(kvlens::runSelect(args));
        if (command == "methods") return kvlens::runMethods(args);
        if (command == "run") return noted(kvlens::runRun(args));
        if (command == "compare") return noted(kvlens::runCompare(args));
        if (command == "niah") return noted(kvlens::runNiah(args));
        if (command == "sweep") return noted(kvlens::runSweep(args));
        if (command == "eval") return noted(kvlens::runEval(args));
        if (command == "train-testbed") return kvlens::runTrainTestbed(args);
        if (command == "inspect") return noted(kvlens::runInspect(args));
        if (command == "sessions") return kvlens::runSessions(args);
        if (command == "report") return kvlens::runReport(args);
        std::fprintf(stderr, "kvlens: unknown command '%s' (commands: info, tokenize, generate, bench, methods, run, compare, inspect, niah, sweep, eval, select, sessions, report, train-testbed)\n",
                     command.c_str());
        return 2;
    } catch (const kvlens::Error& e) {
        std::fprintf(stderr, "kvlens: error: %s\n", e.what());
        return 1;
    } catch (const std::bad_alloc&) {
        std::fprintf(stderr, "kvlens: error: out of memory\n");
        return 1;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "kvlens: internal error: %s\n", firstLine(e.what()).c_str());
        return 3;
    }
}
