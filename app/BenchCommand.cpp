// kvlens bench: prefill and decode throughput at a given prompt length;
// warm-up runs, then repetitions reported as median, min and max.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <random>

#include "app/CommandLine.h"
#include "app/Commands.h"
#include "app/ModelOptions.h"
#include "app/ProgressBar.h"
#include "kernels/CpuFeatures.h"
#include "engine/Error.h"
#include "engine/Sampler.h"

namespace kvlens {
namespace {

struct Spread {
    double median, min, max;
};

Spread spread(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    const size_t n = v.size();
    const double median = n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
    return {median, v.front(), v.back()};
}

double now() {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

}  // namespace

int runBench(const std::vector<std::string>& argv) {
    std::set<std::string> valueFlags = ModelOptions::flags();
    valueFlags.insert({"--prompt-len", "-n", "--reps", "--warmup", "--seed"});
    CommandLine args("bench", argv, valueFlags, {"--json", "--help"});
    if (args.has("--help")) {
        std::fputs(
            "usage: kvlens bench [--model M] [--prompt-len P] [-n N] [--reps R] [--warmup W]\n"
            "       [--dtype auto|f32|bf16] [--device cpu|cuda] [--threads N] [--json]\n"
            "  prefills P random tokens (default 512), then decodes N tokens (default 32) one at\n"
            "  a time on that context; W warm-up runs (default 1), then R timed runs (default 5);\n"
            "  prints median, min and max tokens/s of each phase.\n",
            stdout);
        return 0;
    }
    const int64_t promptLen = args.getInt("--prompt-len", 512, 1, 1 << 24);
    const int64_t decodeTokens = args.getInt("-n", 32, 0, 1 << 20);
    const int64_t reps = args.getInt("--reps", 5, 1, 1000);
    const int64_t warmup = args.getInt("--warmup", 1, 0, 100);
    const uint64_t seed = args.getSeed("--seed", 0);
    const ModelOptions options = ModelOptions::fromCommandLine(args);
    LoadedModel loaded = options.load();
    LlamaModel& model = *loaded.model;
    const ModelConfig& c = model.config();
    if (promptLen + decodeTokens > c.contextLength) {
        throw Error("--prompt-len " + std::to_string(promptLen) + " plus -n " +
                    std::to_string(decodeTokens) + " exceeds the model's context of " +
                    std::to_string(c.contextLength) + " tokens");
    }
    // Random ids past the special tokens, the same for every run.
    std::mt19937_64 rng(seed);
    std::uniform_int_distribution<int32_t> pick(std::min<int32_t>(3, int32_t(c.vocabSize) - 1),
                                                int32_t(c.vocabSize) - 1);
    std::vector<int32_t> prompt(promptLen);
    for (auto& id : prompt) id = pick(rng);

    std::vector<double> prefillRates, decodeRates;
    for (int64_t r = 0; r < warmup + reps; ++r) {
        KvCache cache = model.makeCache(promptLen + decodeTokens);
        ProgressBar bar(std::string(r < warmup ? "warm-up" : "run") + " prefill");
        double t0 = now();
        at::Tensor logits =
            model.forward(prompt, cache, false, [&](double f, const std::string& what) { bar.update(f, what); });
        const double prefill = now() - t0;
        bar.finish();
        t0 = now();
        for (int64_t i = 0; i < decodeTokens; ++i) {
            const int32_t next = Sampler::argmax(logits.data_ptr<float>(), logits.numel());
            logits = model.forward({next}, cache);
        }
        const double decode = now() - t0;
        const bool timed = r >= warmup;
        std::fprintf(stderr, "%s %lld/%lld: prefill %.3f s, decode %.3f s\n",
                     timed ? "run" : "warm-up", (long long)(timed ? r - warmup + 1 : r + 1),
                     (long long)(timed ? reps : warmup), prefill, decode);
        if (!timed) continue;
        prefillRates.push_back(double(promptLen) / prefill);
        if (decodeTokens > 0) decodeRates.push_back(double(decodeTokens) / decode);
    }
    const Spread p = spread(prefillRates);
    const Spread d = decodeRates.empty() ? Spread{0, 0, 0} : spread(decodeRates);
    if (args.has("--json")) {
        nlohmann::json j = {
            {"model", options.model},    {"dtype", dtypeName(options.dtype)},
            {"device", options.device.str()}, {"threads", options.threads},
            {"prompt_len", promptLen},   {"decode_tokens", decodeTokens},
            {"reps", reps},              {"warmup", warmup},
            {"prefill_tok_s", {{"median", p.median}, {"min", p.min}, {"max", p.max}}},
            {"decode_tok_s", {{"median", d.median}, {"min", d.min}, {"max", d.max}}}};
        std::printf("%s\n", j.dump().c_str());
        return 0;
    }
    std::printf("model   %s (%lld layers), %s on %s, %d threads, CPU features: %s\n",
                options.model.c_str(), (long long)c.nLayers, dtypeName(options.dtype),
                options.device.str().c_str(), options.threads,
                CpuFeatures::detect().describe().c_str());
    std::printf("prefill %6lld tokens:          %9.1f tok/s  (median of %lld; min %.1f, max %.1f)\n",
                (long long)promptLen, p.median, (long long)reps, p.min, p.max);
    if (decodeTokens > 0) {
        std::printf(
            "decode  %6lld tokens after %lld: %9.1f tok/s  (median of %lld; min %.1f, max %.1f)\n",
            (long long)decodeTokens, (long long)promptLen, d.median, (long long)reps, d.min, d.max);
    }
    return 0;
}

}  // namespace kvlens
