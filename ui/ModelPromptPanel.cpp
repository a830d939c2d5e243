#include "ui/ModelPromptPanel.h"

#include <algorithm>

#include <QCheckBox>
#include <QComboBox>
#include <QFile>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QPlainTextEdit>
#include <QFileInfo>
#include <QPushButton>
#include <QSpinBox>
#include <QThread>
#include <QTimer>
#include <QVBoxLayout>

#include "core/Error.h"
#include "core/Methods.h"
#include "ui/DisplayText.h"

namespace kvlens::ui {

ModelPromptPanel::ModelPromptPanel(QWidget* parent) : QWidget(parent) {
    auto* layout = new QVBoxLayout(this);

    auto* modelRow = new QHBoxLayout;
    model_ = new QLineEdit;
    model_->setObjectName("modelPath");
    model_->setPlaceholderText("GGUF file, Hugging Face folder or random:<preset>");
    model_->setToolTip("A GGUF file (llama, mistral, qwen2, qwen3), a Hugging Face folder (config.json,\n"
                       "safetensors, tokenizer.json or tokenizer.model), or random:<preset>[:layers=N][:ctx=N]\n"
                       "with presets tiny, tinyllama-1.1b, llama2-7b, llama3-8b, mistral-7b");
    auto* browse = new QPushButton("Open...");
    browse->setToolTip("Choose a GGUF file, or a Hugging Face folder's config.json (Ctrl+O)");
    auto* browseFolder = new QPushButton("Folder...");
    browseFolder->setToolTip("Choose a Hugging Face model folder (Ctrl+Shift+F)");
    modelRow->addWidget(model_, 1);
    modelRow->addWidget(browse);
    modelRow->addWidget(browseFolder);
    layout->addLayout(modelRow);

    recent_ = new QComboBox;
    recent_->setObjectName("recentModels");
    recent_->setPlaceholderText("Recent models");
    layout->addWidget(recent_);

    auto* form = new QFormLayout;
    device_ = new QComboBox;
    device_->setObjectName("device");
    device_->addItem("cpu");
    if (Workbench::cudaAvailable()) device_->addItem("cuda");
    dtype_ = new QComboBox;
    dtype_->setObjectName("dtype");
    dtype_->addItems({"auto", "f32", "bf16", "f16"});
    dtype_->setToolTip("auto: bf16 on CUDA and on CPUs with AVX512-BF16 or AMX, else f32");
    window_ = new QComboBox;
    window_->setObjectName("slidingWindow");
    window_->addItems({"window: apply", "window: ignore"});
    window_->setToolTip(
        "A model's sliding window (Phi-3, Mistral v0.1, Gemma): apply attends as the model was trained, in the "
        "prefill, the methods' scores and every decode step, and a local layer keeps at most its window; ignore "
        "attends over the whole sequence (as llama.cpp runs Mistral). Read when the model loads.");
    threads_ = new QSpinBox;
    threads_->setObjectName("threads");
    threads_->setRange(1, 1024);
    threads_->setValue(std::max(1, QThread::idealThreadCount()));
    auto* deviceRow = new QHBoxLayout;
    deviceRow->addWidget(device_);
    deviceRow->addWidget(dtype_);
    deviceRow->addWidget(window_);
    deviceRow->addWidget(new QLabel("threads"));
    deviceRow->addWidget(threads_);
    form->addRow("Device", deviceRow);
    layout->addLayout(form);

    load_ = new QPushButton("Load model");
    load_->setObjectName("loadModel");
    layout->addWidget(load_);
    modelInfo_ = new QLabel("No model loaded.");
    modelInfo_->setObjectName("modelInfo");
    modelInfo_->setWordWrap(true);
    modelInfo_->setTextInteractionFlags(Qt::TextSelectableByMouse);
    // The model's shape is never squeezed; the prompt editor gives way instead.
    modelInfo_->setSizePolicy(QSizePolicy::Preferred, QSizePolicy::Minimum);
    layout->addWidget(modelInfo_);

    auto* promptHeader = new QHBoxLayout;
    promptHeader->addWidget(new QLabel("<b>Prompt</b>"));
    promptHeader->addStretch(1);
    auto* openPrompt = new QPushButton("Open text...");
    openPrompt->setToolTip("Read the prompt from a text file (Ctrl+Shift+O)");
    promptHeader->addWidget(openPrompt);
    layout->addLayout(promptHeader);
    prompt_ = new QPlainTextEdit;
    prompt_->setObjectName("prompt");
    prompt_->setPlaceholderText("Paste or type a long prompt here.");
    prompt_->setMinimumHeight(60);
    layout->addWidget(prompt_, 1);

    auto* chatRow = new QHBoxLayout;
    chat_ = new QCheckBox("Chat");
    chat_->setObjectName("chat");
    chat_->setEnabled(false);
    chat_->setToolTip("Load a model with a chat template first");
    system_ = new QLineEdit;
    system_->setObjectName("systemMessage");
    system_->setPlaceholderText("system message (optional)");
    system_->setEnabled(false);
    chatRow->addWidget(chat_);
    chatRow->addWidget(system_, 1);
    layout->addLayout(chatRow);

    auto* runRow = new QHBoxLayout;
    bos_ = new QCheckBox("BOS");
    bos_->setChecked(true);
    bos_->setToolTip("Prepend the BOS token when the vocabulary asks for it");
    newTokens_ = new QSpinBox;
    newTokens_->setObjectName("newTokens");
    newTokens_->setRange(1, 4096);
    newTokens_->setValue(32);
    newTokens_->setToolTip("Tokens decoded to compare outputs (Outputs panel)");
    tokens_ = new QLabel("-");
    tokens_->setObjectName("tokenCount");
    runRow->addWidget(bos_);
    runRow->addWidget(new QLabel("decode"));
    runRow->addWidget(newTokens_);
    decodeEvery_ = new QSpinBox;
    decodeEvery_->setObjectName("decodeEvery");
    decodeEvery_->setRange(0, 4096);
    decodeEvery_->setValue(0);
    decodeEvery_->setSpecialValueText("off");
    // The methods named from the table's decode forms, so a new one appears here unedited.
    const std::string own = methods::listWhere([](const MethodInfo& m) { return m.decode == DecodeForm::Own; }, ", ");
    const std::string viaScorer =
        methods::listWhere([](const MethodInfo& m) { return m.decode == DecodeForm::ViaScorer; }, " and ");
    const std::string scorers = methods::listWhere(
        [](const MethodInfo& m) { return m.usableAsScorer && m.decode == DecodeForm::Own; }, " or ");
    decodeEvery_->setToolTip(QString::fromStdString(
        "Compression during decoding: every N steps each head above the budget (in entries)\n"
        "is cut back to it by the method's rule (" + own + ";\n" + viaScorer + " with --scorer " + scorers +
        ");\noff: the compressed cache grows by one entry a step"));
    runRow->addWidget(new QLabel("compress every"));
    runRow->addWidget(decodeEvery_);
    runRow->addStretch(1);
    runRow->addWidget(tokens_);
    layout->addLayout(runRow);
    run_ = new QPushButton("Run prompt");
    run_->setObjectName("runPrompt");
    run_->setToolTip("Prefill the prompt and capture what the methods need (Ctrl+R)");
    layout->addWidget(run_);

    debounce_ = new QTimer(this);
    debounce_->setSingleShot(true);
    debounce_->setInterval(150);
    connect(debounce_, &QTimer::timeout, this, &ModelPromptPanel::promptEdited);
    connect(prompt_, &QPlainTextEdit::textChanged, debounce_, qOverload<>(&QTimer::start));
    connect(bos_, &QCheckBox::toggled, debounce_, qOverload<>(&QTimer::start));
    connect(chat_, &QCheckBox::toggled, this, [this](bool on) {
        system_->setEnabled(on);
        debounce_->start();
    });
    connect(system_, &QLineEdit::textChanged, debounce_, qOverload<>(&QTimer::start));
    connect(load_, &QPushButton::clicked, this, &ModelPromptPanel::loadRequested);
    connect(model_, &QLineEdit::returnPressed, this, &ModelPromptPanel::loadRequested);
    connect(run_, &QPushButton::clicked, this, &ModelPromptPanel::runRequested);
    connect(browse, &QPushButton::clicked, this, &ModelPromptPanel::browseModelRequested);
    connect(browseFolder, &QPushButton::clicked, this, &ModelPromptPanel::browseModelFolderRequested);
    connect(openPrompt, &QPushButton::clicked, this, &ModelPromptPanel::browsePromptRequested);
    connect(recent_, qOverload<int>(&QComboBox::activated), this, [this](int index) {
        if (index >= 0) model_->setText(recent_->itemText(index));
    });
}

Workbench::LoadOptions ModelPromptPanel::loadOptions() const {
    Workbench::LoadOptions o;
    o.model = model_->text().trimmed().toStdString();
    o.device = device_->currentText().toStdString();
    o.dtype = dtype_->currentText().toStdString();
    o.threads = threads_->value();
    o.ignoreSlidingWindow = window_->currentIndex() == 1;
    return o;
}

void ModelPromptPanel::setModelText(const QString& model) { model_->setText(model); }
QString ModelPromptPanel::promptText() const { return prompt_->toPlainText(); }
void ModelPromptPanel::setPromptText(const QString& text) { prompt_->setPlainText(text); }
bool ModelPromptPanel::addBos() const { return bos_->isChecked(); }
void ModelPromptPanel::setAddBos(bool addBos) { bos_->setChecked(addBos); }

WorkbenchPrompt ModelPromptPanel::prompt() const {
    WorkbenchPrompt p;
    p.text = promptText().toStdString();
    p.addBos = addBos();
    p.chat = chat_->isEnabled() && chat_->isChecked();
    if (p.chat) p.system = system_->text().toStdString();
    return p;
}

void ModelPromptPanel::setChat(bool chat, const QString& system) {
    chat_->setChecked(chat && chat_->isEnabled());
    system_->setText(system);
}
int64_t ModelPromptPanel::newTokens() const { return newTokens_->value(); }
int64_t ModelPromptPanel::decodeEvery() const { return decodeEvery_->value(); }
void ModelPromptPanel::setNewTokens(int64_t tokens) {
    newTokens_->setValue(static_cast<int>(std::clamp<int64_t>(tokens, newTokens_->minimum(), newTokens_->maximum())));
}

void ModelPromptPanel::setRecentModels(const QStringList& models) {
    recent_->clear();
    recent_->addItems(models);
    recent_->setCurrentIndex(-1);
}

void ModelPromptPanel::showModel(const WorkbenchModel& m) {
    const QString where = m.isFile ? QString::fromStdString(m.path) : QString::fromStdString(m.spec);
    modelInfo_->setText(
        QString("<b>%1</b> (%2)<br>%3 layers, %4 query / %5 KV heads, head dim %6, width %7<br>"
                "context %8, vocabulary %9, %10 parameters<br>"
                "weights %11 in %12 on %13; KV %14 per token (%15 per 1K)")
            .arg(QString::fromStdString(m.name.empty() ? m.architecture : m.name).toHtmlEscaped(),
                 where.toHtmlEscaped())
            .arg(m.layers)
            .arg(m.heads)
            .arg(m.kvHeads)
            .arg(m.headDim)
            .arg(m.embedDim)
            .arg(m.contextLength)
            .arg(m.vocabSize)
            .arg(QString::number(double(m.parameters) / 1e6, 'f', m.parameters < 10'000'000 ? 2 : 0) + "M")
            .arg(DisplayText::bytes(m.weightBytes), QString::fromStdString(m.dtype),
                 QString::fromStdString(m.device), DisplayText::bytes(m.kvBytesPerToken),
                 DisplayText::bytes(m.kvBytesPerToken * 1024)));
    tokens_->setText("-");

    const bool hasChat = !m.chatTemplate.empty();
    chat_->setEnabled(hasChat);
    if (!hasChat) chat_->setChecked(false);
    system_->setEnabled(hasChat && chat_->isChecked());
    chat_->setText(hasChat ? QString("Chat (%1)").arg(QString::fromStdString(m.chatTemplate)) : QString("Chat"));
    chat_->setToolTip(hasChat ? QString("Send the prompt as one user turn of the model's chat template (%1), "
                                        "its control tokens parsed; docs/cli.md (Chat templates) says exactly what is sent")
                                    .arg(QString::fromStdString(m.chatTemplate))
                              : QString("This model has no chat template KV Lens recognises: the prompt "
                                        "goes as plain text"));
}

void ModelPromptPanel::showTokenCount(int64_t tokens, int64_t context) {
    const bool over = tokens + newTokens_->value() > context;
    tokens_->setText(QString("%1 / %2 tokens").arg(tokens).arg(context));
    tokens_->setStyleSheet(over ? "color: #d55e00; font-weight: bold;" : "");
    tokens_->setToolTip(over ? QString("The prompt and %1 decoded tokens do not fit in the context of %2")
                                   .arg(newTokens_->value())
                                   .arg(context)
                             : QString("Prompt tokens of the model's context"));
}

void ModelPromptPanel::setIdle(bool idle) {
    load_->setEnabled(idle);
    run_->setEnabled(idle);
}

void ModelPromptPanel::openPromptFile(const QString& path) {
    QFile file(path);
    if (!file.open(QIODevice::ReadOnly)) {
        throw Error("prompt file " + path.toStdString() + ": cannot read: " + file.errorString().toStdString());
    }
    const QByteArray bytes = file.readAll();
    if (bytes.isEmpty()) throw Error("prompt file " + path.toStdString() + ": the file is empty");
    prompt_->setPlainText(QString::fromUtf8(bytes));
}

QString ModelPromptPanel::modelFromChoice(const QString& path) {
    const QFileInfo info(path);
    if (info.fileName() == "config.json") return info.absolutePath();
    return path;
}

}  // namespace kvlens::ui
