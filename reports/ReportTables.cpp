#include "reports/ReportTables.h"

#include <cmath>

#include "reports/ReportText.h"
#include "core/SelectionOverlap.h"
#include "sessions/ParamText.h"

namespace kvlens {
namespace {

ReportCell text(const std::string& t) { return ReportCell{t}; }

ReportCell num(const std::string& shown, double v) {
    ReportCell c;
    c.text = shown;
    c.value = v;
    c.numeric = true;
    return c;
}

ReportCell integer(int64_t v) { return num(std::to_string(v), double(v)); }

// Marks the best finite value of column `col` among rows whose run is not full.
void markBest(ReportTable& t, const ReportData& d, size_t col, bool higherIsBetter) {
    double best = std::numeric_limits<double>::quiet_NaN();
    for (size_t r = 0; r < t.rows.size(); ++r) {
        if (d.runs[r].params.isFull()) continue;
        const double v = t.rows[r][col].value;
        if (std::isnan(v)) continue;
        if (std::isnan(best) || (higherIsBetter ? v > best : v < best)) best = v;
    }
    if (std::isnan(best)) return;
    for (size_t r = 0; r < t.rows.size(); ++r) {
        if (!d.runs[r].params.isFull() && t.rows[r][col].value == best) t.rows[r][col].best = true;
    }
}

}  // namespace

viz::CsvTable ReportTable::csv() const {
    viz::CsvTable table(columnIds);
    for (const auto& row : rows) {
        std::vector<std::string> fields;
        for (const ReportCell& c : row) fields.push_back(c.numeric ? viz::CsvTable::number(c.value) : c.text);
        table.addRow(fields);
    }
    return table;
}

ReportTable ReportTables::settings(const ReportData& d) {
    ReportTable t;
    t.name = "settings";
    t.title = "Settings of each run";
    t.caption = "Budget: KV entries kept per head, the observation window W included. Each run decoded "
                "its tokens greedily on the full and on the compressed cache.";
    t.header = {"run", "method", "budget", "W", "kernel", "pool", "GQA", "method knobs", "seed", "tokens", "dtype",
                "device"};
    t.columnIds = {"run", "method", "budget", "window", "kernel", "pooling", "gqa", "knobs", "seed", "new_tokens",
                   "dtype", "device"};
    for (const auto& r : d.runs) {
        const PressParams& p = r.params;
        // Every knob the method in effect reads (the table's), but those with a column of their own.
        std::string knobs = methods::knobsText(
            p, KnobSet{Knob::Scorer, Knob::Beta, Knob::Schedule, Knob::Alpha, Knob::Sinks, Knob::Lag, Knob::Chunk,
                       Knob::Future, Knob::Tau1, Knob::Tau2, Knob::Gamma, Knob::Lazy, Knob::LayerWeights,
                       Knob::Sketch, Knob::AttnChunk, Knob::RepeatChunk, Knob::FinchChunk, Knob::Blend, Knob::Think,
                       Knob::Convention});
        if (r.metrics.decodeEvery > 0)
            knobs += (knobs.empty() ? "" : ", ") + std::string("compressed every ") +
                     std::to_string(r.metrics.decodeEvery) + " decode steps";
        if (knobs.empty()) knobs = ReportText::dash();
        const bool pooled = p.reads(Knob::Kernel);
        const bool full = p.info() != nullptr && p.info()->id == MethodId::Full;
        ReportCell budget = full               ? text(ReportText::dash())
                            : p.budget > 0     ? integer(p.budget)
                                               : num(ReportData::budgetText(p), p.budgetRatio);
        t.rowRuns.push_back(r.id);
        t.rows.push_back({integer(r.id), text(p.method), budget,
                          p.usesWindow() ? integer(p.window) : text(ReportText::dash()),
                          pooled ? integer(p.kernel) : text(ReportText::dash()),
                          text(pooled ? sessions::ParamText::of(p.pooling) : ReportText::dash()),
                          text(full ? ReportText::dash() : sessions::ParamText::of(r.selection.gqa)), text(knobs),
                          text(p.reads(Knob::Seed) ? std::to_string(p.seed) : ReportText::dash()),
                          integer(r.newTokens), text(r.dtype), text(r.device)});
    }
    return t;
}

ReportTable ReportTables::metrics(const ReportData& d) {
    ReportTable t;
    t.name = "metrics";
    t.title = "What each run costs against the full cache";
    t.caption = "Best of each column in bold (among the compressed runs; full is the reference): least KV "
                "memory and allocation, highest agreement and hit rate, lowest KL. Agreement and agreed@div compare the two "
                "greedy continuations; KL and top-1 are teacher-forced along the full continuation. " +
                std::string(ReportText::dash()) + ": not measured. KV memory counts the entries kept (less "
                "ThinK's pruned channels); allocated is what the compressed cache's buffers took, room for the "
                "decode steps included (" + std::string(ReportText::dash()) + ": not recorded, runs stored before "
                "the store kept it).";
    t.header = {"run", "method", "budget", "KV memory", "ratio", "agreed@div", "token agreement", "mean KL (nats)",
                "top-1", "hit rate", "allocated"};
    t.columnIds = {"run", "method", "budget", "kv_bytes", "ratio", "agreed_prefix", "token_agreement", "mean_kl",
                   "top1_agreement", "hit_rate", "kv_bytes_allocated"};
    for (const auto& r : d.runs) {
        const RunMetrics& m = r.metrics;
        const double hit = ReportData::hitRate(m);
        t.rowRuns.push_back(r.id);
        t.rows.push_back({integer(r.id), text(r.params.method), text(ReportData::budgetText(r.params)),
                          num(ReportText::bytes(m.bytes), double(m.bytes)), num(ReportText::percent(m.ratio), m.ratio),
                          num(std::to_string(m.agreedPrefix) + "/" + std::to_string(r.newTokens), double(m.agreedPrefix)),
                          num(ReportText::percent(m.tokenAgreement), m.tokenAgreement),
                          num(ReportText::number("%.4g", m.meanKl), m.meanKl),
                          num(ReportText::percent(m.top1Agreement), m.top1Agreement),
                          num(ReportText::percent(hit), hit),
                          m.allocatedBytes > 0 ? num(ReportText::bytes(m.allocatedBytes), double(m.allocatedBytes))
                                               : num(ReportText::dash(), std::nan(""))});
    }
    markBest(t, d, 3, false);
    markBest(t, d, 4, false);
    markBest(t, d, 5, true);
    markBest(t, d, 6, true);
    markBest(t, d, 7, false);
    markBest(t, d, 8, true);
    markBest(t, d, 9, true);
    markBest(t, d, 10, false);
    return t;
}

ReportTable ReportTables::overlap(const ReportData& d) {
    ReportTable t;
    t.name = "overlap_mean";
    t.title = "Mean selection overlap between runs";
    t.caption = "Jaccard |A \xe2\x88\xa9 B| / |A \xe2\x88\xaa B| of the positions each query head reads, mean over "
                "heads and layers (1: the same positions). Columns name the runs by id.";
    const std::vector<size_t> sel = d.selectionRuns();
    t.header = {"run"};
    t.columnIds = {"run"};
    for (size_t j : sel) {
        t.header.push_back("#" + std::to_string(d.runs[j].id));
        t.columnIds.push_back("run_" + std::to_string(d.runs[j].id));
    }
    if (sel.size() < 2) return t;
    for (size_t i : sel) {
        std::vector<ReportCell> row = {text(ReportData::label(d.runs[i]))};
        for (size_t j : sel) {
            if (!SelectionOverlap::comparable(d.runs[i].selection, d.runs[j].selection)) {
                row.push_back(num(ReportText::dash(), std::numeric_limits<double>::quiet_NaN()));
                continue;
            }
            const std::vector<double> per = SelectionOverlap::jaccardPerLayer(d.runs[i].selection, d.runs[j].selection);
            double sum = 0;
            for (double v : per) sum += v;
            const double mean = per.empty() ? std::numeric_limits<double>::quiet_NaN() : sum / double(per.size());
            row.push_back(num(ReportText::number("%.3f", mean), mean));
        }
        t.rowRuns.push_back(d.runs[i].id);
        t.rows.push_back(row);
    }
    return t;
}

viz::CsvTable ReportTables::overlapPerLayer(const ReportData& d) {
    viz::CsvTable table({"run_a", "run_b", "layer", "jaccard"});
    const std::vector<size_t> sel = d.selectionRuns();
    for (size_t a = 0; a < sel.size(); ++a) {
        for (size_t b = a + 1; b < sel.size(); ++b) {
            const auto& ra = d.runs[sel[a]];
            const auto& rb = d.runs[sel[b]];
            if (!SelectionOverlap::comparable(ra.selection, rb.selection)) continue;
            const std::vector<double> per = SelectionOverlap::jaccardPerLayer(ra.selection, rb.selection);
            for (size_t l = 0; l < per.size(); ++l) {
                table.addRow({std::to_string(ra.id), std::to_string(rb.id), std::to_string(l),
                              viz::CsvTable::number(per[l])});
            }
        }
    }
    return table;
}

}  // namespace kvlens
