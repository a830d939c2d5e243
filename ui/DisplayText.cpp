// Number, size, time and run-name text shared by the GUI panels.
#include "ui/DisplayText.h"

#include <cctype>

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
    if (params.isFull()) return text;
    if (params.budget > 0) return text + " B=" + QString::number(params.budget);
    return text + " B=" + QString::number(params.budgetRatio * 100.0, 'g', 4) + "%";
}

QString DisplayText::piece(const std::string& piece) {
    const auto hex = [](char c) { return std::isxdigit(static_cast<unsigned char>(c)) != 0; };
    if (piece.size() != 6 || piece.compare(0, 3, "<0x") != 0 || piece[5] != '>' || !hex(piece[3]) || !hex(piece[4]))
        return QString::fromStdString(piece);
    const int byte = std::stoi(piece.substr(3, 2), nullptr, 16);
    if (byte == 0x0A) return QStringLiteral("\u21b5\n");
    if (byte == 0x0D) return QStringLiteral("\u240d");
    if (byte == 0x09) return QStringLiteral("\u21e5");
    if (byte >= 0x20 && byte < 0x7F) return QString(QChar(byte));
    return QString::fromStdString(piece);
}

int64_t DisplayText::budgetEntries(const PressParams& params, int64_t promptTokens) {
    if (params.budget > 0) return params.budget;
    return std::max<int64_t>(1, std::llround(params.budgetRatio * double(promptTokens)));
}

}  // namespace kvlens::ui
