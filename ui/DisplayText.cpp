// Number, size, time and run-name text shared by the GUI panels.
#include "ui/DisplayText.h"

#include <QDateTime>
#include <algorithm>
#include <cmath>

namespace kvlens::ui {

QString DisplayText::bytes(int64_t bytes) {
    const double b = double(bytes);
    const double magnitude = std::abs(b);
    if (magnitude < 1e3) return QString::number(bytes) + " B";
    if (magnitude < 1e6) return QString::number(b / 1e3, 'f', 1) + " KB";
    if (magnitude < 1e9) return QString::number(b / 1e6, 'f', 1) + " MB";
    return QString::number(b / 1e9, 'f', 1) + " GB";
}

QString DisplayText::percent(double fraction, int decimals) {
    if (std::isnan(fraction)) return "n/a";
    return QString::number(fraction * 100.0, 'f', decimals) + "%";
}

QString DisplayText::real(double value, int digits) {
    if (std::isnan(value)) return "n/a";
    return QString::number(value, 'g', digits);
}

QString DisplayText::percentDelta(double fraction, int decimals) {
    if (std::isnan(fraction)) return "n/a";
    const QString text = percent(fraction, decimals);
    return fraction >= 0.0 ? "+" + text : text;
}

QString DisplayText::realDelta(double value, int digits) {
    if (std::isnan(value)) return "n/a";
    const QString text = real(value, digits);
    return value >= 0.0 ? "+" + text : text;
}

QString DisplayText::time(int64_t unixMs) {
    return QDateTime::fromMSecsSinceEpoch(unixMs).toString("yyyy-MM-dd HH:mm");
}

QString DisplayText::method(const PressParams& params) {
    QString text = QString::fromStdString(params.method);
    if (params.method == "full") return text;
    if (params.budget > 0) return text + " B=" + QString::number(params.budget);
    return text + " B=" + QString::number(params.budgetRatio * 100.0, 'g', 4) + "%";
}

int64_t DisplayText::budgetEntries(const PressParams& params, int64_t promptTokens) {
    if (params.budget > 0) return params.budget;
    return std::max<int64_t>(1, std::llround(params.budgetRatio * double(promptTokens)));
}

}  // namespace kvlens::ui
