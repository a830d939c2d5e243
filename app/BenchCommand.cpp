// kvlens bench: prefill and decode throughput at a given prompt length;
// warm-up runs, then repetitions reported as median, min and max. With
// --methods, a KV-cache comparison per prompt length: prefill, selection,
// decode on each method's compressed cache, KV bytes, peak GPU memory, and
// decode time against what reading weights and cache at a given bandwidth needs.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <optional>
#include <random>
#include <sstream>

#include "app/CommandLine.h"
#include "app/Commands.h"
#include "app/ModelOptions.h"
#include "app/PressOptions.h"
#include "app/ProgressBar.h"
#include "engine/compress/CompressedCache.h"
#include "engine/model/DType.h"
#include "core/Error.h"
#include "engine/model/Sampler.h"
#include "engine/compress/presses/Press.h"
#include "kernels/CpuFeatures.h"
#include "kernels/DeviceMemory.h"

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
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch())
        .count();
}

std::vector<int64_t> parseLengths(const std::string& text) {
    std::vector<int64_t> out;
    std::stringstream in(text);
    std::string item;
    while (std::getline(in, item, ',')) {
        char* end = nullptr;
        const long long v = std::strtoll(item.c_str(), &end, 10);
        if (item.empty() || *end != '\0' || v < 2 || v > (1 << 24)) {
            throw Error("--prompt-len '" + text + "': '" + item +
                        "' is not a length of 2 to 16777216 tokens");
        }
        out.push_back(v);
    }
    if (out.empty()) throw Error("--prompt-len is empty");
    return out;
}

std::vector<std::string> parseMethods(const std::string& text) {
    std::vector<std::string> out;
    std::stringstream in(text);
    std::string item;
    const auto& known = PressParams::methodNames();
    while (std::getline(in, item, ',')) {
        if (std::find(known.begin(), known.end(), item) == known.end()) {
            std::string list;
            for (const std::string& m : known) list += (list.empty() ? "" : ", ") + m;
            throw Error("--methods: '" + item + "' is not one of " + list);
        }
        out.push_back(item);
    }
    if (out.empty()) throw Error("--methods is empty");
    return out;
}

struct MethodTiming {
    std::string method;
    int64_t budget = 0;
    double selectMs = 0, gatherMs = 0, decodeMsPerToken = 0;
    double firstUseSeconds = 0;  // what this method alone needs of the capture (H2O's sums)
    std::string firstUseWhat;    // that work in words (Capture::pendingWork)
    int64_t kvBytes = 0, kvBytesAfter = 0;
    std::optional<int64_t> peakBytes;
};

struct LengthTiming {
    int64_t promptLen = 0;
    Spread prefill{0, 0, 0};
    double plainDecodeMsPerToken = 0, captureSeconds = 0;
    int64_t plainKvBytes = 0;
    std::optional<int64_t> prefillPeakBytes;
    std::vector<MethodTiming> methods;
};

std::optional<int64_t> peakSinceReset(const c10::Device& device) {
    const auto m = kernels::deviceMemory(device);
    if (!m) return std::nullopt;
    return m->peakAllocated;
}

int32_t greedy(const at::Tensor& logits) {
    return Sampler::argmax(logits.data_ptr<float>(), logits.numel());
}

// Bytes one decode step reads: every weight once, and the cache it attends to
// (K and V, the mean over the steps timed).
double bytesRead(int64_t weightBytes, int64_t kvBefore, int64_t kvAfter) {
    return double(weightBytes) + 0.5 * double(kvBefore + kvAfter);
}

std::string megabytes(double bytes) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.1f", bytes / 1e6);
    return buf;
}

// What --methods asks for, checked before the model loads.
struct CacheComparison {
    std::vector<int64_t> lengths;
    std::vector<std::string> methods;
    PressParams press;
    double bandwidth = 0.0;  // GB/s; 0: no bytes-read model

    static CacheComparison fromCommandLine(const CommandLine& args) {
        CacheComparison c;
        c.lengths = parseLengths(args.get("--prompt-len", "512"));
        c.methods = parseMethods(args.get("--methods"));
        c.press = PressOptions::sharedFromCommandLine(args, c.methods);
        const bool needsBudget = std::any_of(c.methods.begin(), c.methods.end(),
                                             [](const std::string& m) { return methods::named(m).id != MethodId::Full; });
        if (needsBudget && !args.has("--budget"))
            throw Error("--methods other than full need --budget");
        if (args.has("--bandwidth")) {
            c.bandwidth = args.getDouble("--bandwidth", 0.0);
            if (!(c.bandwidth > 0.0)) {
                throw Error("--bandwidth '" + args.get("--bandwidth") +
                            "' is not a positive number of GB/s");
            }
        }
        return c;
    }
};

int runCacheComparison(const CommandLine& args, const CacheComparison& plan,
                       const ModelOptions& options, LoadedModel& loaded, int64_t decodeTokens,
                       int64_t reps, int64_t warmup, uint64_t seed) {
    LlamaModel& model = *loaded.model;
    const ModelConfig& c = model.config();
    const c10::Device device = options.device;
    const std::vector<int64_t>& lengths = plan.lengths;
    const std::vector<std::string>& methods = plan.methods;
    const PressParams& press = plan.press;
    const double bandwidth = plan.bandwidth;
    const int64_t longest = *std::max_element(lengths.begin(), lengths.end());
    if (longest + decodeTokens > c.contextLength) {
        throw Error("--prompt-len " + std::to_string(longest) + " plus -n " +
                    std::to_string(decodeTokens) + " exceeds the model's context of " +
                    std::to_string(c.contextLength) + " tokens");
    }
    std::mt19937_64 rng(seed);
    std::uniform_int_distribution<int32_t> pick(std::min<int32_t>(3, int32_t(c.vocabSize) - 1),
                                                int32_t(c.vocabSize) - 1);
    std::vector<int32_t> all(longest);
    for (auto& id : all) id = pick(rng);
    const int64_t weightBytes = model.weights().bytes();

    // Warm-up on a short prompt: library initialisation and first-call costs.
    for (int64_t w = 0; w < warmup; ++w) {
        const std::vector<int32_t> shortPrompt(all.begin(),
                                               all.begin() + std::min<int64_t>(longest, 256));
        KvCache cache = model.makeCache(int64_t(shortPrompt.size()) + 2);
        at::Tensor logits = model.forward(shortPrompt, cache);
        for (int i = 0; i < 2; ++i) logits = model.forward({greedy(logits)}, cache);
    }

    std::vector<LengthTiming> results;
    for (int64_t P : lengths) {
        const std::vector<int32_t> prompt(all.begin(), all.begin() + P);
        LengthTiming r;
        r.promptLen = P;
        {
            std::vector<double> rates;
            kernels::resetPeakDeviceMemory(device);
            at::Tensor logits;
            for (int64_t rep = 0; rep < reps; ++rep) {
                KvCache cache = model.makeCache(P + decodeTokens);
                ProgressBar bar("prefill " + std::to_string(P));
                const double t0 = now();
                logits =
                    model.forward(prompt, cache, false,
                                  [&](double f, const std::string& what) { bar.update(f, what); });
                kernels::synchronizeDevice(device);
                rates.push_back(double(P) / (now() - t0));
                bar.finish();
                if (rep + 1 < reps) continue;
                r.prefillPeakBytes = peakSinceReset(device);
                // The plain cache's decode, for reference: LibTorch's attention on the full KV.
                r.plainKvBytes = cache.bytes();
                const double t1 = now();
                for (int64_t i = 0; i < decodeTokens; ++i)
                    logits = model.forward({greedy(logits)}, cache);
                kernels::synchronizeDevice(device);
                r.plainDecodeMsPerToken =
                    decodeTokens > 0 ? 1e3 * (now() - t1) / double(decodeTokens) : 0.0;
            }
            r.prefill = spread(rates);
        }
        ProgressBar bar("capture " + std::to_string(P));
        double t0 = now();
        const std::shared_ptr<Capture> capture = Capture::fromPrefill(
            model, prompt, [&](double f, const std::string& what) { bar.update(f, what); }, {}, decodeTokens);
        capture->setRepeatPrompt(RepeatPrompt::from(*loaded.tokenizer));
        kernels::synchronizeDevice(device);
        r.captureSeconds = now() - t0;
        bar.finish();
        for (const std::string& method : methods) {
            MethodTiming m;
            m.method = method;
            PressParams p = press;
            p.method = method;
            if (!p.takesScorer()) p.scorer.clear();
            if (!p.reads(Knob::LayerWeights)) p.layerWeights.clear();
            const auto pressImpl = Press::create(method);
            // What one method alone needs (H2O's sums) is computed before its timing.
            t0 = now();
            m.firstUseWhat = capture->pendingWork(p);
            capture->keepScoresFor(model, p);
            kernels::synchronizeDevice(device);
            m.firstUseSeconds = now() - t0;
            kernels::resetPeakDeviceMemory(device);
            std::vector<double> selectMs;
            Selection s;
            for (int64_t rep = 0; rep < reps; ++rep) {
                t0 = now();
                s = pressImpl->select(*capture, p);
                kernels::synchronizeDevice(device);
                selectMs.push_back(1e3 * (now() - t0));
            }
            m.selectMs = spread(selectMs).median;
            m.budget = s.layerBudgets.empty() ? P : s.layerBudgets[0];
            t0 = now();
            CompressedCache cache(*capture, s, decodeTokens);
            kernels::synchronizeDevice(device);
            m.gatherMs = 1e3 * (now() - t0);
            m.kvBytes = cache.bytes();
            const at::Tensor own = capture->prefilledCache(p).lastLogits;  // Finch's after its own prefill
            int32_t token = greedy(own.defined() ? own : capture->lastLogits());
            t0 = now();
            for (int64_t i = 0; i < decodeTokens; ++i) token = greedy(model.decode(token, cache));
            kernels::synchronizeDevice(device);
            m.decodeMsPerToken = decodeTokens > 0 ? 1e3 * (now() - t0) / double(decodeTokens) : 0.0;
            m.kvBytesAfter = cache.bytes();
            m.peakBytes = peakSinceReset(device);
            std::fprintf(stderr, "prompt %lld, %s: select %.2f ms, decode %.3f ms/token\n",
                         (long long)P, method.c_str(), m.selectMs, m.decodeMsPerToken);
            r.methods.push_back(m);
        }
        results.push_back(std::move(r));
    }

    auto idealMs = [&](int64_t before, int64_t after) {
        return bandwidth > 0.0 ? 1e3 * bytesRead(weightBytes, before, after) / (bandwidth * 1e9)
                               : 0.0;
    };
    auto optionalJson = [](const std::optional<int64_t>& v) {
        return v ? nlohmann::json(*v) : nlohmann::json();
    };
    if (args.has("--json")) {
        nlohmann::json out = {
            {"model", options.model},
            {"dtype", dtypeName(options.dtype)},
            {"device", device.str()},
            {"decode_tokens", decodeTokens},
            {"reps", reps},
            {"weights_bytes", weightBytes},
            {"bandwidth_gbs", bandwidth > 0.0 ? nlohmann::json(bandwidth) : nlohmann::json()},
            {"prompts", nlohmann::json::array()}};
        for (const LengthTiming& r : results) {
            nlohmann::json j = {
                {"prompt_len", r.promptLen},
                {"prefill_tok_s",
                 {{"median", r.prefill.median}, {"min", r.prefill.min}, {"max", r.prefill.max}}},
                {"prefill_peak_bytes", optionalJson(r.prefillPeakBytes)},
                {"capture_s", r.captureSeconds},
                {"plain_decode_ms_per_token", r.plainDecodeMsPerToken},
                {"plain_kv_bytes", r.plainKvBytes},
                {"methods", nlohmann::json::array()}};
            for (const MethodTiming& m : r.methods) {
                nlohmann::json mj = {
                    {"method", m.method},
                    {"budget", m.budget},
                    {"select_ms", m.selectMs},
                    {"gather_ms", m.gatherMs},
                    {"first_use_s", m.firstUseSeconds},
                    {"decode_ms_per_token", m.decodeMsPerToken},
                    {"kv_bytes", m.kvBytes},
                    {"bytes_read_per_token", bytesRead(weightBytes, m.kvBytes, m.kvBytesAfter)},
                    {"peak_bytes", optionalJson(m.peakBytes)}};
                if (bandwidth > 0.0) {
                    const double ideal = idealMs(m.kvBytes, m.kvBytesAfter);
                    mj["ideal_decode_ms_per_token"] = ideal;
                    mj["share_of_bandwidth"] =
                        m.decodeMsPerToken > 0 ? ideal / m.decodeMsPerToken : 0.0;
                }
                j["methods"].push_back(mj);
            }
            out["prompts"].push_back(j);
        }
        std::printf("%s\n", out.dump().c_str());
        return 0;
    }
    std::printf("model   %s (%lld layers), %s on %s; weights %.2f GB", options.model.c_str(),
                (long long)c.nLayers, dtypeName(options.dtype), device.str().c_str(),
                double(weightBytes) / 1e9);
    if (bandwidth > 0.0) std::printf("; bandwidth model %.0f GB/s", bandwidth);
    std::printf("\n");
    for (const LengthTiming& r : results) {
        std::printf(
            "\nprompt %lld: prefill %.1f tok/s (median of %lld), capture %.2f s (%.2fx the prefill), "
            "plain-cache decode %.3f ms/token",
            (long long)r.promptLen, r.prefill.median, (long long)reps, r.captureSeconds,
            r.captureSeconds * r.prefill.median / double(r.promptLen), r.plainDecodeMsPerToken);
        if (r.prefillPeakBytes)
            std::printf(", prefill peak %s MB", megabytes(double(*r.prefillPeakBytes)).c_str());
        std::printf("\n%-14s %7s %10s %10s %13s %13s %9s %10s %10s\n", "method", "budget",
                    "select ms", "gather ms", "decode ms/tok", "ideal ms/tok", "of ideal", "KV MB",
                    "peak MB");
        for (const MethodTiming& m : r.methods) {
            const double ideal = idealMs(m.kvBytes, m.kvBytesAfter);
            const std::string share =
                bandwidth > 0.0 && m.decodeMsPerToken > 0
                    ? std::to_string(int(100.0 * ideal / m.decodeMsPerToken + 0.5)) + "%"
                    : "-";
            std::printf("%-14s %7lld %10.2f %10.2f %13.3f %13s %9s %10s %10s\n", m.method.c_str(),
                        (long long)m.budget, m.selectMs, m.gatherMs, m.decodeMsPerToken,
                        bandwidth > 0.0 ? std::to_string(ideal).substr(0, 6).c_str() : "-",
                        share.c_str(), megabytes(double(m.kvBytes)).c_str(),
                        m.peakBytes ? megabytes(double(*m.peakBytes)).c_str() : "-");
        }
        for (const MethodTiming& m : r.methods) {
            if (m.firstUseSeconds >= 0.01) {
                std::printf("%s's own statistics on first use (%s): %.2f s\n", m.method.c_str(),
                            m.firstUseWhat.empty() ? "its scores" : m.firstUseWhat.c_str(), m.firstUseSeconds);
            }
        }
    }
    return 0;
}

}  // namespace

int runBench(const std::vector<std::string>& argv) {
    std::set<std::string> valueFlags = ModelOptions::flags();
    valueFlags.insert(
        {"--prompt-len", "-n", "--reps", "--warmup", "--seed", "--methods", "--bandwidth"});
    valueFlags.insert(PressOptions::flags().begin(), PressOptions::flags().end());
    CommandLine args("bench", argv, valueFlags, {"--json", "--help"});
    if (args.has("--help")) {
        std::fputs(
            "usage: kvlens bench [--model M] [--prompt-len P] [-n N] [--reps R] [--warmup W]\n"
            "       [--dtype auto|f32|bf16] [--device cpu|cuda] [--threads N] [--json]\n"
            "  prefills P random tokens (default 512), then decodes N tokens (default 32) one at\n"
            "  a time on that context; W warm-up runs (default 1), then R timed runs (default 5);\n"
            "  prints median, min and max tokens/s of each phase.\n"
            "\n"
            "       kvlens bench [model flags] --prompt-len P[,P...] --methods M[,M...] --budget "
            "B\n"
            "       [method flags as for run] [-n N] [--reps R] [--warmup W] [--bandwidth GB/s] "
            "[--json]\n"
            "  per prompt length: prefill tokens/s (median of R), one capture, then per method\n"
            "  its selection time (median of R), the decode time per token of N tokens on its\n"
            "  compressed cache, its KV bytes and peak GPU memory (CUDA); with --bandwidth, the\n"
            "  time reading every weight and the cache once per token takes at that rate.\n"
            "  W warm-up runs use a short prompt.\n",
            stdout);
        return 0;
    }
    const int64_t decodeTokens = args.getInt("-n", 32, 0, 1 << 20);
    const int64_t warmup = args.getInt("--warmup", 1, 0, 100);
    const uint64_t seed = args.getSeed("--seed", 0);
    if (args.has("--methods")) {
        const CacheComparison plan = CacheComparison::fromCommandLine(args);
        const int64_t reps = args.getInt("--reps", 3, 1, 1000);
        const ModelOptions options = ModelOptions::fromCommandLine(args);
        LoadedModel loaded = options.load();
        return runCacheComparison(args, plan, options, loaded, decodeTokens, reps, warmup, seed);
    }
    if (args.has("--bandwidth")) throw Error("--bandwidth needs --methods");
    for (const std::string& flag : PressOptions::flags())
        if (args.has(flag)) throw Error(flag + " needs --methods");
    const int64_t promptLen = args.getInt("--prompt-len", 512, 1, 1 << 24);
    const int64_t reps = args.getInt("--reps", 5, 1, 1000);
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
        at::Tensor logits = model.forward(
            prompt, cache, false, [&](double f, const std::string& what) { bar.update(f, what); });
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
            {"model", options.model},
            {"dtype", dtypeName(options.dtype)},
            {"device", options.device.str()},
            {"threads", options.threads},
            {"prompt_len", promptLen},
            {"decode_tokens", decodeTokens},
            {"reps", reps},
            {"warmup", warmup},
            {"prefill_tok_s", {{"median", p.median}, {"min", p.min}, {"max", p.max}}},
            {"decode_tok_s", {{"median", d.median}, {"min", d.min}, {"max", d.max}}}};
        std::printf("%s\n", j.dump().c_str());
        return 0;
    }
    std::printf("model   %s (%lld layers), %s on %s, %d threads, CPU features: %s\n",
                options.model.c_str(), (long long)c.nLayers, dtypeName(options.dtype),
                options.device.str().c_str(), options.threads,
                CpuFeatures::detect().describe().c_str());
    std::printf(
        "prefill %6lld tokens:          %9.1f tok/s  (median of %lld; min %.1f, max %.1f)\n",
        (long long)promptLen, p.median, (long long)reps, p.min, p.max);
    if (decodeTokens > 0) {
        std::printf(
            "decode  %6lld tokens after %lld: %9.1f tok/s  (median of %lld; min %.1f, max %.1f)\n",
            (long long)decodeTokens, (long long)promptLen, d.median, (long long)reps, d.min, d.max);
    }
    return 0;
}

}  // namespace kvlens
