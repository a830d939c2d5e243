// kvlens train-testbed: trains the retrieval testbed model (engine/testbed) on the
// CPU from a seed and writes it as GGUF, with the training curve as CSV.
#include <ATen/Parallel.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <algorithm>
#include <fstream>
#include <set>
#include <sstream>

#include "app/CommandLine.h"
#include "app/Commands.h"
#include "app/PressOptions.h"
#include "core/Error.h"
#include "engine/testbed/TestbedTrainer.h"
#include "reports/SvgRasterizer.h"
#include "viz/OutputFile.h"
#include "viz/SvgChart.h"

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

struct CurvePoint {
    double step, length, loss, answerExact, copyAccuracy, seconds;
};

// Means over blocks of `every` steps: one step's figures are noisy.
std::vector<CurvePoint> smoothed(const std::vector<CurvePoint>& points, size_t every) {
    std::vector<CurvePoint> out;
    for (size_t i = 0; i < points.size(); i += every) {
        CurvePoint m{0, points[i].length, 0, 0, 0, 0};
        const size_t end = std::min(points.size(), i + every);
        for (size_t j = i; j < end; ++j) {
            m.step += points[j].step;
            m.loss += points[j].loss;
            m.answerExact += points[j].answerExact;
            m.copyAccuracy += points[j].copyAccuracy;
        }
        const double k = double(end - i);
        m.step /= k;
        m.loss /= k;
        m.answerExact /= k;
        m.copyAccuracy /= k;
        m.seconds = points[end - 1].seconds;
        out.push_back(m);
    }
    return out;
}

// The training curve as a chart: loss, and the needle answers and copies right, per step.
void writeCurveChart(const std::vector<CurvePoint>& raw, const std::string& svgPath) {
    if (raw.empty()) throw Error(svgPath + ": no training steps to draw");
    const std::vector<CurvePoint> points = smoothed(raw, std::max<size_t>(1, raw.size() / 200));
    viz::LineSeries loss{"loss", {}, {}}, exact{"needle answers exact", {}, {}}, copy{"copied tokens right", {}, {}};
    loss.markers = exact.markers = copy.markers = false;
    for (const CurvePoint& p : points) {
        loss.x.push_back(p.step);
        loss.y.push_back(p.loss);
        exact.x.push_back(p.step);
        exact.y.push_back(100.0 * p.answerExact);
        copy.x.push_back(p.step);
        copy.y.push_back(100.0 * p.copyAccuracy);
    }
    std::string stages;
    double last = -1;
    for (const CurvePoint& p : raw) {
        if (p.length != last) stages += (stages.empty() ? "" : ", ") + std::to_string(int64_t(p.step)) + ": " +
                                        std::to_string(int64_t(p.length));
        last = p.length;
    }
    viz::SvgChart chart(820, 200);
    chart.setTitle("Testbed training", "stage starts (step: tokens per row) " + stages + "; " +
                                           std::to_string(int64_t(raw.back().seconds)) + " s in all");
    chart.setXAxis("step", "", true);
    chart.addPanel("loss", "nats").setLogY().addLine(loss);
    chart.addPanel("right", "%").setYRange(0, 100).addLine(exact).addLine(copy);
    chart.writeSvg(svgPath);  // not write(): its CSV beside would replace the curve
    if (!SvgRasterizer::available()) return;  // a build without Qt: the SVG alone
    const std::vector<uint8_t> png = SvgRasterizer::png(chart.svg(), 1.5);
    viz::writeOutputFile(svgPath.substr(0, svgPath.size() - 4) + ".png", png.data(), png.size());
}

std::vector<CurvePoint> readCurve(const std::string& path) {
    std::ifstream in(path);
    if (!in) throw Error(path + ": cannot read");
    std::string line;
    std::getline(in, line);
    if (line.rfind("step,length,lr,loss,answer_loss,answer_accuracy,answer_exact,copy_accuracy,seconds", 0) != 0)
        throw Error(path + ": not a train-testbed curve (its header differs)");
    std::vector<CurvePoint> points;
    for (int64_t n = 2; std::getline(in, line); ++n) {
        std::vector<double> v;
        std::stringstream fields(line);
        for (std::string f; std::getline(fields, f, ',');) v.push_back(std::strtod(f.c_str(), nullptr));
        if (v.size() != 9) throw Error(path + ":" + std::to_string(n) + ": not 9 numbers");
        points.push_back({v[0], v[1], v[3], v[6], v[7], v[8]});
    }
    return points;
}

}  // namespace

int runTrainTestbed(const std::vector<std::string>& argv) {
    CommandLine args("train-testbed", argv,
                     {"--out", "--seed", "--stages", "--lr", "--warmup", "--threads", "--curve", "--save-every",
                      "--layers", "--width", "--heads", "--kv-heads", "--ffn", "--context", "--plot", "--init"},
                     {"--help", "--quiet"});
    if (args.has("--help")) {
        std::fputs(
            "usage: kvlens train-testbed --out FILE.gguf [--seed S] [--stages 64x64x300@1p,256x16x600@0.3,...]\n"
            "       [--lr 3e-3] [--warmup 100] [--threads N] [--curve FILE.csv] [--save-every 100]\n"
            "       [--layers 4] [--width 128] [--heads 4] [--kv-heads 2] [--ffn 384] [--context 4096]\n"
            "       [--init FILE.gguf] | --plot CURVE.csv\n"
            "  trains the retrieval testbed (a small Llama, GQA) on the CPU from the seed: the\n"
            "  needle tasks of `kvlens niah` in a word-level vocabulary of their own, with their\n"
            "  answers, and copies of random word strings at random offsets; stages grow the\n"
            "  context (LENGTHxBATCHxSTEPS, @ the share of copy rows, p: periodic copies). Writes\n"
            "  FILE.gguf at every save point and at the end, one CSV row per step to --curve,\n"
            "  drawn beside it (FILE.svg, FILE.png) at the end; --plot CURVE.csv draws one again.\n"
            "  --init FILE.gguf: start from a testbed's weights (continue or fine-tune a run).\n",
            stdout);
        return 0;
    }
    if (args.has("--plot")) {
        const std::string csv = args.get("--plot");
        const std::string svg = csv.substr(0, csv.rfind('.')) + ".svg";
        writeCurveChart(readCurve(csv), svg);
        std::printf("wrote %s\n", svg.c_str());
        return 0;
    }
    if (!args.has("--out")) throw Error("train-testbed: --out FILE.gguf is required");
    TestbedTrainingOptions o;
    o.out = args.get("--out");
    o.seed = args.getSeed("--seed", 1);
    o.init = args.get("--init", "");
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
    std::vector<CurvePoint> points;
    trainer.run([&](const TestbedStepRecord& r) {
        points.push_back({double(r.step), double(r.length), r.loss, r.answerExact, r.copyAccuracy, r.seconds});
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
    if (curve.is_open()) {
        const std::string c = args.get("--curve"), svg = c.substr(0, c.rfind('.')) + ".svg";
        writeCurveChart(points, svg);
        std::printf("wrote %s\n", svg.c_str());
    }
    return 0;
}

}  // namespace kvlens
