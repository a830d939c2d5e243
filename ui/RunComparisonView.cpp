// Baseline-versus-run comparison: strips of one layer, Jaccard, metrics and deltas.
#include "ui/RunComparisonView.h"

#include <QGridLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QSignalBlocker>
#include <QSpinBox>
#include <QVBoxLayout>
#include <algorithm>
#include <cmath>
#include <numeric>

#include "core/SelectionOverlap.h"
#include "ui/DisplayText.h"
#include "ui/KeptDeltaStrips.h"

namespace kvlens::ui {

namespace {

QString runName(const sessions::RunRecord& run) {
    return "#" + QString::number(run.id) + " " + DisplayText::method(run.params);
}

QLabel* valueLabel(QWidget* parent, const QString& name) {
    auto* label = new QLabel(parent);
    label->setObjectName(name);
    label->setAlignment(Qt::AlignRight | Qt::AlignVCenter);
    label->setTextInteractionFlags(Qt::TextSelectableByMouse);
    return label;
}

}  // namespace

RunComparisonView::RunComparisonView(QWidget* parent) : QWidget(parent) {
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(4, 4, 4, 4);

    auto* header = new QHBoxLayout;
    title_ = new QLabel(this);
    title_->setObjectName("title");
    title_->setTextInteractionFlags(Qt::TextSelectableByMouse);
    header->addWidget(title_, 1);
    header->addWidget(new QLabel("Layer", this));
    layerBox_ = new QSpinBox(this);
    layerBox_->setObjectName("layer");
    layerBox_->setEnabled(false);
    header->addWidget(layerBox_);
    jaccardLabel_ = new QLabel(this);
    jaccardLabel_->setObjectName("jaccard");
    jaccardLabel_->setToolTip(
        "|A \u2229 B| / |A \u222a B| of the positions each query head reads, averaged over the "
        "query heads");
    header->addWidget(jaccardLabel_);
    layout->addLayout(header);

    message_ = new QLabel(this);
    message_->setObjectName("message");
    message_->setWordWrap(true);
    layout->addWidget(message_);

    strips_ = new KeptDeltaStrips(this);
    layout->addWidget(strips_);

    metrics_ = new QWidget(this);
    auto* grid = new QGridLayout(metrics_);
    grid->setContentsMargins(8, 0, 8, 0);
    grid->setHorizontalSpacing(24);
    headerA_ = new QLabel(metrics_);
    headerB_ = new QLabel(metrics_);
    auto* headerDelta = new QLabel("B \u2212 A", metrics_);
    for (QLabel* h : {headerA_, headerB_, headerDelta}) {
        h->setAlignment(Qt::AlignRight | Qt::AlignVCenter);
        QFont bold = h->font();
        bold.setBold(true);
        h->setFont(bold);
    }
    grid->addWidget(headerA_, 0, 1);
    grid->addWidget(headerB_, 0, 2);
    grid->addWidget(headerDelta, 0, 3);
    struct Named {
        MetricRow* row;
        const char* key;
        const char* text;
    };
    const Named rows[] = {{&ratio_, "ratio", "KV ratio"},
                          {&agreement_, "agreement", "Token agreement"},
                          {&kl_, "kl", "Mean KL (nats)"},
                          {&top1_, "top1", "Top-1 agreement"},
                          {&hit_, "hit", "Hit rate"}};
    int r = 1;
    for (const Named& n : rows) {
        grid->addWidget(new QLabel(n.text, metrics_), r, 0);
        n.row->a = valueLabel(metrics_, QString(n.key) + ".a");
        n.row->b = valueLabel(metrics_, QString(n.key) + ".b");
        n.row->delta = valueLabel(metrics_, QString(n.key) + ".delta");
        grid->addWidget(n.row->a, r, 1);
        grid->addWidget(n.row->b, r, 2);
        grid->addWidget(n.row->delta, r, 3);
        ++r;
    }
    grid->setColumnStretch(4, 1);
    layout->addWidget(metrics_);
    layout->addStretch(1);

    connect(layerBox_, qOverload<int>(&QSpinBox::valueChanged), this, &RunComparisonView::setLayer);
    clear("Pin a run as the baseline, then select another run to compare it with");
}

RunComparisonView::~RunComparisonView() = default;

QSize RunComparisonView::sizeHint() const {
    // What a few heads need, whatever is shown now: a splitter sizes the view from its
    // hint before the first comparison arrives.
    return QSize(800, 520);
}

QString RunComparisonView::mismatch(const sessions::RunRecord& a, const sessions::RunRecord& b) {
    const QString pair = "Runs #" + QString::number(a.id) + " and #" + QString::number(b.id) + " ";
    for (const sessions::RunRecord* run : {&a, &b}) {
        const Selection& s = run->selection;
        if (s.layers() == 0 || s.promptLength <= 0 || s.headsPerLayer() <= 0) {
            QString why = "Run #" + QString::number(run->id) + " has no selection to compare";
            if (run->status == "failed")
                why += " (it failed: " + QString::fromStdString(run->error) + ")";
            return why;
        }
    }
    const Selection& sa = a.selection;
    const Selection& sb = b.selection;
    if (a.promptId != b.promptId) {
        return pair + "were made on different prompts (prompt " + QString::number(a.promptId) +
               " vs " + QString::number(b.promptId) + "): their positions do not line up";
    }
    if (sa.promptLength != sb.promptLength) {
        return pair + "have different prompt lengths (" + QString::number(sa.promptLength) +
               " vs " + QString::number(sb.promptLength) + " tokens)";
    }
    if (sa.layers() != sb.layers()) {
        return pair + "have different layer counts (" + QString::number(sa.layers()) + " vs " +
               QString::number(sb.layers()) + ")";
    }
    if (!SelectionOverlap::comparable(sa, sb)) {
        return pair + "were made on models with different heads (" +
               QString::number(sa.queryHeads) + " query / " + QString::number(sa.kvHeads) +
               " KV vs " + QString::number(sb.queryHeads) + " / " + QString::number(sb.kvHeads) +
               ")";
    }
    // A selection whose head lists do not match its own counts cannot be drawn either.
    for (const Selection* s : {&sa, &sb}) {
        for (const auto& layer : s->kept) {
            if (int64_t(layer.size()) != s->headsPerLayer()) {
                return pair +
                       "cannot be compared: a selection's head lists do not match its "
                       "head count";
            }
        }
    }
    return {};
}

void RunComparisonView::setRuns(const sessions::RunRecord& a, const sessions::RunRecord& b) {
    a_ = a;
    b_ = b;
    jaccardPerLayer_.clear();
    title_->setText("A (baseline): " + runName(a) + "    B: " + runName(b));
    headerA_->setText("A #" + QString::number(a.id));
    headerB_->setText("B #" + QString::number(b.id));
    fillMetrics();
    metrics_->show();
    const QString why = mismatch(a, b);
    if (!why.isEmpty()) {
        showMessage(why);
        return;
    }
    jaccardPerLayer_ = SelectionOverlap::jaccardPerLayer(a.selection, b.selection);
    message_->clear();
    message_->hide();
    strips_->show();
    layerBox_->setEnabled(true);
    {
        const QSignalBlocker block(layerBox_);
        layerBox_->setRange(0, int(a.selection.layers()) - 1);
    }
    layer_ = std::clamp(layer_, 0, int(a.selection.layers()) - 1);
    showLayer();
}

void RunComparisonView::clear(const QString& why) {
    a_.reset();
    b_.reset();
    jaccardPerLayer_.clear();
    title_->clear();
    metrics_->hide();
    showMessage(why);
}

void RunComparisonView::showMessage(const QString& why) {
    jaccardPerLayer_.clear();
    strips_->clear();
    strips_->hide();
    layerBox_->setEnabled(false);
    jaccardLabel_->clear();
    message_->setText(why);
    message_->show();
}

void RunComparisonView::setLayer(int layer) {
    if (jaccardPerLayer_.empty()) {
        layer_ = std::max(layer, 0);
        return;
    }
    layer = std::clamp(layer, 0, int(jaccardPerLayer_.size()) - 1);
    const bool changed = layer != layer_;
    layer_ = layer;
    showLayer();
    if (changed) emit layerChanged(layer_);
}

void RunComparisonView::showLayer() {
    {
        const QSignalBlocker block(layerBox_);
        layerBox_->setValue(layer_);
    }
    const Selection& sa = a_->selection;
    const Selection& sb = b_->selection;
    strips_->setLayer(sa, sb, layer_);
    const auto keptText = [&](const sessions::RunRecord& run, const char* which) {
        const Selection& s = run.selection;
        const double perHead = double(s.entries(layer_)) / double(s.headsPerLayer());
        return QString("%1  %2: %3 of %4 positions kept per %5 on average")
            .arg(which, runName(run), QString::number(perHead, 'f', perHead < 100 ? 1 : 0))
            .arg(s.promptLength)
            .arg(s.gqa == GqaMode::KvHead ? "KV head" : "query head");
    };
    strips_->setCaptions(keptText(*a_, "A"), keptText(*b_, "B"));
    const double mean = std::accumulate(jaccardPerLayer_.begin(), jaccardPerLayer_.end(), 0.0) /
                        double(jaccardPerLayer_.size());
    jaccardLabel_->setText(QString("Jaccard: %1 (mean over layers %2)")
                               .arg(QString::number(jaccardPerLayer_[size_t(layer_)], 'f', 3),
                                    QString::number(mean, 'f', 3)));
}

void RunComparisonView::fillMetrics() {
    const RunMetrics& ma = a_->metrics;
    const RunMetrics& mb = b_->metrics;
    const auto percentRow = [](MetricRow& row, double a, double b) {
        row.a->setText(DisplayText::percent(a));
        row.b->setText(DisplayText::percent(b));
        row.delta->setText(DisplayText::percentDelta(b - a));
    };
    percentRow(ratio_, ma.ratio, mb.ratio);
    percentRow(agreement_, ma.tokenAgreement, mb.tokenAgreement);
    percentRow(top1_, ma.top1Agreement, mb.top1Agreement);
    percentRow(hit_, ma.hitRate, mb.hitRate);
    kl_.a->setText(DisplayText::real(ma.meanKl));
    kl_.b->setText(DisplayText::real(mb.meanKl));
    kl_.delta->setText(DisplayText::realDelta(mb.meanKl - ma.meanKl));
}

QString RunComparisonView::message() const { return message_->text(); }

std::optional<double> RunComparisonView::jaccard() const {
    if (jaccardPerLayer_.empty()) return std::nullopt;
    return jaccardPerLayer_[size_t(layer_)];
}

}  // namespace kvlens::ui
