// Run KV memory (chart, totals, ratio) plus process and GPU memory lines.
#include "ui/MemoryPanel.h"

#include "core/Selection.h"

#include <QLabel>
#include <QStringList>
#include <QTimer>
#include <QVBoxLayout>
#include <fstream>
#include <numeric>
#include <sstream>
#include <string>

#include "ui/DisplayText.h"
#include "ui/MemoryChart.h"

namespace kvlens::ui {

MemoryPanel::MemoryPanel(QWidget* parent) : QWidget(parent) {
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(4, 4, 4, 4);
    label_ = new QLabel(this);
    label_->setObjectName("label");
    layout->addWidget(label_);
    totals_ = new QLabel(this);
    totals_->setObjectName("totals");
    totals_->setTextInteractionFlags(Qt::TextSelectableByMouse);
    QFont bold = totals_->font();
    bold.setBold(true);
    totals_->setFont(bold);
    layout->addWidget(totals_);
    note_ = new QLabel(this);
    note_->setObjectName("note");
    note_->setWordWrap(true);
    note_->hide();
    layout->addWidget(note_);
    allocation_ = new QLabel(this);
    allocation_->setObjectName("allocation");
    allocation_->setWordWrap(true);
    allocation_->hide();
    layout->addWidget(allocation_);
    windows_ = new QLabel(this);
    windows_->setObjectName("windows");
    windows_->setWordWrap(true);
    windows_->hide();
    layout->addWidget(windows_);
    chart_ = new MemoryChart(this);
    layout->addWidget(chart_, 1);
    process_ = new QLabel(this);
    process_->setObjectName("process");
    layout->addWidget(process_);
    gpu_ = new QLabel(this);
    gpu_->setObjectName("gpu");
    layout->addWidget(gpu_);

    // Runs only while the panel is visible: a hidden panel costs no wake-ups.
    timer_ = new QTimer(this);
    timer_->setInterval(kProcessRefreshMs);
    connect(timer_, &QTimer::timeout, this, &MemoryPanel::refreshProcess);

    clear("No run yet");
    setDevice("cpu", std::nullopt);
    refreshProcess();
}

QString MemoryPanel::totalsText(int64_t full, int64_t compressed) {
    QString text = "KV: " + DisplayText::bytes(full) + " \u2192 " + DisplayText::bytes(compressed);
    if (full <= 0) return text;
    text += " (" + DisplayText::percent(double(compressed) / double(full));
    if (compressed > 0 && compressed < full) {
        text += ", " + QString::number(double(full) / double(compressed), 'f', 1) + "x smaller";
    } else if (compressed > full) {
        text += ", " + QString::number(double(compressed) / double(full), 'f', 1) + "x larger";
    }
    return text + ")";
}

void MemoryPanel::setMemory(std::vector<int64_t> full, std::vector<int64_t> compressed,
                            const QString& label) {
    const int64_t fullTotal = std::accumulate(full.begin(), full.end(), int64_t(0));
    const int64_t compressedTotal =
        std::accumulate(compressed.begin(), compressed.end(), int64_t(0));
    label_->setText(label);
    totals_->setText(totalsText(fullTotal, compressedTotal));
    chart_->setBytes(std::move(full), std::move(compressed));
}

void MemoryPanel::setNote(const QString& note) {
    note_->setText(note);
    note_->setVisible(!note.isEmpty());
}

QString MemoryPanel::note() const { return note_->text(); }

void MemoryPanel::setAllocation(const QString& text) {
    allocation_->setText(text);
    allocation_->setVisible(!text.isEmpty());
}

QString MemoryPanel::allocation() const { return allocation_->text(); }

QString MemoryPanel::allocationText(int64_t allocated, int64_t kept) {
    if (allocated <= 0) return "Allocated: not recorded (a run stored before the store kept it)";
    return QString("Allocated: %1, the compressed cache's buffers after the gather, room for the decode included "
                   "(the kept entries %2)")
        .arg(DisplayText::bytes(allocated), DisplayText::bytes(kept));
}

void MemoryPanel::setSlidingWindows(const std::vector<int64_t>& windows, int64_t promptLength) {
    const QString text = windowText(windows, promptLength);
    windows_->setText(text);
    windows_->setVisible(!text.isEmpty());
}

QString MemoryPanel::windows() const { return windows_->text(); }

QString MemoryPanel::windowText(const std::vector<int64_t>& windows, int64_t promptLength) {
    // The local layers whose window is shorter than the prompt, as runs "L0-L3, L6".
    QStringList runs;
    int64_t window = 0, count = 0;
    for (size_t l = 0; l < windows.size();) {
        if (windows[l] <= 0 || windows[l] - 1 >= promptLength) {
            ++l;
            continue;
        }
        window = windows[l];
        size_t end = l + 1;
        while (end < windows.size() && windows[end] == window) ++end;
        count += static_cast<int64_t>(end - l);
        runs << (end - l == 1 ? QString("L%1").arg(l) : QString("L%1-L%2").arg(l).arg(end - 1));
        l = end;
    }
    if (count == 0) return QString();
    return QString("%1 %2 (sliding window %3 of a %4-token prompt): a decode step reaches %5 last %6 positions, "
                   "so %7 full cache is %6 entries per head, the most a method keeps there")
        .arg(QString(count == 1 ? "Local layer" : "Local layers"), runs.join(", "))
        .arg(window)
        .arg(promptLength)
        .arg(QString(count == 1 ? "its" : "their"))
        .arg(window - 1)
        .arg(QString(count == 1 ? "its" : "their"));
}

QString MemoryPanel::channelsText(const Selection& s, int64_t headDim) {
    if (s.prunedChannels.empty() || s.prunedChannels[0].empty()) return QString();
    const int64_t n = s.pruned(0, 0);
    const QString of = headDim > 0 ? QString(" of %1").arg(headDim) : QString();
    return QString("ThinK: %1%2 key channels pruned in every kept prompt key (zeroed in place, as kvpress "
                   "does): the KV above leaves them out, the memory allocated still holds them")
        .arg(n)
        .arg(of);
}

void MemoryPanel::clear(const QString& why) {
    setNote(QString());
    setAllocation(QString());
    label_->clear();
    totals_->setText("KV: \u2014");
    chart_->setMessage(why);
}

void MemoryPanel::setDevice(const QString& device, std::optional<int64_t> gpuBytesInUse) {
    if (device.isEmpty() || device.startsWith("cpu")) {
        gpu_->setText("GPU memory: not in use (CPU run)");
    } else if (gpuBytesInUse) {
        gpu_->setText("GPU memory: " + DisplayText::bytes(*gpuBytesInUse) + " in use on " + device);
    } else {
        gpu_->setText("GPU memory: not measured on " + device);
    }
}

int64_t MemoryPanel::residentBytes() {
    std::ifstream status("/proc/self/status");
    std::string line;
    while (std::getline(status, line)) {
        if (line.rfind("VmRSS:", 0) != 0) continue;
        std::istringstream fields(line.substr(6));
        int64_t kilobytes = -1;
        std::string unit;
        if (fields >> kilobytes >> unit && unit == "kB") return kilobytes * 1024;
        return -1;
    }
    return -1;
}

void MemoryPanel::refreshProcess() {
    const int64_t rss = residentBytes();
    process_->setText("Process memory (resident): " +
                      (rss >= 0 ? DisplayText::bytes(rss) : QString("n/a")));
}

void MemoryPanel::showEvent(QShowEvent* event) {
    refreshProcess();
    timer_->start();
    QWidget::showEvent(event);
}

void MemoryPanel::hideEvent(QHideEvent* event) {
    timer_->stop();
    QWidget::hideEvent(event);
}

QString MemoryPanel::totals() const { return totals_->text(); }
QString MemoryPanel::processText() const { return process_->text(); }
QString MemoryPanel::gpuText() const { return gpu_->text(); }
bool MemoryPanel::refreshing() const { return timer_->isActive(); }

}  // namespace kvlens::ui
