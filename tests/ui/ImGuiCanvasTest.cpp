// ImGuiCanvas drawn for real: a known pattern of "kept / not kept" cells and a label,
// checked pixel by pixel in the grabbed framebuffer; two canvases with independent
// ImGui contexts; Qt input reaching the canvas's ImGuiIO and its frames; and repaints
// on input and on request only.
#include "ui/ImGuiCanvas.h"

#include <gtest/gtest.h>
#include <imgui.h>
#include <imgui_internal.h>

#include <QApplication>
#include <QDir>
#include <QImage>
#include <QKeyEvent>
#include <QMouseEvent>
#include <QOpenGLContext>
#include <QOpenGLFunctions>
#include <QTest>
#include <QWheelEvent>

#include <cfloat>
#include <cstdlib>
#include <iostream>
#include <string>

namespace kvlens::ui {
namespace {

constexpr int kWidth = 320;
constexpr int kHeight = 200;
const QColor kClear(32, 32, 32);
const QColor kKept(40, 200, 80);
const QColor kDropped(220, 40, 40);

ImU32 toImU32(const QColor& c) { return IM_COL32(c.red(), c.green(), c.blue(), 255); }

// Cells 40 px wide at x = 20, 80, 140, 200 (y 20..60): kept, dropped, kept, dropped;
// the label "kept 2/4" at (20, 100). What each frame saw of the input is recorded.
class PatternCanvas : public ImGuiCanvas {
public:
    bool drawCells = true;
    const char* windowName = nullptr;  // an ImGui window to create, if any
    ImGuiContext* currentDuringFrame = nullptr;
    ImVec2 mousePos{-1.0f, -1.0f};
    bool leftDown = false;
    float wheel = 0.0f;
    bool keyADown = false;
    std::string text;

protected:
    void drawFrame() override {
        currentDuringFrame = ImGui::GetCurrentContext();
        const ImGuiIO& io = ImGui::GetIO();
        mousePos = io.MousePos;
        leftDown = ImGui::IsMouseDown(ImGuiMouseButton_Left);
        wheel = io.MouseWheel;
        keyADown = ImGui::IsKeyDown(ImGui::GetKeyIndex(ImGuiKey_A));
        text.clear();
        for (int i = 0; i < io.InputQueueCharacters.Size; ++i)
            text += static_cast<char>(io.InputQueueCharacters[i]);

        if (drawCells) {
            ImDrawList* list = ImGui::GetBackgroundDrawList();
            for (int i = 0; i < 4; ++i) {
                const float x = 20.0f + 60.0f * static_cast<float>(i);
                list->AddRectFilled(ImVec2(x, 20.0f), ImVec2(x + 40.0f, 60.0f), toImU32(i % 2 == 0 ? kKept : kDropped));
            }
            list->AddText(ImVec2(20.0f, 100.0f), IM_COL32(255, 255, 255, 255), "kept 2/4");
        }
        if (windowName != nullptr) {
            ImGui::SetNextWindowPos(ImVec2(0.0f, 150.0f));
            ImGui::Begin(windowName);
            ImGui::End();
        }
    }
};

void showAndWait(ImGuiCanvas& canvas) {
    canvas.setClearColor(kClear);
    canvas.resize(kWidth, kHeight);
    canvas.show();
    ASSERT_TRUE(QTest::qWaitForWindowExposed(&canvas));
    QTest::qWait(100);  // expose, focus and the follow-up frame settle
}

::testing::AssertionResult colourNear(const QImage& image, int x, int y, const QColor& want, int tolerance = 3) {
    const QColor got = image.pixelColor(x, y);
    if (std::abs(got.red() - want.red()) <= tolerance && std::abs(got.green() - want.green()) <= tolerance &&
        std::abs(got.blue() - want.blue()) <= tolerance)
        return ::testing::AssertionSuccess();
    return ::testing::AssertionFailure() << "pixel (" << x << ", " << y << ") is " << got.name().toStdString()
                                         << ", expected " << want.name().toStdString();
}

int brightPixels(const QImage& image, int x0, int y0, int x1, int y1) {
    int n = 0;
    for (int y = y0; y < y1; ++y)
        for (int x = x0; x < x1; ++x) {
            const QColor c = image.pixelColor(x, y);
            if (c.red() > 160 && c.green() > 160 && c.blue() > 160) ++n;
        }
    return n;
}

TEST(ImGuiCanvasTest, DrawsTheKnownPatternAtItsPixels) {
    PatternCanvas canvas;
    showAndWait(canvas);
    canvas.makeCurrent();
    QOpenGLFunctions* gl = canvas.context()->functions();
    const std::string renderer = reinterpret_cast<const char*>(gl->glGetString(GL_RENDERER));
    const std::string version = reinterpret_cast<const char*>(gl->glGetString(GL_VERSION));
    canvas.doneCurrent();
    std::cout << "GL: " << renderer << ", " << version << std::endl;
    RecordProperty("gl_renderer", renderer);

    const QImage image = canvas.grabFramebuffer();
    ASSERT_EQ(image.width(), kWidth);  // Xvfb: device pixel ratio 1
    ASSERT_EQ(image.height(), kHeight);
    QDir().mkpath(KVLENS_UI_TEST_DIR);
    EXPECT_TRUE(image.save(QStringLiteral(KVLENS_UI_TEST_DIR "/imgui_canvas.png")));
    EXPECT_GT(canvas.frameCount(), 0u);

    // Cell centres, and their edges to the pixel: [20, 60) is inside, 19 and 60 are not.
    EXPECT_TRUE(colourNear(image, 40, 40, kKept));
    EXPECT_TRUE(colourNear(image, 100, 40, kDropped));
    EXPECT_TRUE(colourNear(image, 160, 40, kKept));
    EXPECT_TRUE(colourNear(image, 220, 40, kDropped));
    EXPECT_TRUE(colourNear(image, 20, 20, kKept));
    EXPECT_TRUE(colourNear(image, 59, 59, kKept));
    EXPECT_TRUE(colourNear(image, 19, 40, kClear));
    EXPECT_TRUE(colourNear(image, 60, 40, kClear));
    EXPECT_TRUE(colourNear(image, 40, 19, kClear));
    EXPECT_TRUE(colourNear(image, 40, 60, kClear));
    // Not upside down: nothing mirrored at the bottom; the rest is the clear colour.
    EXPECT_TRUE(colourNear(image, 40, kHeight - 40, kClear));
    EXPECT_TRUE(colourNear(image, 300, 180, kClear));
    // The label: white glyph pixels in its line (13 px font), none in the line below.
    EXPECT_GT(brightPixels(image, 20, 100, 120, 114), 30);
    EXPECT_EQ(brightPixels(image, 0, 120, kWidth, 140), 0);
    EXPECT_EQ(brightPixels(image, 0, 0, kWidth, 99), 0);
}

TEST(ImGuiCanvasTest, TwoCanvasesHaveIndependentContexts) {
    PatternCanvas a;
    PatternCanvas b;
    a.windowName = "OnlyInA";
    b.drawCells = false;
    showAndWait(a);
    showAndWait(b);
    b.setClearColor(QColor(0, 0, 128));
    QTest::qWait(50);

    ASSERT_NE(a.imguiContext(), nullptr);
    ASSERT_NE(a.imguiContext(), b.imguiContext());
    EXPECT_EQ(a.currentDuringFrame, a.imguiContext());
    EXPECT_EQ(b.currentDuringFrame, b.imguiContext());

    const QImage imageA = a.grabFramebuffer();
    const QImage imageB = b.grabFramebuffer();
    EXPECT_TRUE(colourNear(imageA, 40, 40, kKept));
    EXPECT_TRUE(colourNear(imageB, 40, 40, QColor(0, 0, 128)));
    EXPECT_TRUE(colourNear(imageA, 300, 10, kClear));
    EXPECT_EQ(brightPixels(imageB, 0, 0, kWidth, kHeight), 0);

    ImGui::SetCurrentContext(a.imguiContext());
    EXPECT_NE(ImGui::FindWindowByName("OnlyInA"), nullptr);
    ImGui::SetCurrentContext(b.imguiContext());
    EXPECT_EQ(ImGui::FindWindowByName("OnlyInA"), nullptr);
    ImGui::SetCurrentContext(nullptr);

    // Input to A lands in A's IO only, whichever context was current before.
    ImGui::SetCurrentContext(b.imguiContext());
    QMouseEvent move(QEvent::MouseMove, QPointF(50, 60), a.mapToGlobal(QPointF(50, 60)), Qt::NoButton, Qt::NoButton,
                     Qt::NoModifier);
    QApplication::sendEvent(&a, &move);
    ImGui::SetCurrentContext(a.imguiContext());
    EXPECT_FLOAT_EQ(ImGui::GetIO().MousePos.x, 50.0f);
    EXPECT_FLOAT_EQ(ImGui::GetIO().MousePos.y, 60.0f);
    ImGui::SetCurrentContext(b.imguiContext());
    EXPECT_NE(ImGui::GetIO().MousePos.x, 50.0f);
    ImGui::SetCurrentContext(nullptr);
}

TEST(ImGuiCanvasTest, InputReachesTheCanvasIOAndItsFrames) {
    PatternCanvas canvas;
    showAndWait(canvas);
    ImGuiContext* context = canvas.imguiContext();

    const std::uint64_t before = canvas.frameCount();
    QMouseEvent move(QEvent::MouseMove, QPointF(70, 45), canvas.mapToGlobal(QPointF(70, 45)), Qt::NoButton,
                     Qt::NoButton, Qt::NoModifier);
    QApplication::sendEvent(&canvas, &move);
    ImGui::SetCurrentContext(context);
    EXPECT_FLOAT_EQ(ImGui::GetIO().MousePos.x, 70.0f);
    EXPECT_FLOAT_EQ(ImGui::GetIO().MousePos.y, 45.0f);
    ImGui::SetCurrentContext(nullptr);
    EXPECT_EQ(canvas.frameCount(), before);  // painted later, by the event loop
    EXPECT_TRUE(QTest::qWaitFor([&] { return canvas.frameCount() >= before + 1; }, 5000));
    QTest::qWait(100);
    EXPECT_LE(canvas.frameCount(), before + 2);  // the frame and at most one follow-up
    EXPECT_FLOAT_EQ(canvas.mousePos.x, 70.0f);
    EXPECT_FLOAT_EQ(canvas.mousePos.y, 45.0f);

    QMouseEvent press(QEvent::MouseButtonPress, QPointF(70, 45), canvas.mapToGlobal(QPointF(70, 45)), Qt::LeftButton,
                      Qt::LeftButton, Qt::NoModifier);
    QApplication::sendEvent(&canvas, &press);
    QTest::qWait(50);
    EXPECT_TRUE(canvas.leftDown);
    QMouseEvent release(QEvent::MouseButtonRelease, QPointF(70, 45), canvas.mapToGlobal(QPointF(70, 45)),
                        Qt::LeftButton, Qt::NoButton, Qt::NoModifier);
    QApplication::sendEvent(&canvas, &release);
    QTest::qWait(50);
    EXPECT_FALSE(canvas.leftDown);

    QWheelEvent wheel(QPointF(70, 45), canvas.mapToGlobal(QPointF(70, 45)), QPoint(), QPoint(0, 120), Qt::NoButton,
                      Qt::NoModifier, Qt::NoScrollPhase, false);
    QApplication::sendEvent(&canvas, &wheel);
    canvas.repaint();  // paint now: the next (follow-up) frame has the wheel consumed
    EXPECT_FLOAT_EQ(canvas.wheel, 1.0f);
    QTest::qWait(50);
    EXPECT_FLOAT_EQ(canvas.wheel, 0.0f);

    QKeyEvent key(QEvent::KeyPress, Qt::Key_A, Qt::NoModifier, QStringLiteral("a"));
    QApplication::sendEvent(&canvas, &key);
    canvas.repaint();
    EXPECT_TRUE(canvas.keyADown);
    EXPECT_EQ(canvas.text, "a");
    QKeyEvent keyUp(QEvent::KeyRelease, Qt::Key_A, Qt::NoModifier, QStringLiteral("a"));
    QApplication::sendEvent(&canvas, &keyUp);
    QTest::qWait(50);
    EXPECT_FALSE(canvas.keyADown);
    EXPECT_EQ(canvas.text, "");

    QEvent leave(QEvent::Leave);
    QApplication::sendEvent(&canvas, &leave);
    QTest::qWait(50);
    EXPECT_LT(canvas.mousePos.x, -1e30f);  // ImGui's "no mouse"
}

TEST(ImGuiCanvasTest, RepaintsOnRequestAndNeverOnItsOwn) {
    PatternCanvas canvas;
    showAndWait(canvas);
    QTest::qWait(200);
    const std::uint64_t idle = canvas.frameCount();
    QTest::qWait(300);
    EXPECT_EQ(canvas.frameCount(), idle);  // no timer, no frame loop

    canvas.requestRedraw();
    EXPECT_TRUE(QTest::qWaitFor([&] { return canvas.frameCount() > idle; }, 5000));
    QTest::qWait(200);  // new data: one frame, no follow-up
    EXPECT_EQ(canvas.frameCount(), idle + 1);
}

TEST(ImGuiCanvasTest, CanvasNeverShownIsDestroyedCleanly) {
    ImGuiContext* before = ImGui::GetCurrentContext();
    {
        PatternCanvas canvas;
        EXPECT_NE(canvas.imguiContext(), nullptr);
        EXPECT_EQ(ImGui::GetCurrentContext(), before);  // construction leaves the current one alone
        EXPECT_EQ(canvas.frameCount(), 0u);
    }
    EXPECT_EQ(ImGui::GetCurrentContext(), before);
}

}  // namespace
}  // namespace kvlens::ui
