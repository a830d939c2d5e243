// The sessions panel against real stores: listing, open/create/rename/delete (through
// the methods and through the buttons), notes saved on focus-out and after typing
// pauses, the runs table (formats, n/a, sorting), the pinned baseline and its
// comparison, and every store failure reported in one line with the panel still working.
#include <gtest/gtest.h>

#include <QFocusEvent>
#include <QLabel>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QStandardItemModel>
#include <QTableView>
#include <QTest>
#include <QTreeWidget>
#include <limits>

#include "WidgetFixtures.h"
#include "sessions/SessionStore.h"
#include "ui/KeptDeltaStrips.h"
#include "ui/RunComparisonView.h"
#include "ui/SessionsPanel.h"

namespace kvlens::ui {
namespace {

using sessions::SessionStore;
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// Records what the panel emits.
struct Signals {
    std::vector<QString> errors, opened;
    std::vector<qint64> activated, baselines;
    explicit Signals(SessionsPanel& panel) {
        QObject::connect(&panel, &SessionsPanel::errorOccurred,
                         [this](const QString& m) { errors.push_back(m); });
        QObject::connect(&panel, &SessionsPanel::sessionOpened,
                         [this](const QString& n) { opened.push_back(n); });
        QObject::connect(&panel, &SessionsPanel::runActivated,
                         [this](qint64 id) { activated.push_back(id); });
        QObject::connect(&panel, &SessionsPanel::baselineChanged,
                         [this](qint64 id) { baselines.push_back(id); });
    }
};

QStringList sessionNames(const SessionsPanel& panel) {
    QStringList names;
    for (int i = 0; i < panel.sessionList()->topLevelItemCount(); ++i)
        names << panel.sessionList()->topLevelItem(i)->text(0);
    return names;
}

QPushButton* button(const SessionsPanel& panel, const char* name) {
    auto* b = panel.findChild<QPushButton*>(name);
    EXPECT_NE(b, nullptr) << name;
    return b;
}

// The text of (row, column) as the table shows it, in its sorted order.
QString shown(const SessionsPanel& panel, int row, int column) {
    const QAbstractItemModel* model = panel.runTable()->model();
    return model->data(model->index(row, column)).toString();
}

struct StoredRuns {
    std::vector<int64_t> ids;  // snapkv 64, snapkv 128, pyramidkv 64, streamingllm 64, other prompt
};

// A session "stories" of four runs on one 512-token prompt and one on another prompt.
StoredRuns fillStore(SessionStore& store, const std::string& session = "stories") {
    StoredRuns out;
    const auto info = store.createSession(session, "first notes");
    const int64_t model = store.saveModel(test::storiesModel());
    const int64_t prompt = store.savePrompt(test::prompt(info.id, model, 512));
    const int64_t other = store.savePrompt(test::prompt(info.id, model, 300));
    struct Spec {
        const char* method;
        int64_t budget;
        double hit;
        int64_t prompt, length;
    };
    const Spec specs[] = {{"snapkv", 64, 0.82, prompt, 512},
                          {"snapkv", 128, 0.91, prompt, 512},
                          {"pyramidkv", 64, 0.77, prompt, 512},
                          {"streamingllm", 64, kNaN, prompt, 512},
                          {"snapkv", 64, 0.8, other, 300}};
    uint64_t seed = 1;
    for (const Spec& s : specs) {
        sessions::RunRecord r = test::realisticRun(s.method, s.budget, seed, s.length, s.hit);
        r.sessionId = info.id;
        r.promptId = s.prompt;
        r.createdMs = 1'700'000'000'000 + int64_t(seed) * 60'000;
        out.ids.push_back(store.saveRun(r));
        ++seed;
    }
    return out;
}

TEST(SessionsPanel, WithoutAStoreEverythingIsDisabledAndActionsSayWhy) {
    SessionsPanel panel;
    Signals sig(panel);
    EXPECT_EQ(panel.findChild<QLabel*>("store")->text(), "No store open");
    for (const char* name : {"open", "new", "rename", "delete", "pin", "load"})
        EXPECT_FALSE(button(panel, name)->isEnabled()) << name;
    EXPECT_FALSE(panel.notesEditor()->isEnabled());
    EXPECT_FALSE(panel.createSession("a"));
    EXPECT_FALSE(panel.openSession("a"));
    ASSERT_EQ(sig.errors.size(), 2u);
    EXPECT_EQ(sig.errors[0], "No session store is open");
    EXPECT_EQ(panel.comparison()->message(), "No store open");
}

TEST(SessionsPanel, CreateOpenRenameDelete) {
    const std::string path = test::storePath("crud.db");
    auto store = std::make_shared<SessionStore>(path);
    fillStore(*store);
    SessionsPanel panel;
    panel.setConfirmDeletes(false);
    Signals sig(panel);
    panel.setStore(store);
    EXPECT_EQ(panel.findChild<QLabel*>("store")->text(), "Store: " + QString::fromStdString(path));
    EXPECT_EQ(sessionNames(panel), QStringList({"stories"}));
    EXPECT_EQ(panel.sessionList()->topLevelItem(0)->text(1), "5");
    EXPECT_EQ(panel.currentSession(), "");

    ASSERT_TRUE(panel.createSession("beta"));
    EXPECT_EQ(panel.currentSession(), "beta");
    EXPECT_EQ(sig.opened, std::vector<QString>({"beta"}));
    EXPECT_EQ(sessionNames(panel), QStringList({"beta", "stories"}));
    EXPECT_EQ(panel.runModel()->rowCount(), 0);

    ASSERT_TRUE(panel.openSession("stories"));
    EXPECT_EQ(panel.currentSession(), "stories");
    EXPECT_EQ(panel.runModel()->rowCount(), 5);
    EXPECT_EQ(panel.notesEditor()->toPlainText(), "first notes");

    ASSERT_TRUE(panel.renameSession("stories", "tales"));
    EXPECT_EQ(panel.currentSession(), "tales");
    EXPECT_EQ(sessionNames(panel), QStringList({"beta", "tales"}));
    EXPECT_TRUE(store->findSession("tales").has_value());
    EXPECT_EQ(panel.runModel()->rowCount(), 5);

    ASSERT_TRUE(panel.deleteSession("tales"));
    EXPECT_EQ(panel.currentSession(), "");
    EXPECT_EQ(sessionNames(panel), QStringList({"beta"}));
    EXPECT_EQ(panel.runModel()->rowCount(), 0);
    EXPECT_FALSE(store->findSession("tales").has_value());
    EXPECT_TRUE(sig.errors.empty()) << sig.errors.front().toStdString();
}

TEST(SessionsPanel, StoreErrorsAreReportedInOneLineAndThePanelKeepsWorking) {
    const std::string path = test::storePath("errors.db");
    auto store = std::make_shared<SessionStore>(path);
    fillStore(*store);
    store->createSession("beta");
    SessionsPanel panel;
    panel.setConfirmDeletes(false);
    Signals sig(panel);
    panel.setStore(store);
    ASSERT_TRUE(panel.openSession("stories"));

    EXPECT_FALSE(panel.renameSession("stories", "beta"));
    EXPECT_FALSE(panel.createSession("beta"));
    EXPECT_FALSE(panel.createSession(""));
    EXPECT_FALSE(panel.openSession("nope"));
    EXPECT_FALSE(panel.deleteSession("nope"));
    EXPECT_FALSE(panel.pinBaseline(999));
    const std::vector<QString> expected = {
        QString::fromStdString(path) + ": a session named 'beta' already exists",
        QString::fromStdString(path) + ": a session named 'beta' already exists",
        "session name is empty",
        QString::fromStdString(path) + ": no session 'nope' (sessions: beta, stories)",
        QString::fromStdString(path) + ": no session 'nope' (sessions: beta, stories)",
        "Run #999 is not a run of the open session 'stories'"};
    EXPECT_EQ(sig.errors, expected);
    // Nothing changed, and the panel still works.
    EXPECT_EQ(panel.currentSession(), "stories");
    EXPECT_EQ(sessionNames(panel), QStringList({"beta", "stories"}));
    EXPECT_EQ(panel.runModel()->rowCount(), 5);
    EXPECT_TRUE(panel.renameSession("beta", "gamma"));
    EXPECT_EQ(sessionNames(panel), QStringList({"gamma", "stories"}));
}

TEST(SessionsPanel, AStoreThatCannotBeWrittenReportsEveryWrite) {
    const std::string path = test::storePath("readonly.db");
    {
        SessionStore writer(path);
        fillStore(writer);
    }
    auto store = std::make_shared<SessionStore>(path, SessionStore::Access::ReadOnly);
    SessionsPanel panel;
    panel.setConfirmDeletes(false);
    Signals sig(panel);
    panel.setStore(store);
    ASSERT_TRUE(panel.openSession("stories"));  // reading works
    EXPECT_EQ(panel.runModel()->rowCount(), 5);
    EXPECT_FALSE(panel.createSession("new"));
    EXPECT_FALSE(panel.renameSession("stories", "tales"));
    EXPECT_FALSE(panel.deleteSession("stories"));
    panel.notesEditor()->setPlainText("edited");
    panel.saveNotes();
    const QString prefix = QString::fromStdString(path) + ": cannot ";
    ASSERT_EQ(sig.errors.size(), 4u);
    for (const QString& e : sig.errors) {
        EXPECT_TRUE(e.startsWith(prefix)) << e.toStdString();
        EXPECT_TRUE(e.endsWith(": the store is read-only here")) << e.toStdString();
        EXPECT_FALSE(e.contains('\n'));
    }
    EXPECT_EQ(panel.currentSession(), "stories");
    EXPECT_EQ(sessionNames(panel), QStringList({"stories"}));
    EXPECT_EQ(store->session("stories").notes, "first notes");
    // The editor keeps what was typed, and the panel still reads.
    EXPECT_EQ(panel.notesEditor()->toPlainText(), "edited");
    EXPECT_TRUE(
        panel.pinBaseline(panel.runModel()->item(0)->data(SessionsPanel::kRunIdRole).toLongLong()));
}

TEST(SessionsPanel, NotesAreSavedOnFocusOutAndWhenTypingPauses) {
    const std::string path = test::storePath("notes.db");
    auto store = std::make_shared<SessionStore>(path);
    fillStore(*store);
    SessionsPanel panel;
    Signals sig(panel);
    panel.setStore(store);
    ASSERT_TRUE(panel.openSession("stories"));
    QPlainTextEdit* notes = panel.notesEditor();
    EXPECT_FALSE(panel.notesSavePending());  // loading the notes is no edit

    notes->moveCursor(QTextCursor::End);
    QTest::keyClicks(notes, " and more");
    EXPECT_TRUE(panel.notesSavePending());
    EXPECT_EQ(store->session("stories").notes, "first notes");  // not on every key
    QFocusEvent focusOut(QEvent::FocusOut);
    QApplication::sendEvent(notes, &focusOut);
    EXPECT_FALSE(panel.notesSavePending());
    EXPECT_EQ(store->session("stories").notes, "first notes and more");

    // Typing, then a pause: the single-shot timer saves once.
    QTest::keyClicks(notes, "!");
    EXPECT_TRUE(panel.notesSavePending());
    ASSERT_TRUE(
        test::waitFor([&] { return store->session("stories").notes == "first notes and more!"; }));
    EXPECT_FALSE(panel.notesSavePending());

    // Switching sessions saves pending notes first, to the session they belong to.
    store->createSession("other");
    panel.refresh();
    QTest::keyClicks(notes, "?");
    ASSERT_TRUE(panel.openSession("other"));
    EXPECT_EQ(store->session("stories").notes, "first notes and more!?");
    EXPECT_EQ(store->session("other").notes, "");
    EXPECT_EQ(notes->toPlainText(), "");
    EXPECT_TRUE(sig.errors.empty());
}

TEST(SessionsPanel, RunsTableFormatsAndSortsNumbersAsNumbers) {
    const std::string path = test::storePath("table.db");
    auto store = std::make_shared<SessionStore>(path);
    const StoredRuns runs = fillStore(*store);
    SessionsPanel panel;
    panel.setStore(store);
    ASSERT_TRUE(panel.openSession("stories"));
    ASSERT_EQ(panel.runModel()->rowCount(), 5);
    // Sorted by id: row i is run i.
    const sessions::RunRecord first = store->run(runs.ids[0]);
    EXPECT_EQ(shown(panel, 0, SessionsPanel::IdColumn), QString::number(runs.ids[0]));
    EXPECT_EQ(shown(panel, 0, SessionsPanel::MethodColumn), "snapkv B=64");
    EXPECT_EQ(shown(panel, 0, SessionsPanel::PromptTokensColumn), "512");
    EXPECT_EQ(shown(panel, 0, SessionsPanel::BudgetColumn), "64");
    EXPECT_EQ(shown(panel, 0, SessionsPanel::RatioColumn),
              QString::number(first.metrics.ratio * 100, 'f', 1) + "%");
    EXPECT_EQ(shown(panel, 0, SessionsPanel::HitRateColumn), "82.0%");
    EXPECT_EQ(shown(panel, 3, SessionsPanel::HitRateColumn), "n/a");
    EXPECT_EQ(shown(panel, 3, SessionsPanel::MethodColumn), "streamingllm B=64");
    EXPECT_EQ(shown(panel, 4, SessionsPanel::PromptTokensColumn), "300");
    // The method cell's tooltip holds every parameter.
    const QAbstractItemModel* model = panel.runTable()->model();
    EXPECT_TRUE(model->data(model->index(0, SessionsPanel::MethodColumn), Qt::ToolTipRole)
                    .toString()
                    .contains("\"window\":16"));

    // Budget descending: 128 first; prompt tokens ascending: 300 before 512 (not "300" >
    // "1000"-style text order).
    panel.runTable()->sortByColumn(SessionsPanel::BudgetColumn, Qt::DescendingOrder);
    EXPECT_EQ(shown(panel, 0, SessionsPanel::MethodColumn), "snapkv B=128");
    panel.runTable()->sortByColumn(SessionsPanel::HitRateColumn, Qt::DescendingOrder);
    EXPECT_EQ(shown(panel, 0, SessionsPanel::HitRateColumn), "91.0%");
    EXPECT_EQ(shown(panel, 4, SessionsPanel::HitRateColumn), "n/a");  // below every measured one
    panel.runTable()->sortByColumn(SessionsPanel::KlColumn, Qt::AscendingOrder);
    double previous = -1.0;
    for (int row = 0; row < 5; ++row) {
        const double kl =
            model->data(model->index(row, SessionsPanel::KlColumn), SessionsPanel::kSortRole)
                .toDouble();
        EXPECT_GE(kl, previous);
        previous = kl;
    }
}

TEST(SessionsPanel, PinnedBaselineComparesWithTheSelectedRun) {
    const std::string path = test::storePath("baseline.db");
    auto store = std::make_shared<SessionStore>(path);
    const StoredRuns runs = fillStore(*store);
    SessionsPanel panel;
    panel.resize(1000, 900);
    panel.show();
    Signals sig(panel);
    panel.setStore(store);
    ASSERT_TRUE(panel.openSession("stories"));
    EXPECT_TRUE(panel.comparison()->message().startsWith("Pin a run as the baseline"));

    ASSERT_TRUE(panel.pinBaseline(runs.ids[0]));
    EXPECT_EQ(panel.baselineRunId(), runs.ids[0]);
    EXPECT_EQ(sig.baselines, std::vector<qint64>({runs.ids[0]}));
    EXPECT_EQ(shown(panel, 0, SessionsPanel::IdColumn),
              QString::number(runs.ids[0]) + " (baseline)");
    EXPECT_TRUE(panel.runModel()->item(0, SessionsPanel::MethodColumn)->font().bold());
    EXPECT_FALSE(panel.runModel()->item(1, SessionsPanel::MethodColumn)->font().bold());

    ASSERT_TRUE(panel.selectRun(runs.ids[2]));
    EXPECT_EQ(panel.selectedRunId(), runs.ids[2]);
    EXPECT_EQ(panel.comparison()->message(), "");
    ASSERT_TRUE(panel.comparison()->jaccard().has_value());
    EXPECT_EQ(panel.comparison()->strips()->rows(), 4);
    EXPECT_EQ(button(panel, "pin")->text(), "Pin as baseline");

    // A run of another prompt: one line instead of a picture.
    ASSERT_TRUE(panel.selectRun(runs.ids[4]));
    EXPECT_TRUE(panel.comparison()->message().contains("different prompts"));

    // Double-click activates a run (the main window loads it into the views).
    const QModelIndex cell = panel.runTable()->model()->index(1, SessionsPanel::MethodColumn);
    const QPoint at = panel.runTable()->visualRect(cell).center();
    // QTest's widget double-click is the second click alone: press and release first.
    QTest::mouseClick(panel.runTable()->viewport(), Qt::LeftButton, {}, at);
    QTest::mouseDClick(panel.runTable()->viewport(), Qt::LeftButton, {}, at);
    EXPECT_EQ(sig.activated, std::vector<qint64>({runs.ids[1]}));
    button(panel, "load")->click();
    EXPECT_EQ(sig.activated.back(), runs.ids[1]);

    // Selecting the baseline turns the button into Unpin; clicking it unpins.
    ASSERT_TRUE(panel.selectRun(runs.ids[0]));
    EXPECT_EQ(button(panel, "pin")->text(), "Unpin baseline");
    button(panel, "pin")->click();
    EXPECT_EQ(panel.baselineRunId(), 0);
    EXPECT_EQ(sig.baselines.back(), 0);
    EXPECT_EQ(shown(panel, 0, SessionsPanel::IdColumn), QString::number(runs.ids[0]));

    // A baseline deleted elsewhere is dropped on refresh.
    ASSERT_TRUE(panel.pinBaseline(runs.ids[3]));
    store->deleteRun(runs.ids[3]);
    panel.refresh();
    EXPECT_EQ(panel.baselineRunId(), 0);
    EXPECT_EQ(panel.runModel()->rowCount(), 4);
    EXPECT_TRUE(sig.errors.empty());
}

TEST(SessionsPanel, ARunDeletedElsewhereBeforeItIsComparedIsReported) {
    const std::string path = test::storePath("vanished.db");
    auto store = std::make_shared<SessionStore>(path);
    const StoredRuns runs = fillStore(*store);
    SessionsPanel panel;
    Signals sig(panel);
    panel.setStore(store);
    ASSERT_TRUE(panel.openSession("stories"));
    ASSERT_TRUE(panel.pinBaseline(runs.ids[0]));
    SessionStore(path).deleteRun(runs.ids[1]);  // the table still lists it
    ASSERT_TRUE(panel.selectRun(runs.ids[1]));
    const QString expected =
        QString::fromStdString(path) + ": no run with id " + QString::number(runs.ids[1]);
    EXPECT_EQ(sig.errors, std::vector<QString>({expected}));
    EXPECT_EQ(panel.comparison()->message(), expected);
    // The next run still compares.
    ASSERT_TRUE(panel.selectRun(runs.ids[2]));
    EXPECT_EQ(panel.comparison()->message(), "");
}

TEST(SessionsPanel, ButtonsAskThroughTheInjectedPromptAndConfirmation) {
    const std::string path = test::storePath("buttons.db");
    auto store = std::make_shared<SessionStore>(path);
    fillStore(*store);
    SessionsPanel panel;
    panel.setConfirmDeletes(false);
    Signals sig(panel);
    std::vector<QString> asked;
    std::optional<QString> answer = QString("gamma");
    panel.setNamePrompt([&](const QString& title, const QString&, const QString& initial) {
        asked.push_back(title + "|" + initial);
        return answer;
    });
    panel.setStore(store);
    ASSERT_TRUE(button(panel, "new")->isEnabled());
    EXPECT_FALSE(button(panel, "rename")->isEnabled());  // no session selected
    button(panel, "new")->click();
    EXPECT_EQ(panel.currentSession(), "gamma");
    EXPECT_EQ(sessionNames(panel), QStringList({"gamma", "stories"}));

    // Rename the selected session (gamma, just created) to an existing name: error.
    answer = QString("stories");
    ASSERT_TRUE(button(panel, "rename")->isEnabled());
    button(panel, "rename")->click();
    EXPECT_EQ(asked.back(), "Rename session|gamma");
    ASSERT_EQ(sig.errors.size(), 1u);
    EXPECT_EQ(sig.errors[0],
              QString::fromStdString(path) + ": a session named 'stories' already exists");
    // Cancelled: nothing happens.
    answer.reset();
    button(panel, "rename")->click();
    EXPECT_EQ(sessionNames(panel), QStringList({"gamma", "stories"}));

    // Open by selecting and clicking Open, then delete the selection.
    panel.sessionList()->clearSelection();
    panel.sessionList()->topLevelItem(1)->setSelected(true);
    button(panel, "open")->click();
    EXPECT_EQ(panel.currentSession(), "stories");
    button(panel, "delete")->click();
    EXPECT_EQ(sessionNames(panel), QStringList({"gamma"}));
    EXPECT_EQ(panel.currentSession(), "");
    EXPECT_EQ(sig.errors.size(), 1u);
}

TEST(SessionsPanel, SessionsChangedElsewhereAppearOnRefresh) {
    const std::string path = test::storePath("elsewhere.db");
    auto store = std::make_shared<SessionStore>(path);
    fillStore(*store);
    SessionsPanel panel;
    Signals sig(panel);
    panel.setStore(store);
    ASSERT_TRUE(panel.openSession("stories"));
    {
        SessionStore other(path);  // e.g. the CLI
        other.createSession("from cli");
        other.deleteSession("stories");
    }
    panel.refresh();
    EXPECT_EQ(sessionNames(panel), QStringList({"from cli"}));
    EXPECT_EQ(panel.currentSession(), "");
    EXPECT_EQ(panel.runModel()->rowCount(), 0);
    EXPECT_TRUE(sig.errors.empty());
    // Unset the store: everything empties and disables.
    panel.setStore(nullptr);
    EXPECT_TRUE(sessionNames(panel).isEmpty());
    EXPECT_FALSE(button(panel, "new")->isEnabled());
}

TEST(SessionsPanel, RealisticScreenshot) {
    const std::string path = test::storePath("screenshot.db");
    auto store = std::make_shared<SessionStore>(path);
    const StoredRuns runs = fillStore(*store);
    store->createSession("long prompts", "8192-token prompts on TinyLlama");
    store->createSession("pyramid sweep");
    SessionsPanel panel;
    panel.resize(1100, 950);
    panel.show();
    panel.setStore(store);
    ASSERT_TRUE(panel.openSession("stories"));
    panel.notesEditor()->setPlainText(
        "SnapKV vs PyramidKV at B=64 on stories260K.\nPyramidKV keeps more in the first layers.");
    panel.saveNotes();
    ASSERT_TRUE(panel.pinBaseline(runs.ids[0]));
    ASSERT_TRUE(panel.selectRun(runs.ids[2]));
    QApplication::processEvents();
    test::screenshot(panel, "sessions_panel");
    EXPECT_EQ(panel.comparison()->message(), "");
}

}  // namespace
}  // namespace kvlens::ui
