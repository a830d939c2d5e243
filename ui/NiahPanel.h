// The needle-in-a-haystack runs of a store's sessions (kvlens niah --save): pick a
// session, a task and question mode, a method and budget and a metric (accuracy
// "contains", exact, needle kept), and read them as a depth x length heatmap (NiahHeatmap)
// with the mean over the sweep beside it. A click on a cell lists its samples and opens
// the first: sampleRequested carries the run and its model's record, and the window
// captures that sample and marks the needle's positions in the other views.
//
// Store failures are caught and reported as errorOccurred(one line); the panel keeps
// what it showed.
#pragma once

#include <QString>
#include <QStringList>
#include <QWidget>
#include <functional>
#include <memory>

#include "sessions/StoreRecords.h"

class QComboBox;
class QLabel;
class QListWidget;
class QPushButton;

namespace kvlens::sessions {
class NiahGrid;
class SessionStore;
}  // namespace kvlens::sessions

namespace kvlens::ui {

class NiahHeatmap;

class NiahPanel : public QWidget {
    Q_OBJECT

public:
    enum class Metric { Contains, Exact, NeedleKept };

    explicit NiahPanel(QWidget* parent = nullptr);
    ~NiahPanel() override;

    // Null: nothing to show. Lists the sessions holding niah runs and shows the first.
    void setStore(std::shared_ptr<sessions::SessionStore> store);
    // Re-reads the store, keeping the session, group, method and metric shown where they remain.
    void refresh();

    // What the combo boxes do; false (after errorOccurred) for an unknown session.
    bool showSession(const QString& name);
    void showGroup(int index);  // a task and question mode of the session
    void showKind(int index);   // a method and budget of the group
    void showMetric(Metric metric);
    QString currentSession() const;
    QStringList sessionNames() const;
    QStringList groupNames() const;
    QStringList kindNames() const;

    // As a click on the cell: lists its samples and opens the first. False when the cell
    // has no run.
    bool openCell(int row, int column);
    // Opens sample `index` of the listed cell.
    bool openSample(int index);
    // The listed samples, one line each ("sample 0: 2038 tokens, answer ': 5659930.', ...").
    QStringList sampleLines() const;
    // "snapkv 128 over 33 runs: contains 3.0%, exact 3.0%, needle kept 26.2%, agreement ..."
    QString summaryText() const;

    NiahHeatmap* heatmap() const { return heatmap_; }

signals:
    void sampleRequested(const kvlens::sessions::NiahRunRecord& run, const kvlens::sessions::ModelRecord& model);
    void errorOccurred(const QString& message);

private:
    bool guarded(const std::function<void()>& work);
    void fillGroups();
    void fillKinds();
    void fillHeatmap();
    void listCell(int row, int column);

    std::shared_ptr<sessions::SessionStore> store_;
    std::unique_ptr<sessions::NiahGrid> grid_;
    int group_ = -1, kind_ = -1;
    Metric metric_ = Metric::Contains;
    // The runs of the listed cell (pointers into grid_).
    std::vector<const sessions::NiahRunRecord*> cellRuns_;
    bool filling_ = false;  // combo boxes being refilled: their signals are not the user's

    QLabel* storeLabel_ = nullptr;
    QComboBox* session_ = nullptr;
    QComboBox* groupBox_ = nullptr;
    QComboBox* kindBox_ = nullptr;
    QComboBox* metricBox_ = nullptr;
    QPushButton* refreshButton_ = nullptr;
    NiahHeatmap* heatmap_ = nullptr;
    QLabel* summary_ = nullptr;
    QListWidget* samples_ = nullptr;
};

}  // namespace kvlens::ui
