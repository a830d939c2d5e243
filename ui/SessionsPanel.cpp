// Sessions list and actions, notes, the open session's runs table, and the baseline
// comparison below it.
#include "ui/SessionsPanel.h"

#include <QEvent>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QInputDialog>
#include <QLabel>
#include <QMenu>
#include <QMessageBox>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QSortFilterProxyModel>
#include <QSplitter>
#include <QStandardItemModel>
#include <QTableView>
#include <QTimer>
#include <QTreeWidget>
#include <QVBoxLayout>
#include <cmath>
#include <exception>

#include "sessions/ParamText.h"
#include "sessions/SessionStore.h"
#include "ui/DisplayText.h"
#include "ui/RunComparisonView.h"

namespace kvlens::ui {

namespace {

const QString kDash = QStringLiteral("\u2014");
const QColor kBaselineTint(0xff, 0xf1, 0xcc);

QStandardItem* cell(const QString& text, const QVariant& sortKey, bool number) {
    auto* item = new QStandardItem(text);
    item->setData(sortKey, SessionsPanel::kSortRole);
    item->setEditable(false);
    if (number) item->setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
    return item;
}

// NaN does not order; "not measured" sorts below every measured value instead.
QVariant sortable(double v) { return std::isnan(v) ? -1.0 : v; }

QList<QStandardItem*> runRow(const sessions::RunSummary& r) {
    const bool failed = r.status != "complete";
    QList<QStandardItem*> row;
    row << cell(QString::number(r.id), qlonglong(r.id), true);
    const QString every = r.decodeEvery > 0 ? QString(", every %1").arg(r.decodeEvery) : QString();
    auto* method = cell(DisplayText::method(r.params) + every + (failed ? " (failed)" : ""),
                        DisplayText::method(r.params) + every, false);
    method->setToolTip(QString::fromStdString(sessions::ParamText::toJson(r.params)));
    row << method;
    row << cell(QString::number(r.promptTokens), qlonglong(r.promptTokens), true);
    if (r.params.isFull()) {
        row << cell("all", qlonglong(r.promptTokens), true);
    } else {
        const int64_t entries = DisplayText::budgetEntries(r.params, r.promptTokens);
        QString text = QString::number(entries);
        if (r.params.budget <= 0) text += " (" + DisplayText::percent(r.params.budgetRatio) + ")";
        row << cell(text, qlonglong(entries), true);
    }
    if (failed) {
        for (int c = SessionsPanel::RatioColumn; c <= SessionsPanel::HitRateColumn; ++c)
            row << cell(kDash, -2.0, true);
    } else {
        row << cell(DisplayText::percent(r.ratio), r.ratio, true);
        row << cell(DisplayText::percent(r.tokenAgreement), r.tokenAgreement, true);
        row << cell(DisplayText::real(r.meanKl), r.meanKl, true);
        row << cell(DisplayText::percent(r.top1Agreement), r.top1Agreement, true);
        auto* hit = cell(DisplayText::percent(r.hitRate), sortable(r.hitRate), true);
        if (std::isnan(r.hitRate)) hit->setToolTip("not measured for this run");
        row << hit;
    }
    row << cell(DisplayText::time(r.createdMs), qlonglong(r.createdMs), false);
    row.first()->setData(qlonglong(r.id), SessionsPanel::kRunIdRole);
    return row;
}

}  // namespace

SessionsPanel::SessionsPanel(QWidget* parent) : QWidget(parent) {
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(4, 4, 4, 4);
    storeLabel_ = new QLabel(this);
    storeLabel_->setObjectName("store");
    storeLabel_->setTextInteractionFlags(Qt::TextSelectableByMouse);
    layout->addWidget(storeLabel_);

    auto* splitter = new QSplitter(Qt::Vertical, this);
    splitter->setChildrenCollapsible(false);
    layout->addWidget(splitter, 1);

    // Sessions and the open session's notes, side by side.
    auto* top = new QSplitter(Qt::Horizontal, splitter);
    top->setChildrenCollapsible(false);
    auto* sessionsBox = new QWidget(top);
    auto* sessionsLayout = new QVBoxLayout(sessionsBox);
    sessionsLayout->setContentsMargins(0, 0, 0, 0);
    sessionList_ = new QTreeWidget(sessionsBox);
    sessionList_->setObjectName("sessions");
    sessionList_->setColumnCount(3);
    sessionList_->setHeaderLabels({"Session", "Runs", "Updated"});
    sessionList_->setRootIsDecorated(false);
    sessionList_->setUniformRowHeights(true);
    sessionList_->setSelectionMode(QAbstractItemView::SingleSelection);
    sessionList_->header()->setSectionResizeMode(0, QHeaderView::Stretch);
    sessionList_->header()->setSectionResizeMode(1, QHeaderView::ResizeToContents);
    sessionList_->header()->setSectionResizeMode(2, QHeaderView::ResizeToContents);
    sessionList_->header()->setStretchLastSection(false);
    sessionsLayout->addWidget(sessionList_, 1);
    auto* sessionButtons = new QHBoxLayout;
    openButton_ = new QPushButton("Open", sessionsBox);
    newButton_ = new QPushButton("New\u2026", sessionsBox);
    renameButton_ = new QPushButton("Rename\u2026", sessionsBox);
    deleteButton_ = new QPushButton("Delete\u2026", sessionsBox);
    openButton_->setObjectName("open");
    newButton_->setObjectName("new");
    renameButton_->setObjectName("rename");
    deleteButton_->setObjectName("delete");
    for (QPushButton* b : {openButton_, newButton_, renameButton_, deleteButton_})
        sessionButtons->addWidget(b);
    sessionButtons->addStretch(1);
    sessionsLayout->addLayout(sessionButtons);

    auto* notesBox = new QWidget(top);
    auto* notesLayout = new QVBoxLayout(notesBox);
    notesLayout->setContentsMargins(0, 0, 0, 0);
    notesLabel_ = new QLabel("Notes", notesBox);
    notesLayout->addWidget(notesLabel_);
    notes_ = new QPlainTextEdit(notesBox);
    notes_->setObjectName("notes");
    notes_->setPlaceholderText("Notes of the open session, saved as you type");
    notes_->installEventFilter(this);
    notesLayout->addWidget(notes_, 1);
    top->setStretchFactor(0, 3);
    top->setStretchFactor(1, 2);

    // The open session's runs.
    auto* runsBox = new QWidget(splitter);
    auto* runsLayout = new QVBoxLayout(runsBox);
    runsLayout->setContentsMargins(0, 0, 0, 0);
    runsLabel_ = new QLabel(runsBox);
    runsLayout->addWidget(runsLabel_);
    runModel_ = new QStandardItemModel(0, ColumnCount, this);
    runModel_->setHorizontalHeaderLabels({"Run", "Method", "Prompt", "Budget", "KV ratio",
                                          "Agreement", "Mean KL", "Top-1", "Hit rate", "Created"});
    sortModel_ = new QSortFilterProxyModel(this);
    sortModel_->setSourceModel(runModel_);
    sortModel_->setSortRole(kSortRole);
    runTable_ = new QTableView(runsBox);
    runTable_->setObjectName("runs");
    runTable_->setModel(sortModel_);
    runTable_->setSortingEnabled(true);
    runTable_->sortByColumn(IdColumn, Qt::AscendingOrder);
    runTable_->setSelectionBehavior(QAbstractItemView::SelectRows);
    runTable_->setSelectionMode(QAbstractItemView::SingleSelection);
    runTable_->setEditTriggers(QAbstractItemView::NoEditTriggers);
    runTable_->setContextMenuPolicy(Qt::CustomContextMenu);
    runTable_->verticalHeader()->hide();
    runTable_->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
    runTable_->horizontalHeader()->setStretchLastSection(true);
    runsLayout->addWidget(runTable_, 1);
    auto* runButtons = new QHBoxLayout;
    pinButton_ = new QPushButton("Pin as baseline", runsBox);
    loadButton_ = new QPushButton("Load in views", runsBox);
    pinButton_->setObjectName("pin");
    loadButton_->setObjectName("load");
    runButtons->addWidget(pinButton_);
    runButtons->addWidget(loadButton_);
    runButtons->addStretch(1);
    runsLayout->addLayout(runButtons);

    comparison_ = new RunComparisonView(splitter);
    splitter->setStretchFactor(0, 2);
    splitter->setStretchFactor(1, 3);
    splitter->setStretchFactor(2, 5);
    splitter->setSizes({200, 300, 500});

    notesTimer_ = new QTimer(this);
    notesTimer_->setSingleShot(true);
    notesTimer_->setInterval(kNotesDelayMs);
    connect(notesTimer_, &QTimer::timeout, this, &SessionsPanel::saveNotes);
    connect(notes_, &QPlainTextEdit::textChanged, this, [this] {
        if (loadingNotes_) return;
        notesDirty_ = true;
        notesTimer_->start();  // restarts: saves once typing pauses
    });

    connect(sessionList_, &QTreeWidget::itemDoubleClicked, this,
            [this](QTreeWidgetItem* item) { openSession(item->text(0)); });
    connect(sessionList_, &QTreeWidget::itemSelectionChanged, this, &SessionsPanel::updateActions);
    connect(openButton_, &QPushButton::clicked, this,
            [this] { openSession(selectedSessionName()); });
    connect(newButton_, &QPushButton::clicked, this, &SessionsPanel::askNew);
    connect(renameButton_, &QPushButton::clicked, this, &SessionsPanel::askRename);
    connect(deleteButton_, &QPushButton::clicked, this, &SessionsPanel::askDelete);

    connect(runTable_->selectionModel(), &QItemSelectionModel::selectionChanged, this, [this] {
        updateActions();
        updateComparison();
    });
    connect(runTable_, &QTableView::doubleClicked, this, [this](const QModelIndex& index) {
        const QModelIndex source = sortModel_->mapToSource(index);
        emit runActivated(runModel_->item(source.row(), IdColumn)->data(kRunIdRole).toLongLong());
    });
    connect(runTable_, &QTableView::customContextMenuRequested, this, &SessionsPanel::showRunMenu);
    connect(pinButton_, &QPushButton::clicked, this, [this] {
        const qint64 id = selectedRunId();
        pinBaseline(id == baselineId_ ? 0 : id);
    });
    connect(loadButton_, &QPushButton::clicked, this, [this] {
        if (const qint64 id = selectedRunId()) emit runActivated(id);
    });

    namePrompt_ = [this](const QString& title, const QString& label,
                         const QString& initial) -> std::optional<QString> {
        bool ok = false;
        const QString text =
            QInputDialog::getText(this, title, label, QLineEdit::Normal, initial, &ok);
        if (!ok) return std::nullopt;
        return text;
    };
    setStore(nullptr);
}

SessionsPanel::~SessionsPanel() { saveNotes(); }

bool SessionsPanel::guarded(const std::function<void()>& work) {
    try {
        work();
        return true;
    } catch (const std::exception& e) {
        // The store's messages are one line already; simplified() makes sure of it.
        lastError_ = QString::fromUtf8(e.what()).simplified();
        emit errorOccurred(lastError_);
    }
    return false;
}

void SessionsPanel::setStore(std::shared_ptr<sessions::SessionStore> store) {
    saveNotes();
    store_ = std::move(store);
    current_.clear();
    notesSession_.clear();
    notesDirty_ = false;
    const bool hadBaseline = baselineId_ != 0;
    baselineId_ = 0;
    baseline_.reset();
    storeLabel_->setText(store_ ? "Store: " + QString::fromStdString(store_->path())
                                : QString("No store open"));
    refresh();
    if (hadBaseline) emit baselineChanged(0);
}

void SessionsPanel::refresh() {
    fillSessions();
    fillRuns();
    if (notesSession_ != current_) loadNotes();
    updateActions();
}

void SessionsPanel::fillSessions() {
    const QString selected = selectedSessionName();
    sessionList_->clear();
    if (!store_) return;
    std::vector<sessions::SessionInfo> all;
    if (!guarded([&] { all = store_->sessions(); })) return;
    bool currentExists = false;
    for (const auto& s : all) {
        const QString name = QString::fromStdString(s.name);
        auto* item = new QTreeWidgetItem(sessionList_);
        item->setText(0, name);
        item->setText(1, QString::number(s.runCount));
        item->setText(2, DisplayText::time(s.updatedMs));
        item->setTextAlignment(1, Qt::AlignRight | Qt::AlignVCenter);
        if (!s.notes.empty()) item->setToolTip(0, QString::fromStdString(s.notes));
        if (name == current_) {
            currentExists = true;
            QFont bold = item->font(0);
            bold.setBold(true);
            for (int c = 0; c < 3; ++c) item->setFont(c, bold);
        }
        if (name == (selected.isEmpty() ? current_ : selected)) item->setSelected(true);
    }
    // Deleted or renamed elsewhere (the CLI): nothing to keep open.
    if (!current_.isEmpty() && !currentExists) setCurrent(QString());
}

void SessionsPanel::setCurrent(const QString& name) {
    current_ = name;
    if (notesSession_ != name) {
        notesTimer_->stop();
        notesDirty_ = false;
    }
    const bool hadBaseline = baselineId_ != 0;
    baselineId_ = 0;
    baseline_.reset();
    if (hadBaseline) emit baselineChanged(0);
}

void SessionsPanel::fillRuns() {
    const qint64 selected = selectedRunId();
    runModel_->removeRows(0, runModel_->rowCount());
    std::vector<sessions::RunSummary> runs;
    QString why;
    if (!store_) {
        why = "No store open";
    } else if (current_.isEmpty()) {
        why = "No session open";
    } else if (!guarded([&] { runs = store_->runs(store_->session(current_.toStdString()).id); })) {
        why = lastError_;
    }
    if (!why.isEmpty()) {
        runsLabel_->setText(why);
        if (baselineId_ != 0) {
            baselineId_ = 0;
            baseline_.reset();
            emit baselineChanged(0);
        }
        comparison_->clear(why);
        return;
    }
    runsLabel_->setText(QString("Runs of '%1' (%2)").arg(current_).arg(runs.size()));
    bool baselineExists = false;
    for (const auto& r : runs) {
        runModel_->appendRow(runRow(r));
        baselineExists |= r.id == baselineId_;
    }
    if (baselineId_ != 0 && !baselineExists) {
        baselineId_ = 0;
        baseline_.reset();
        emit baselineChanged(0);
    }
    markBaseline();
    if (selected != 0) selectRun(selected);
    updateComparison();
}

void SessionsPanel::loadNotes() {
    notesTimer_->stop();
    loadingNotes_ = true;
    notes_->clear();
    notesSession_ = current_;
    notesDirty_ = false;
    if (store_ && !current_.isEmpty()) {
        guarded([&] {
            notes_->setPlainText(
                QString::fromStdString(store_->session(current_.toStdString()).notes));
        });
    }
    loadingNotes_ = false;
    notesLabel_->setText(current_.isEmpty() ? QString("Notes") : "Notes of '" + current_ + "'");
}

void SessionsPanel::saveNotes() {
    notesTimer_->stop();
    if (!notesDirty_ || !store_ || notesSession_.isEmpty()) return;
    // Cleared even on failure: the text stays in the editor and the next edit retries,
    // rather than every focus change repeating the same error.
    notesDirty_ = false;
    const std::string text = notes_->toPlainText().toStdString();
    if (guarded([&] { store_->setNotes(notesSession_.toStdString(), text); })) fillSessions();
}

bool SessionsPanel::notesSavePending() const { return notesDirty_ && notesTimer_->isActive(); }

bool SessionsPanel::eventFilter(QObject* watched, QEvent* event) {
    if (watched == notes_ && event->type() == QEvent::FocusOut) saveNotes();
    return QWidget::eventFilter(watched, event);
}

bool SessionsPanel::openSession(const QString& name) {
    if (!store_) {
        emit errorOccurred("No session store is open");
        return false;
    }
    if (!guarded([&] { store_->session(name.toStdString()); })) return false;
    saveNotes();
    if (name != current_) setCurrent(name);
    fillSessions();
    fillRuns();
    loadNotes();
    updateActions();
    emit sessionOpened(name);
    return true;
}

bool SessionsPanel::createSession(const QString& name) {
    if (!store_) {
        emit errorOccurred("No session store is open");
        return false;
    }
    if (!guarded([&] { store_->createSession(name.toStdString()); })) return false;
    return openSession(name);
}

bool SessionsPanel::renameSession(const QString& from, const QString& to) {
    if (!store_) {
        emit errorOccurred("No session store is open");
        return false;
    }
    saveNotes();  // under the old name, before it changes
    if (!guarded([&] { store_->renameSession(from.toStdString(), to.toStdString()); }))
        return false;
    if (from == current_) {
        current_ = to;
        if (notesSession_ == from) notesSession_ = to;
        notesLabel_->setText("Notes of '" + current_ + "'");
    }
    if (sessionList_->selectedItems().size() == 1 &&
        sessionList_->selectedItems().first()->text(0) == from)
        sessionList_->clearSelection();
    fillSessions();
    for (int i = 0; i < sessionList_->topLevelItemCount(); ++i) {
        if (sessionList_->topLevelItem(i)->text(0) == to)
            sessionList_->topLevelItem(i)->setSelected(true);
    }
    fillRuns();
    updateActions();
    return true;
}

bool SessionsPanel::deleteSession(const QString& name) {
    if (!store_) {
        emit errorOccurred("No session store is open");
        return false;
    }
    if (confirmDeletes_) {
        const auto answer = QMessageBox::question(
            this, "Delete session",
            "Delete session '" + name + "' with all its runs? This cannot be undone.",
            QMessageBox::Yes | QMessageBox::Cancel, QMessageBox::Cancel);
        if (answer != QMessageBox::Yes) return false;
    }
    if (!guarded([&] { store_->deleteSession(name.toStdString()); })) return false;
    if (name == current_) {
        setCurrent(QString());
        loadNotes();
    }
    fillSessions();
    fillRuns();
    updateActions();
    return true;
}

int SessionsPanel::rowOf(qint64 runId) const {
    for (int row = 0; row < sortModel_->rowCount(); ++row) {
        const QModelIndex source = sortModel_->mapToSource(sortModel_->index(row, IdColumn));
        if (runModel_->item(source.row(), IdColumn)->data(kRunIdRole).toLongLong() == runId)
            return row;
    }
    return -1;
}

bool SessionsPanel::pinBaseline(qint64 runId) {
    if (runId == 0) {
        if (baselineId_ == 0) return true;
        baselineId_ = 0;
        baseline_.reset();
        markBaseline();
        updateComparison();
        updateActions();
        emit baselineChanged(0);
        return true;
    }
    if (rowOf(runId) < 0) {
        emit errorOccurred(QString("Run #%1 is not a run of the open session%2")
                               .arg(runId)
                               .arg(current_.isEmpty() ? QString() : " '" + current_ + "'"));
        return false;
    }
    sessions::RunRecord record;
    if (!guarded([&] { record = store_->run(runId); })) return false;
    baseline_ = std::move(record);
    baselineId_ = runId;
    markBaseline();
    updateComparison();
    updateActions();
    emit baselineChanged(runId);
    return true;
}

bool SessionsPanel::selectRun(qint64 runId) {
    if (runId == 0) {
        runTable_->clearSelection();
        return true;
    }
    const int row = rowOf(runId);
    if (row < 0) return false;
    runTable_->selectRow(row);
    return true;
}

qint64 SessionsPanel::selectedRunId() const {
    const QModelIndexList rows = runTable_->selectionModel()->selectedRows(IdColumn);
    if (rows.isEmpty()) return 0;
    const QModelIndex source = sortModel_->mapToSource(rows.first());
    return runModel_->item(source.row(), IdColumn)->data(kRunIdRole).toLongLong();
}

QString SessionsPanel::selectedSessionName() const {
    const auto items = sessionList_->selectedItems();
    return items.isEmpty() ? QString() : items.first()->text(0);
}

void SessionsPanel::markBaseline() {
    for (int row = 0; row < runModel_->rowCount(); ++row) {
        QStandardItem* idItem = runModel_->item(row, IdColumn);
        const qint64 id = idItem->data(kRunIdRole).toLongLong();
        const bool pinned = id != 0 && id == baselineId_;
        idItem->setText(pinned ? QString::number(id) + " (baseline)" : QString::number(id));
        for (int c = 0; c < ColumnCount; ++c) {
            QStandardItem* item = runModel_->item(row, c);
            QFont font = item->font();
            font.setBold(pinned);
            item->setFont(font);
            item->setBackground(pinned ? QBrush(kBaselineTint) : QBrush());
        }
    }
}

void SessionsPanel::updateComparison() {
    if (!store_) return comparison_->clear("No store open");
    if (current_.isEmpty()) return comparison_->clear("No session open");
    if (!baseline_) {
        return comparison_->clear(
            "Pin a run as the baseline (Pin as baseline, or right-click a run), then select "
            "another run to compare it with");
    }
    const qint64 selected = selectedRunId();
    if (selected == 0 || selected == baselineId_) {
        return comparison_->clear("Baseline: run #" + QString::number(baselineId_) + " " +
                                  DisplayText::method(baseline_->params) +
                                  ". Select another run to compare it with");
    }
    sessions::RunRecord b;
    if (!guarded([&] { b = store_->run(selected); })) return comparison_->clear(lastError_);
    comparison_->setRuns(*baseline_, b);
}

void SessionsPanel::updateActions() {
    const bool hasStore = store_ != nullptr;
    const bool sessionSelected = hasStore && !selectedSessionName().isEmpty();
    openButton_->setEnabled(sessionSelected);
    newButton_->setEnabled(hasStore);
    renameButton_->setEnabled(sessionSelected);
    deleteButton_->setEnabled(sessionSelected);
    notes_->setEnabled(hasStore && !current_.isEmpty());
    const qint64 run = selectedRunId();
    pinButton_->setEnabled(run != 0);
    pinButton_->setText(run != 0 && run == baselineId_ ? "Unpin baseline" : "Pin as baseline");
    loadButton_->setEnabled(run != 0);
}

void SessionsPanel::askNew() {
    if (const auto name = namePrompt_("New session", "Name of the new session:", QString()))
        createSession(*name);
}

void SessionsPanel::askRename() {
    const QString from = selectedSessionName();
    if (from.isEmpty()) return;
    if (const auto to = namePrompt_("Rename session", "New name of '" + from + "':", from))
        renameSession(from, *to);
}

void SessionsPanel::askDelete() {
    const QString name = selectedSessionName();
    if (!name.isEmpty()) deleteSession(name);
}

void SessionsPanel::showRunMenu(const QPoint& at) {
    const QModelIndex index = runTable_->indexAt(at);
    if (!index.isValid()) return;
    const QModelIndex source = sortModel_->mapToSource(index);
    const qint64 id = runModel_->item(source.row(), IdColumn)->data(kRunIdRole).toLongLong();
    QMenu menu(this);
    QAction* pin = menu.addAction(id == baselineId_ ? "Unpin baseline" : "Pin as baseline");
    QAction* load = menu.addAction("Load in views");
    QAction* chosen = menu.exec(runTable_->viewport()->mapToGlobal(at));
    if (chosen == pin) pinBaseline(id == baselineId_ ? 0 : id);
    if (chosen == load) emit runActivated(id);
}

}  // namespace kvlens::ui
