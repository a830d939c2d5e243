// The "Model & prompt" panel: which model to load (file dialog, recent files, or a
// random:<preset>), its shape and memory, the prompt editor with a live token count
// against the context, the chat template switch with its system message, device,
// dtype and threads, and the Run button.
#pragma once

#include <QWidget>

#include <cstdint>

#include "engine/Workbench.h"

class QComboBox;
class QLabel;
class QLineEdit;
class QPlainTextEdit;
class QPushButton;
class QSpinBox;
class QCheckBox;
class QTimer;

namespace kvlens::ui {

class ModelPromptPanel : public QWidget {
    Q_OBJECT

public:
    explicit ModelPromptPanel(QWidget* parent = nullptr);

    Workbench::LoadOptions loadOptions() const;
    void setModelText(const QString& model);
    QString promptText() const;
    void setPromptText(const QString& text);
    bool addBos() const;
    void setAddBos(bool addBos);
    // The prompt as the engine takes it: text, BOS, and the chat turn when ticked.
    WorkbenchPrompt prompt() const;
    // Ticks Chat (when the loaded model has a template) and sets the system message.
    void setChat(bool chat, const QString& system);
    int64_t newTokens() const;
    // Compression during decoding every this many steps; 0: off.
    int64_t decodeEvery() const;
    void setNewTokens(int64_t tokens);  // clamped to the box's range
    void setRecentModels(const QStringList& models);

    // What the loaded model is (shape, memory); clears the token count.
    void showModel(const WorkbenchModel& model);
    void showTokenCount(int64_t tokens, int64_t context);
    // Enables Load and Run (false while the engine is busy with long work).
    void setIdle(bool idle);

    // What the Open dialog's choice names as a model: a Hugging Face folder when the
    // file chosen is its config.json, else the file itself.
    static QString modelFromChoice(const QString& path);

    // Reads a prompt text file into the editor; throws kvlens::Error naming the file.
    void openPromptFile(const QString& path);

signals:
    void loadRequested();
    void runRequested();
    // The prompt or BOS choice changed (debounced): the window asks for a count.
    void promptEdited();
    void browseModelRequested();
    void browseModelFolderRequested();
    void browsePromptRequested();

private:
    QLineEdit* model_;
    QComboBox* recent_;
    QComboBox* device_;
    QComboBox* dtype_;
    QComboBox* window_;  // the model's sliding window: apply, or ignore (attend over all)
    QSpinBox* threads_;
    QPushButton* load_;
    QLabel* modelInfo_;
    QPlainTextEdit* prompt_;
    QCheckBox* bos_;
    QCheckBox* chat_;
    QLineEdit* system_;
    QSpinBox* newTokens_;
    QSpinBox* decodeEvery_;  // 0: no compression during decoding
    QLabel* tokens_;
    QPushButton* run_;
    QTimer* debounce_;
};

}  // namespace kvlens::ui
