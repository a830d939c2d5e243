// kvlens train-testbed: trains the retrieval testbed model (engine/testbed) on the
// CPU from a seed and writes it as GGUF, with the training curve as CSV.
#include <ATen/Parallel.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <set>
#include <sstream>

#include "app/CommandLine.h"
#include "app/Commands.h"
#include "app/PressOptions.h"
#include "core/Error.h"
#include "engine/testbed/TestbedTrainer.h"

namespace kvlens {
namespace {

// "256x16x500" (length x batch x steps), "256x16x500@0.5" (with the copy share),
// "64x64x400@1p" (periodic copies).
TestbedStage parseStage(const std::string& text) {
    TestbedStage s{0, 0, 0, 0.2, false};
    std::string body = text;
    if (!body.empty() && body.back() == 'p') {
        s.periodic = true;
        body.pop_back();
    }
    const size_t at = body.find('@');
    if (at != std::string::npos) {
        char* end = nullptr;
        const std::string share = body.substr(at + 1);
        body = body.substr(0, at);
        s.copyShare = std::strtod(share.c_str(), &end);
        if (share.empty() || *end != '\0' || !(s.copyShare >= 0.0 && s.copyShare <= 1.0))
            throw Error("--stages: copy share '" + share + "' is not between 0 and 1");
    }
    std::vector<int64_t> v;
    std::stringstream in(body);
    for (std::string part; std::getline(in, part, 'x');) {
        char* end = nullptr;
        const long long n = std::strtoll(part.c_str(), &end, 10);
        if (part.empty() || *end != '\0' || n < 1) throw Error("--stages: '" + text + "' is not LENGTHxBATCHxSTEPS");
        v.push_back(n);
    }
    if (v.size() != 3) throw Error("--stages: '" + text + "' is not LENGTHxBATCHxSTEPS");
    if (v[0] < 16) throw Error("--stages: a length of " + std::to_string(v[0]) + " tokens (at least 16)");
    s.length = v[0];
    s.batch = v[1];
    s.steps = v[2];
    return s;
}

}  // namespace

int runTrainTestbed(const std::vector<std::string>& argv) {
    CommandLine args("train-testbed", argv,
                     {"--out", "--seed", "--stages", "--lr", "--warmup", "--threads", "--curve", "--save-every",
                      "--layers", "--width", "--heads", "--kv-heads", "--ffn", "--context"},
                     {"--help", "--quiet"});
    if (args.has("--help")) {
        std::fputs(
            "usage: kvlens train-testbed --out FILE.gguf [--seed S] [--stages 64x64x400@1p,256x16x600@0.3,...]\n"
            "       [--lr 3e-3] [--warmup 100] [--threads N] [--curve FILE.csv] [--save-every 100]\n"
            "       [--layers 4] [--width 128] [--heads 4] [--kv-heads 2] [--ffn 384] [--context 4096]\n"
            "  trains the retrieval testbed (a small Llama, GQA) on the CPU from the seed: the\n"
            "  needle tasks of `kvlens niah` in a word-level vocabulary of their own, with their\n"
            "  answers, and copies of random word strings at random offsets; stages grow the\n"
            "  context (LENGTHxBATCHxSTEPS, @ the share of copy rows, p: periodic copies). Writes\n"
            "  FILE.gguf at every"
            " save point and at the end, and one CSV row per step to --curve.\n",
            stdout);
        return 0;
    }
    if (!args.has("--out")) throw Error("train-testbed: --out FILE.gguf is required");
    TestbedTrainingOptions o;
    o.out = args.get("--out");
    o.seed = args.getSeed("--seed", 1);
    if (args.has("--stages")) {
        o.stages.clear();
        for (const std::string& s : splitList(args.get("--stages"), "--stages")) o.stages.push_back(parseStage(s));
    }
    o.learningRate = args.getDouble("--lr", o.learningRate);
    if (!(o.learningRate > 0.0)) throw Error("--lr must be positive");
    o.warmup = args.getInt("--warmup", o.warmup, 0, 1 << 30);
    o.saveEvery = args.getInt("--save-every", o.saveEvery, 0, 1 << 30);
    o.shape.layers = args.getInt("--layers", o.shape.layers, 1, 64);
    o.shape.embed = args.getInt("--width", o.shape.embed, 8, 4096);
    o.shape.heads = args.getInt("--heads", o.shape.heads, 1, 64);
    o.shape.kvHeads = args.getInt("--kv-heads", o.shape.kvHeads, 1, 64);
    o.shape.ffn = args.getInt("--ffn", o.shape.ffn, 8, 16384);
    o.shape.context = args.getInt("--context", o.shape.context, 64, 1 << 20);
    at::set_num_threads(static_cast<int>(args.getInt("--threads", at::get_num_threads(), 1, 1024)));

    {  // a path that cannot be written fails now, not after the training
        const std::string part = o.out + ".part";
        std::ofstream probe(part, std::ios::binary | std::ios::trunc);
        if (!probe) throw Error(o.out + ": cannot write (" + std::strerror(errno) + ")");
        probe.close();
        std::remove(part.c_str());
    }
    std::ofstream curve;
    if (args.has("--curve")) {
        curve.open(args.get("--curve"), std::ios::trunc);
        if (!curve) throw Error("--curve: cannot write " + args.get("--curve"));
        curve << "step,length,lr,loss,answer_loss,answer_accuracy,answer_exact,copy_accuracy,seconds\n";
    }
    TestbedTrainer trainer(o);
    const bool quiet = args.has("--quiet");
    std::fprintf(stderr, "train-testbed: %lld parameters, vocabulary %zu, %lld steps, seed %llu\n",
                 static_cast<long long>(trainer.model().parameterCount()), trainer.vocab().tokens.size(),
                 static_cast<long long>(trainer.totalSteps()), static_cast<unsigned long long>(o.seed));
    const int64_t total = trainer.totalSteps();
    // Means over the last few steps for the progress line (one step is noisy).
    double sumLoss = 0, sumAcc = 0, sumExact = 0, sumCopy = 0;
    int64_t since = 0;
    trainer.run([&](const TestbedStepRecord& r) {
        if (curve.is_open()) {
            curve << r.step << ',' << r.length << ',' << r.learningRate << ',' << r.loss << ',' << r.answerLoss << ','
                  << r.answerAccuracy << ',' << r.answerExact << ',' << r.copyAccuracy << ',' << r.seconds << '\n';
            curve.flush();
        }
        sumLoss += r.loss;
        sumAcc += r.answerAccuracy;
        sumExact += r.answerExact;
        sumCopy += r.copyAccuracy;
        ++since;
        if (!quiet && (r.step % 10 == 0 || r.step == total)) {
            const double eta = r.seconds / double(r.step) * double(total - r.step);
            std::fprintf(stderr,
                         "step %lld/%lld  len %lld  loss %.3f  answer %.1f%%  exact %.1f%%  copy %.1f%%  %.1f s  "
                         "(%.0f s left)\n",
                         static_cast<long long>(r.step), static_cast<long long>(total),
                         static_cast<long long>(r.length), sumLoss / since, 100.0 * sumAcc / since,
                         100.0 * sumExact / since, 100.0 * sumCopy / since, r.seconds, eta);
            sumLoss = sumAcc = sumExact = sumCopy = 0;
            since = 0;
        }
    });
    std::printf("wrote %s\n", o.out.c_str());
    return 0;
}

}  // namespace kvlens
