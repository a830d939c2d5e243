// The widget tests need one QApplication for the whole run; they run under Qt's
// offscreen platform (CTest sets QT_QPA_PLATFORM=offscreen), so no X server is needed.
#include <gtest/gtest.h>

#include <QApplication>

int main(int argc, char** argv) {
    ::testing::InitGoogleTest(&argc, argv);
    QApplication app(argc, argv);
    return RUN_ALL_TESTS();
}
