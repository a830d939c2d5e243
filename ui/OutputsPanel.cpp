// Side-by-side continuations with token-level divergence highlighting, and the metrics.
#include "ui/OutputsPanel.h"

#include "ui/CacheSizeChart.h"

#include <QGridLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QTextCursor>
#include <QTextDocument>
#include <QTextEdit>
#include <QVBoxLayout>
#include <algorithm>

#include "ui/DisplayText.h"

namespace kvlens::ui {

namespace {

QLabel* metricValue(QWidget* parent, const char* name) {
    auto* label = new QLabel(parent);
    label->setObjectName(name);
    label->setTextInteractionFlags(Qt::TextSelectableByMouse);
    QFont bold = label->font();
    bold.setBold(true);
    label->setFont(bold);
    return label;
}

QTextEdit* textView(QWidget* parent, const char* name) {
    auto* view = new QTextEdit(parent);
    view->setObjectName(name);
    view->setReadOnly(true);
    view->setLineWrapMode(QTextEdit::WidgetWidth);
    view->setTextInteractionFlags(Qt::TextSelectableByMouse | Qt::TextSelectableByKeyboard);
    return view;
}

}  // namespace

QColor OutputsPanel::firstDivergenceColor() {
    return QColor(0xe6, 0x9f, 0x00);
}  // Okabe-Ito orange
QColor OutputsPanel::differingColor() { return QColor(0xfb, 0xe0, 0xa8); }  // the same, lighter

OutputsPanel::OutputsPanel(QWidget* parent) : QWidget(parent) {
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(4, 4, 4, 4);

    auto* grid = new QGridLayout;
    grid->setHorizontalSpacing(12);
    agreedPrefix_ = metricValue(this, "agreedPrefix");
    tokenAgreement_ = metricValue(this, "tokenAgreement");
    meanKl_ = metricValue(this, "meanKl");
    top1_ = metricValue(this, "top1Agreement");
    ratio_ = metricValue(this, "ratio");
    hitRate_ = metricValue(this, "hitRate");
    const std::pair<const char*, QLabel*> cells[] = {{"Agreed prefix", agreedPrefix_},
                                                     {"Token agreement", tokenAgreement_},
                                                     {"Mean KL", meanKl_},
                                                     {"Top-1 agreement", top1_},
                                                     {"KV ratio", ratio_},
                                                     {"Hit rate", hitRate_}};
    for (int i = 0; i < 6; ++i) {
        grid->addWidget(new QLabel(QString(cells[i].first) + ":", this), i / 3, (i % 3) * 2);
        grid->addWidget(cells[i].second, i / 3, (i % 3) * 2 + 1);
    }
    grid->setColumnStretch(6, 1);
    layout->addLayout(grid);

    message_ = new QLabel(this);
    message_->setObjectName("message");
    message_->setWordWrap(true);
    layout->addWidget(message_);
    cacheChart_ = new CacheSizeChart(this);
    cacheChart_->hide();
    layout->addWidget(cacheChart_);

    auto* sides = new QHBoxLayout;
    auto* left = new QVBoxLayout;
    left->addWidget(new QLabel("Full cache", this));
    full_ = textView(this, "full");
    left->addWidget(full_, 1);
    auto* right = new QVBoxLayout;
    compressedHeader_ = new QLabel("Compressed", this);
    right->addWidget(compressedHeader_);
    compressed_ = textView(this, "compressed");
    right->addWidget(compressed_, 1);
    sides->addLayout(left, 1);
    sides->addLayout(right, 1);
    layout->addLayout(sides, 1);

    clear("No run yet");
}

QTextDocument* OutputsPanel::fullDocument() const { return full_->document(); }
QTextDocument* OutputsPanel::compressedDocument() const { return compressed_->document(); }
QString OutputsPanel::message() const { return message_->text(); }

std::pair<int, int> OutputsPanel::tokenRange(bool compressed, int step) const {
    return (compressed ? compressedRanges_ : fullRanges_).at(size_t(step));
}

void OutputsPanel::setOutputs(const std::vector<std::string>& fullPieces,
                              const std::vector<std::string>& compressedPieces,
                              const RunMetrics& metrics, const QString& label) {
    setCacheEntries({}, 0, 0);  // shown again by whoever decoded with compression
    const bool byId = metrics.fullTokens.size() == fullPieces.size() &&
                      metrics.tokens.size() == compressedPieces.size();
    const size_t steps = std::max(fullPieces.size(), compressedPieces.size());
    differing_.assign(steps, false);
    firstDivergence_.reset();
    for (size_t i = 0; i < steps; ++i) {
        bool same = i < fullPieces.size() && i < compressedPieces.size();
        if (same) {
            same = byId ? metrics.fullTokens[i] == metrics.tokens[i]
                        : fullPieces[i] == compressedPieces[i];
        }
        differing_[i] = !same;
        if (!same && !firstDivergence_) firstDivergence_ = int(i);
    }
    fill(full_, fullPieces, byId ? &metrics.fullTokens : nullptr, fullRanges_);
    fill(compressed_, compressedPieces, byId ? &metrics.tokens : nullptr, compressedRanges_);
    compressedHeader_->setText(label.isEmpty() ? QString("Compressed") : "Compressed: " + label);
    setMetricTexts(&metrics, steps);
    if (steps == 0) {
        message_->setText("No tokens were generated");
    } else if (firstDivergence_) {
        message_->setText(QString("The continuations diverge at token %1 (after %2 agreed "
                                  "tokens); differing tokens from there on are highlighted")
                              .arg(*firstDivergence_ + 1)
                              .arg(*firstDivergence_));
    } else {
        message_->setText(QString("The two continuations agree on all %1 tokens").arg(steps));
    }
}

void OutputsPanel::fill(QTextEdit* view, const std::vector<std::string>& pieces,
                        const std::vector<int32_t>* ids, std::vector<std::pair<int, int>>& ranges) {
    view->clear();
    ranges.clear();
    QTextCursor cursor(view->document());
    for (size_t i = 0; i < pieces.size(); ++i) {
        QTextCharFormat format;
        const bool highlighted = firstDivergence_ && int(i) >= *firstDivergence_ && differing_[i];
        if (highlighted) {
            format.setBackground(int(i) == *firstDivergence_ ? firstDivergenceColor()
                                                             : differingColor());
        }
        QString tip = QString("token %1").arg(i + 1);
        if (ids) tip += QString(" (id %1)").arg((*ids)[i]);
        format.setToolTip(tip);
        // An empty piece (a control token) would be invisible, and so would its highlight.
        QString text = DisplayText::piece(pieces[i]);
        if (text.isEmpty()) {
            text = QStringLiteral("\u2205");
            format.setForeground(QColor(0x80, 0x80, 0x80));
        }
        const int begin = cursor.position();
        cursor.insertText(text, format);
        ranges.emplace_back(begin, cursor.position());
    }
    view->moveCursor(QTextCursor::Start);
}

void OutputsPanel::setMetricTexts(const RunMetrics* m, size_t steps) {
    if (!m) {
        for (QLabel* l : {agreedPrefix_, tokenAgreement_, meanKl_, top1_, ratio_, hitRate_})
            l->setText(QStringLiteral("\u2014"));
        return;
    }
    agreedPrefix_->setText(QString("%1 of %2 tokens").arg(m->agreedPrefix).arg(steps));
    tokenAgreement_->setText(DisplayText::percent(m->tokenAgreement));
    meanKl_->setText(DisplayText::real(m->meanKl) + " nats");
    top1_->setText(DisplayText::percent(m->top1Agreement));
    ratio_->setText(DisplayText::percent(m->ratio));
    hitRate_->setText(DisplayText::percent(m->hitRate));
}

void OutputsPanel::setCacheEntries(std::vector<int64_t> entries, int64_t budget, int64_t every) {
    cacheChart_->setVisible(!entries.empty());
    cacheChart_->setEntries(std::move(entries), budget, every);
}

void OutputsPanel::clear(const QString& why) {
    setCacheEntries({}, 0, 0);
    differing_.clear();
    firstDivergence_.reset();
    full_->clear();
    compressed_->clear();
    fullRanges_.clear();
    compressedRanges_.clear();
    compressedHeader_->setText("Compressed");
    setMetricTexts(nullptr, 0);
    message_->setText(why);
}

}  // namespace kvlens::ui
