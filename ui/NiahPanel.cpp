#include "ui/NiahPanel.h"

#include <QComboBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QListWidget>
#include <QPushButton>
#include <QVBoxLayout>
#include <cmath>

#include "core/Methods.h"
#include "sessions/NiahGrid.h"
#include "sessions/SessionStore.h"
#include "ui/NiahHeatmap.h"

namespace kvlens::ui {
namespace {

using sessions::NiahGrid;

QString percent(double v) { return std::isnan(v) ? QString("-") : QString::number(100.0 * v, 'f', 1) + "%"; }

// The answer on one line, long ones cut.
QString shortAnswer(const std::string& answer) {
    QString a = QString::fromStdString(answer);
    a.replace('\n', "\\n");
    return a.size() > 40 ? a.left(39) + QChar(0x2026) : a;
}

QString depthLabel(double d) { return QString::number(d, 'g', 4) + "%"; }

}  // namespace

NiahPanel::NiahPanel(QWidget* parent) : QWidget(parent) {
    setObjectName("niahPanel");
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(4, 4, 4, 4);
    storeLabel_ = new QLabel("No store open");
    storeLabel_->setObjectName("niahStore");
    storeLabel_->setTextInteractionFlags(Qt::TextSelectableByMouse);
    layout->addWidget(storeLabel_);

    auto* row = new QHBoxLayout;
    session_ = new QComboBox;
    session_->setObjectName("niahSession");
    session_->setToolTip("Sessions of the store that hold needle runs (kvlens niah --save)");
    groupBox_ = new QComboBox;
    groupBox_->setObjectName("niahGroup");
    groupBox_->setToolTip("The task and where its question was: inside the captured prompt (query-aware),\n"
                          "or after the compressed context (--question-after, query-agnostic)");
    kindBox_ = new QComboBox;
    kindBox_->setObjectName("niahKind");
    kindBox_->setToolTip("The method and budget shown");
    metricBox_ = new QComboBox;
    metricBox_->setObjectName("niahMetric");
    metricBox_->addItem("accuracy (contains)", int(Metric::Contains));
    metricBox_->addItem("exact", int(Metric::Exact));
    metricBox_->addItem("needle kept", int(Metric::NeedleKept));
    metricBox_->setToolTip("contains: the share of the expected values in the greedy answer;\n"
                           "needle kept: the share of the needle's token positions each head kept (mean)");
    refreshButton_ = new QPushButton("Refresh");
    refreshButton_->setToolTip("Read the store again (a sweep may still be writing to it)");
    for (QWidget* w : {static_cast<QWidget*>(session_), static_cast<QWidget*>(groupBox_),
                       static_cast<QWidget*>(kindBox_), static_cast<QWidget*>(metricBox_)})
        row->addWidget(w, 1);
    row->addWidget(refreshButton_);
    layout->addLayout(row);

    heatmap_ = new NiahHeatmap;
    heatmap_->setObjectName("niahHeatmap");
    heatmap_->setToolTip("Click a cell to open its sample: the prompt is captured again and the\n"
                         "needle's positions are marked in the kept-positions view");
    layout->addWidget(heatmap_, 3);
    summary_ = new QLabel;
    summary_->setObjectName("niahSummary");
    summary_->setWordWrap(true);
    layout->addWidget(summary_);
    samples_ = new QListWidget;
    samples_->setObjectName("niahSamples");
    samples_->setToolTip("The samples of the clicked cell; click one to open it");
    layout->addWidget(samples_, 1);

    connect(session_, &QComboBox::currentTextChanged, this, [this](const QString& name) {
        if (!filling_ && !name.isEmpty()) showSession(name);
    });
    connect(groupBox_, qOverload<int>(&QComboBox::currentIndexChanged), this, [this](int i) {
        if (!filling_) showGroup(i);
    });
    connect(kindBox_, qOverload<int>(&QComboBox::currentIndexChanged), this, [this](int i) {
        if (!filling_) showKind(i);
    });
    connect(metricBox_, qOverload<int>(&QComboBox::currentIndexChanged), this, [this](int) {
        if (!filling_) showMetric(Metric(metricBox_->currentData().toInt()));
    });
    connect(refreshButton_, &QPushButton::clicked, this, &NiahPanel::refresh);
    connect(heatmap_, &NiahHeatmap::cellClicked, this, [this](int r, int c) { openCell(r, c); });
    connect(samples_, &QListWidget::itemClicked, this,
            [this](QListWidgetItem* item) { openSample(samples_->row(item)); });
    setStore(nullptr);
}

NiahPanel::~NiahPanel() = default;

bool NiahPanel::guarded(const std::function<void()>& work) {
    try {
        work();
        return true;
    } catch (const std::exception& e) {
        emit errorOccurred(QString::fromUtf8(e.what()).simplified());
    }
    return false;
}

void NiahPanel::setStore(std::shared_ptr<sessions::SessionStore> store) {
    store_ = std::move(store);
    storeLabel_->setText(store_ ? "Store: " + QString::fromStdString(store_->path()) : QString("No store open"));
    session_->clear();
    refresh();
}

void NiahPanel::refresh() {
    const QString keep = session_->currentText();
    const QString keepGroup = groupBox_->currentText(), keepKind = kindBox_->currentText();
    const Metric keepMetric = metric_;
    QStringList names;
    if (store_) {
        guarded([&] {
            for (const sessions::SessionInfo& s : store_->sessions())
                if (s.niahRunCount > 0) names << QString::fromStdString(s.name);
        });
    }
    filling_ = true;
    session_->clear();
    session_->addItems(names);
    filling_ = false;
    session_->setEnabled(!names.isEmpty());
    refreshButton_->setEnabled(store_ != nullptr);
    if (names.isEmpty()) {
        grid_.reset();
        group_ = -1;
        fillGroups();
        return;
    }
    showSession(names.contains(keep) ? keep : names.front());
    if (const int g = groupBox_->findText(keepGroup); g >= 0) showGroup(g);
    if (const int k = kindBox_->findText(keepKind); k >= 0) showKind(k);
    showMetric(keepMetric);
}

bool NiahPanel::showSession(const QString& name) {
    if (!store_) return false;
    std::vector<sessions::NiahRunRecord> runs;
    if (!guarded([&] { runs = store_->niahRuns(store_->session(name.toStdString()).id); })) return false;
    grid_ = std::make_unique<NiahGrid>(std::move(runs));
    filling_ = true;
    if (session_->findText(name) < 0) session_->addItem(name);
    session_->setCurrentText(name);
    filling_ = false;
    group_ = grid_->groups().empty() ? -1 : 0;
    fillGroups();
    return true;
}

void NiahPanel::fillGroups() {
    if (!grid_ || group_ >= static_cast<int>(grid_->groups().size())) group_ = -1;
    filling_ = true;
    groupBox_->clear();
    if (grid_)
        for (const NiahGrid::Group& g : grid_->groups())
            groupBox_->addItem(QString::fromStdString(g.task) +
                               (g.questionAfter ? ", question after the compression" : ", question inside"));
    groupBox_->setCurrentIndex(group_);
    filling_ = false;
    groupBox_->setEnabled(groupBox_->count() > 0);
    if (!grid_ || group_ >= static_cast<int>(grid_->groups().size())) group_ = -1;
    kind_ = group_ >= 0 ? 0 : -1;
    // The first compressed method rather than FullKV, when there is one.
    if (group_ >= 0) {
        const auto& kinds = grid_->groups()[static_cast<size_t>(group_)].kinds;
        for (size_t i = 0; i < kinds.size(); ++i)
            if (kinds[i].first != methods::info(MethodId::Full).name) {
                kind_ = static_cast<int>(i);
                break;
            }
    }
    fillKinds();
}

void NiahPanel::fillKinds() {
    filling_ = true;
    kindBox_->clear();
    if (grid_ && group_ >= 0)
        for (const NiahGrid::Kind& k : grid_->groups()[static_cast<size_t>(group_)].kinds)
            kindBox_->addItem(QString::fromStdString(NiahGrid::kindLabel(k)));
    kindBox_->setCurrentIndex(kind_);
    filling_ = false;
    kindBox_->setEnabled(kindBox_->count() > 0);
    fillHeatmap();
}

void NiahPanel::showGroup(int index) {
    if (!grid_ || index < 0 || index >= static_cast<int>(grid_->groups().size())) return;
    const QString kind = kindBox_->currentText();
    group_ = index;
    fillGroups();
    if (const int k = kindBox_->findText(kind); k >= 0) showKind(k);  // the same method, if the group has it
}

void NiahPanel::showKind(int index) {
    if (!grid_ || group_ < 0 || index < 0 ||
        index >= static_cast<int>(grid_->groups()[static_cast<size_t>(group_)].kinds.size()))
        return;
    kind_ = index;
    fillKinds();
}

void NiahPanel::showMetric(Metric metric) {
    metric_ = metric;
    filling_ = true;
    metricBox_->setCurrentIndex(metricBox_->findData(int(metric)));
    filling_ = false;
    fillHeatmap();
}

QString NiahPanel::currentSession() const { return grid_ ? session_->currentText() : QString(); }

QStringList NiahPanel::sessionNames() const {
    QStringList names;
    for (int i = 0; i < session_->count(); ++i) names << session_->itemText(i);
    return names;
}

QStringList NiahPanel::groupNames() const {
    QStringList names;
    for (int i = 0; i < groupBox_->count(); ++i) names << groupBox_->itemText(i);
    return names;
}

QStringList NiahPanel::kindNames() const {
    QStringList names;
    for (int i = 0; i < kindBox_->count(); ++i) names << kindBox_->itemText(i);
    return names;
}

void NiahPanel::fillHeatmap() {
    cellRuns_.clear();
    samples_->clear();
    if (!grid_ || group_ < 0 || kind_ < 0) {
        heatmap_->clear();
        summary_->setText(store_ ? "No session of this store holds needle runs: run kvlens niah ... --save "
                                   "--store " + QString::fromStdString(store_->path()) + "."
                                 : QString("Open a session store (File > Open store)."));
        return;
    }
    const NiahGrid::Group& g = grid_->groups()[static_cast<size_t>(group_)];
    const NiahGrid::Kind& k = g.kinds[static_cast<size_t>(kind_)];
    QStringList rows, columns;
    for (double d : g.depths) rows << depthLabel(d);
    for (int64_t L : g.lengths) columns << QString("%1 tokens").arg(L);
    std::vector<double> values;
    for (double d : g.depths) {
        for (int64_t L : g.lengths) {
            const NiahGrid::Cell* c = g.cell(k, d, L);
            values.push_back(!c                            ? NAN
                             : metric_ == Metric::Contains ? c->means.contains.value()
                             : metric_ == Metric::Exact    ? c->means.exact.value()
                                                           : c->means.kept.value());
        }
    }
    heatmap_->setData(rows, columns, std::move(values), metricBox_->currentText());
    summary_->setText(summaryText() + "\nClick a cell to open its sample.");
}

QString NiahPanel::summaryText() const {
    if (!grid_ || group_ < 0 || kind_ < 0) return {};
    const NiahGrid::Group& g = grid_->groups()[static_cast<size_t>(group_)];
    const NiahGrid::Kind& k = g.kinds[static_cast<size_t>(kind_)];
    const sessions::NiahMeans& m = g.overall.at(k);
    return QString("%1 over %2 runs: contains %3, exact %4, needle kept %5, agreement %6")
        .arg(QString::fromStdString(NiahGrid::kindLabel(k)))
        .arg(m.runs)
        .arg(percent(m.contains.value()), percent(m.exact.value()), percent(m.kept.value()),
             percent(m.agreement.value()));
}

void NiahPanel::listCell(int row, int column) {
    cellRuns_.clear();
    samples_->clear();
    if (!grid_ || group_ < 0 || kind_ < 0) return;
    const NiahGrid::Group& g = grid_->groups()[static_cast<size_t>(group_)];
    if (row < 0 || column < 0 || row >= static_cast<int>(g.depths.size()) ||
        column >= static_cast<int>(g.lengths.size()))
        return;
    const NiahGrid::Cell* c =
        g.cell(g.kinds[static_cast<size_t>(kind_)], g.depths[static_cast<size_t>(row)], g.lengths[static_cast<size_t>(column)]);
    if (!c) return;
    cellRuns_ = c->runs;
    for (const sessions::NiahRunRecord* r : cellRuns_) {
        QStringList expected;
        for (const std::string& e : r->expected) expected << QString::fromStdString(e);
        samples_->addItem(QString("sample %1: %2 tokens, depth %3, answer '%4' (expected %5): contains %6, "
                                  "needle kept %7")
                              .arg(r->sample)
                              .arg(r->tokens)
                              .arg(depthLabel(r->depth), shortAnswer(r->answer), expected.join(", "),
                                   percent(r->contains), percent(r->needleKept)));
    }
}

bool NiahPanel::openCell(int row, int column) {
    listCell(row, column);
    if (cellRuns_.empty()) return false;
    heatmap_->setSelectedCell(row, column);
    return openSample(0);
}

bool NiahPanel::openSample(int index) {
    if (!store_ || index < 0 || index >= static_cast<int>(cellRuns_.size())) return false;
    const sessions::NiahRunRecord run = *cellRuns_[static_cast<size_t>(index)];
    sessions::ModelRecord model;
    if (!guarded([&] { model = store_->model(run.modelId); })) return false;
    samples_->setCurrentRow(index);
    emit sampleRequested(run, model);
    return true;
}

QStringList NiahPanel::sampleLines() const {
    QStringList lines;
    for (int i = 0; i < samples_->count(); ++i) lines << samples_->item(i)->text();
    return lines;
}

}  // namespace kvlens::ui
