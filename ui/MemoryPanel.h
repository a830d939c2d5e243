// KV memory of a run: per-layer bars of the full and the compressed cache, their totals
// and ratio, this process's resident memory (refreshed while shown) and the GPU's.
#pragma once

#include <QString>
#include <QWidget>
#include <cstdint>
#include <optional>
#include <vector>

class QLabel;
class QTimer;

namespace kvlens {
struct Selection;
}

namespace kvlens::ui {

class MemoryChart;

class MemoryPanel : public QWidget {
    Q_OBJECT

public:
    static constexpr int kProcessRefreshMs = 2000;

    explicit MemoryPanel(QWidget* parent = nullptr);

    void setMemory(std::vector<int64_t> fullBytesPerLayer,
                   std::vector<int64_t> compressedBytesPerLayer, const QString& label);
    void clear(const QString& why);
    // "cpu": the GPU line says it is not in use; otherwise its bytes in use, if known.
    void setDevice(const QString& device, std::optional<int64_t> gpuBytesInUse);

    // A line under the totals (empty: hidden), e.g. channelsText's.
    void setNote(const QString& note);
    QString note() const;
    // What ThinK pruned in `selection`, for the note: the key channels zeroed per head and
    // that the bytes above leave them out while the allocated memory keeps them; "" without.
    static QString channelsText(const Selection& selection, int64_t headDim);

    // The model's sliding window, per layer (0: global; WorkbenchCapture::slidingWindows), for
    // a prompt of `promptLength`: a line saying which layers are local and that their full
    // cache is their window (windowText); hidden without a window that cuts the prompt.
    void setSlidingWindows(const std::vector<int64_t>& windows, int64_t promptLength);
    QString windows() const;
    // "Local layers L0-L3 (sliding window 64 of a 106-token prompt): a decode step reaches
    // their last 63 positions, so their full cache is 63 entries per head, the most a method
    // keeps"; "" when no window is shorter than the prompt.
    static QString windowText(const std::vector<int64_t>& windows, int64_t promptLength);

    // What the last decode's compressed cache really allocated, beside the logical KV above
    // (allocationText; empty: hidden, as after a new selection).
    void setAllocation(const QString& text);
    QString allocation() const;
    // "Allocated: 6.1 MB, the compressed cache's buffers after the gather, room for the decode
    // included (the kept entries 5.8 MB)"; says when the allocation was not recorded (bytes <= 0).
    static QString allocationText(int64_t allocatedBytes, int64_t keptBytes);

    // "KV: 184.5 MB → 23.1 MB (12.5%, 8.0x smaller)".
    static QString totalsText(int64_t fullBytes, int64_t compressedBytes);
    // This process's resident set (VmRSS of /proc/self/status) in bytes; -1 where unknown.
    static int64_t residentBytes();

    QString totals() const;
    QString processText() const;
    QString gpuText() const;
    MemoryChart* chart() const { return chart_; }
    // Whether the process line is being refreshed (only while the panel is shown).
    bool refreshing() const;

protected:
    void showEvent(QShowEvent* event) override;
    void hideEvent(QHideEvent* event) override;

private:
    void refreshProcess();

    QLabel* label_ = nullptr;
    QLabel* totals_ = nullptr;
    QLabel* note_ = nullptr;
    QLabel* allocation_ = nullptr;
    QLabel* windows_ = nullptr;
    MemoryChart* chart_ = nullptr;
    QLabel* process_ = nullptr;
    QLabel* gpu_ = nullptr;
    QTimer* timer_ = nullptr;
};

}  // namespace kvlens::ui
