// kvlens-gui [--model M] [--prompt-file F] [--run] [--store PATH] [--settings INI]: the desktop
// window. A bad flag is one line on stderr and exit 2, like the CLI.
#include <QApplication>
#include <QCommandLineParser>
#include <QSurfaceFormat>

#include <cstdio>

#include "ui/MainWindow.h"

#ifndef KVLENS_VERSION
#define KVLENS_VERSION "unknown"
#endif

int main(int argc, char** argv) {
    QApplication app(argc, argv);
    QApplication::setApplicationName("kvlens-gui");
    QApplication::setApplicationVersion(KVLENS_VERSION);
    QCommandLineParser parser;
    parser.setApplicationDescription("KV Lens: what KV-cache compression keeps, and what it costs.");
    parser.addHelpOption();
    parser.addVersionOption();
    parser.addOption({"model", "A GGUF file, a Hugging Face folder or random:<preset> to load at start.", "M"});
    parser.addOption({"prompt-file", "A text file to put in the prompt editor.", "F"});
    parser.addOption({"store", "The session store (SQLite file).", "PATH"});
    parser.addOption({"run", "Run the prompt as soon as the model has loaded."});
    parser.addOption({"settings", "An INI file for the window layout and recent models.", "INI"});
    if (!parser.parse(QApplication::arguments())) {
        std::fprintf(stderr, "kvlens-gui: error: %s\n", qPrintable(parser.errorText()));
        return 2;
    }
    if (parser.isSet("help")) parser.showHelp(0);
    if (parser.isSet("version")) parser.showVersion();
    if (!parser.positionalArguments().isEmpty()) {
        std::fprintf(stderr, "kvlens-gui: error: unexpected argument '%s'\n",
                     qPrintable(parser.positionalArguments().first()));
        return 2;
    }
    kvlens::ui::MainWindow::Options options;
    // Without --model, the model the CLI would pick: $KVLENS_MODEL, then the project's
    // testbed (models/kvlens-testbed.gguf), then the shared stories260K.gguf; with none
    // the window opens empty and says how to open one.
    options.model = parser.isSet("model") ? parser.value("model") : kvlens::ui::MainWindow::defaultModel();
    if (parser.isSet("model") && options.model.isEmpty()) {
        std::fprintf(stderr, "kvlens-gui: error: --model is empty\n");
        return 2;
    }
    options.promptFile = parser.value("prompt-file");
    options.store = parser.value("store");
    options.settings = parser.value("settings");
    options.runAtStart = parser.isSet("run");
    kvlens::ui::MainWindow window(options);
    window.show();
    return QApplication::exec();
}
