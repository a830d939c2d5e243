#include "reports/QtRuntime.h"

#include <QGuiApplication>
#include <QtGlobal>
#include <cstdio>
#include <cstdlib>

namespace kvlens {
namespace {

void quietHandler(QtMsgType type, const QMessageLogContext&, const QString& message) {
    if (type == QtFatalMsg || std::getenv("KVLENS_QT_DEBUG")) {
        std::fprintf(stderr, "kvlens: qt: %s\n", message.toLocal8Bit().constData());
    }
}

}  // namespace

void QtRuntime::ensure() {
    if (QCoreApplication::instance()) return;
    if (!qEnvironmentVariableIsSet("QT_QPA_PLATFORM")) qputenv("QT_QPA_PLATFORM", "offscreen");
    qInstallMessageHandler(quietHandler);
    static int argc = 1;
    static char name[] = "kvlens";
    static char* argv[] = {name, nullptr};
    static QGuiApplication* app = new QGuiApplication(argc, argv);
    (void)app;
}

}  // namespace kvlens
