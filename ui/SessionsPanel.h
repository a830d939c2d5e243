// The sessions of a store: list, open, create, rename, delete, notes; the runs of the open
// session in a sortable table, one of them pinned as the baseline the others compare to.
//
// Every store failure (a taken name, a read-only or damaged store) is caught and reported
// as errorOccurred(one line); the panel and the open session stay as they were.
#pragma once

#include <QString>
#include <QWidget>
#include <functional>
#include <memory>
#include <optional>

#include "sessions/StoreRecords.h"

class QLabel;
class QPlainTextEdit;
class QPushButton;
class QSortFilterProxyModel;
class QStandardItemModel;
class QTableView;
class QTimer;
class QTreeWidget;

namespace kvlens::sessions {
class SessionStore;
}

namespace kvlens::ui {

class RunComparisonView;

class SessionsPanel : public QWidget {
    Q_OBJECT

public:
    // Asks for a name (title, prompt, initial text); nullopt: cancelled.
    using NamePrompt =
        std::function<std::optional<QString>(const QString&, const QString&, const QString&)>;

    // Table columns, in order.
    enum Column {
        IdColumn,
        MethodColumn,
        PromptTokensColumn,
        BudgetColumn,
        RatioColumn,
        AgreementColumn,
        KlColumn,
        Top1Column,
        HitRateColumn,
        CreatedColumn,
        ColumnCount
    };
    // The role holding each cell's sort key (numbers sort as numbers).
    static constexpr int kSortRole = Qt::UserRole + 1;
    static constexpr int kRunIdRole = Qt::UserRole + 2;
    // How long typing must pause before the notes are saved.
    static constexpr int kNotesDelayMs = 800;

    explicit SessionsPanel(QWidget* parent = nullptr);
    ~SessionsPanel() override;

    // Null: "no store open", every action disabled. Pending notes go to the old store first.
    void setStore(std::shared_ptr<sessions::SessionStore> store);
    const std::shared_ptr<sessions::SessionStore>& store() const { return store_; }
    // Reloads sessions and runs, keeping the open session and baseline where they remain.
    void refresh();
    QString currentSession() const { return current_; }

    // Deleting asks first unless switched off (tests, scripted use).
    void setConfirmDeletes(bool confirm) { confirmDeletes_ = confirm; }
    // How New and Rename ask for a name (default: QInputDialog).
    void setNamePrompt(NamePrompt prompt) { namePrompt_ = std::move(prompt); }

    // What the buttons do once they have a name; false (after errorOccurred) on failure.
    bool openSession(const QString& name);
    bool createSession(const QString& name);
    bool renameSession(const QString& from, const QString& to);
    bool deleteSession(const QString& name);
    // Pins a run of the open session as the baseline (0: unpins).
    bool pinBaseline(qint64 runId);
    qint64 baselineRunId() const { return baselineId_; }
    // Selects a run's row (0: none); with a baseline pinned, B of the comparison.
    bool selectRun(qint64 runId);
    qint64 selectedRunId() const;
    // Saves the notes editor's text now if it changed (also on focus-out and typing pauses).
    void saveNotes();

    QTreeWidget* sessionList() const { return sessionList_; }
    QTableView* runTable() const { return runTable_; }
    QStandardItemModel* runModel() const { return runModel_; }
    QPlainTextEdit* notesEditor() const { return notes_; }
    RunComparisonView* comparison() const { return comparison_; }
    bool notesSavePending() const;

signals:
    void sessionOpened(const QString& name);
    void runActivated(qint64 runId);
    void baselineChanged(qint64 runId);
    void errorOccurred(const QString& message);

protected:
    bool eventFilter(QObject* watched, QEvent* event) override;

private:
    // Runs `work` against the store; a failure becomes errorOccurred (and lastError_).
    bool guarded(const std::function<void()>& work);
    void fillSessions();
    void fillRuns();
    void loadNotes();
    void updateActions();
    void updateComparison();
    void markBaseline();
    void setCurrent(const QString& name);
    int rowOf(qint64 runId) const;  // in the view (sorted) order; -1: absent
    QString selectedSessionName() const;
    void askNew();
    void askRename();
    void askDelete();
    void showRunMenu(const QPoint& at);

    std::shared_ptr<sessions::SessionStore> store_;
    QString current_;
    qint64 baselineId_ = 0;
    std::optional<sessions::RunRecord> baseline_;  // the pinned run, loaded once
    bool confirmDeletes_ = true;
    NamePrompt namePrompt_;
    QString notesSession_;  // whose notes the editor holds
    bool notesDirty_ = false;
    bool loadingNotes_ = false;
    QString lastError_;

    QLabel* storeLabel_ = nullptr;
    QTreeWidget* sessionList_ = nullptr;
    QPushButton* openButton_ = nullptr;
    QPushButton* newButton_ = nullptr;
    QPushButton* renameButton_ = nullptr;
    QPushButton* deleteButton_ = nullptr;
    QLabel* notesLabel_ = nullptr;
    QPlainTextEdit* notes_ = nullptr;
    QTimer* notesTimer_ = nullptr;
    QLabel* runsLabel_ = nullptr;
    QTableView* runTable_ = nullptr;
    QStandardItemModel* runModel_ = nullptr;
    QSortFilterProxyModel* sortModel_ = nullptr;
    QPushButton* pinButton_ = nullptr;
    QPushButton* loadButton_ = nullptr;
    RunComparisonView* comparison_ = nullptr;
};

}  // namespace kvlens::ui
