#include "ui/ImGuiCanvas.h"

#include "ui/ImGuiQtInput.h"

#include <imgui.h>
#include <backends/imgui_impl_opengl3.h>

#include <QFocusEvent>
#include <QKeyEvent>
#include <QMouseEvent>
#include <QOpenGLContext>
#include <QOpenGLFunctions>
#include <QWheelEvent>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <utility>

namespace kvlens::ui {

ImGuiCanvas::ImGuiCanvas(QWidget* parent) : QOpenGLWidget(parent) {
    // CreateContext makes the new context current; put the previous one back so that
    // creating a canvas never changes what another canvas's code sees.
    ImGuiContext* previous = ImGui::GetCurrentContext();
    context_ = ImGui::CreateContext();
    ImGui::SetCurrentContext(context_);
    ImGuiIO& io = ImGui::GetIO();
    io.IniFilename = nullptr;  // no imgui.ini in the working directory
    io.LogFilename = nullptr;
    io.MousePos = ImVec2(-FLT_MAX, -FLT_MAX);
    ImGuiQtInput::installKeyMap(io);
    ImGui::StyleColorsDark();
    ImGui::SetCurrentContext(previous);

    setMouseTracking(true);  // hover moves, not only drags
    setFocusPolicy(Qt::StrongFocus);
    clock_.start();
}

ImGuiCanvas::~ImGuiCanvas() {
    // QOpenGLWidget's destructor would emit aboutToBeDestroyed after this part of the
    // object is gone: drop the connection and release the GL objects now.
    QObject::disconnect(contextGone_);
    releaseGL();
    ImGuiContext* previous = ImGui::GetCurrentContext();
    makeImGuiCurrent();
    ImGui::DestroyContext(context_);
    ImGui::SetCurrentContext(previous == context_ ? nullptr : previous);
}

void ImGuiCanvas::setDrawFunction(std::function<void()> draw) {
    draw_ = std::move(draw);
    requestRedraw();
}

void ImGuiCanvas::setClearColor(const QColor& color) {
    clearColor_ = color;
    requestRedraw();
}

void ImGuiCanvas::requestRedraw() { update(); }

void ImGuiCanvas::drawFrame() {
    if (draw_) draw_();
}

void ImGuiCanvas::makeImGuiCurrent() const { ImGui::SetCurrentContext(context_); }

void ImGuiCanvas::initializeGL() {
    // A widget gets a new GL context when it moves to another top-level window; the
    // old one's objects are released first (releaseGL, through aboutToBeDestroyed).
    releaseGL();
    makeImGuiCurrent();
    backendReady_ = ImGui_ImplOpenGL3_Init(nullptr);
    QObject::disconnect(contextGone_);
    contextGone_ = connect(context(), &QOpenGLContext::aboutToBeDestroyed, this,
                           [this] { releaseGL(); }, Qt::DirectConnection);
}

void ImGuiCanvas::releaseGL() {
    if (!backendReady_) return;
    const bool haveContext = context() != nullptr;
    if (haveContext) makeCurrent();
    makeImGuiCurrent();
    ImGui_ImplOpenGL3_Shutdown();
    backendReady_ = false;
    if (haveContext) doneCurrent();
}

void ImGuiCanvas::paintGL() {
    if (!backendReady_) return;
    makeImGuiCurrent();
    ImGuiIO& io = ImGui::GetIO();
    const qreal ratio = devicePixelRatioF();
    io.DisplaySize = ImVec2(static_cast<float>(width()), static_cast<float>(height()));
    io.DisplayFramebufferScale = ImVec2(static_cast<float>(ratio), static_cast<float>(ratio));
    const qint64 now = clock_.nsecsElapsed();
    const double seconds = lastFrameNs_ < 0 ? 1.0 / 60.0 : static_cast<double>(now - lastFrameNs_) * 1e-9;
    io.DeltaTime = static_cast<float>(std::max(seconds, 1e-4));  // ImGui requires > 0
    lastFrameNs_ = now;

    ImGui_ImplOpenGL3_NewFrame();
    ImGui::NewFrame();
    drawFrame();
    ImGui::Render();

    QOpenGLFunctions* gl = context()->functions();
    gl->glViewport(0, 0, static_cast<int>(std::lround(width() * ratio)),
                   static_cast<int>(std::lround(height() * ratio)));
    gl->glClearColor(static_cast<float>(clearColor_.redF()), static_cast<float>(clearColor_.greenF()),
                     static_cast<float>(clearColor_.blueF()), static_cast<float>(clearColor_.alphaF()));
    gl->glClear(GL_COLOR_BUFFER_BIT);
    ImGui_ImplOpenGL3_RenderDrawData(ImGui::GetDrawData());
    ++frames_;

    if (followUpPending_) {
        followUpPending_ = false;
        update();
    }
}

void ImGuiCanvas::inputChanged() {
    followUpPending_ = true;
    update();
}

void ImGuiCanvas::handleMouse(QMouseEvent* event) {
    makeImGuiCurrent();
    ImGuiIO& io = ImGui::GetIO();
    const QPointF p = event->position();
    io.MousePos = ImVec2(static_cast<float>(p.x()), static_cast<float>(p.y()));
    ImGuiQtInput::setMouseButtons(io, event->buttons());
    ImGuiQtInput::setModifiers(io, event->modifiers());
    event->accept();
    inputChanged();
}

void ImGuiCanvas::mouseMoveEvent(QMouseEvent* event) { handleMouse(event); }
void ImGuiCanvas::mousePressEvent(QMouseEvent* event) { handleMouse(event); }
void ImGuiCanvas::mouseReleaseEvent(QMouseEvent* event) { handleMouse(event); }
void ImGuiCanvas::mouseDoubleClickEvent(QMouseEvent* event) { handleMouse(event); }

void ImGuiCanvas::wheelEvent(QWheelEvent* event) {
    makeImGuiCurrent();
    ImGuiIO& io = ImGui::GetIO();
    const QPointF p = event->position();
    io.MousePos = ImVec2(static_cast<float>(p.x()), static_cast<float>(p.y()));
    ImGuiQtInput::addWheel(io, event->angleDelta().x(), event->angleDelta().y());
    ImGuiQtInput::setModifiers(io, event->modifiers());
    event->accept();
    inputChanged();
}

void ImGuiCanvas::handleKey(QKeyEvent* event, bool down) {
    makeImGuiCurrent();
    ImGuiIO& io = ImGui::GetIO();
    const int index = ImGuiQtInput::keyIndex(event->key());
    if (index >= 0) io.KeysDown[index] = down;
    ImGuiQtInput::setModifiers(io, event->modifiers());
    if (down && !event->text().isEmpty()) {
        const QByteArray utf8 = event->text().toUtf8();
        // Control characters (Tab, Return, Backspace...) travel as keys, not text.
        if (static_cast<unsigned char>(utf8.front()) >= 0x20 && utf8.front() != 0x7f)
            io.AddInputCharactersUTF8(utf8.constData());
    }
    event->accept();
    inputChanged();
}

void ImGuiCanvas::keyPressEvent(QKeyEvent* event) { handleKey(event, true); }
void ImGuiCanvas::keyReleaseEvent(QKeyEvent* event) { handleKey(event, false); }

void ImGuiCanvas::focusInEvent(QFocusEvent* event) {
    makeImGuiCurrent();
    ImGui::GetIO().AddFocusEvent(true);
    QOpenGLWidget::focusInEvent(event);
    inputChanged();
}

void ImGuiCanvas::focusOutEvent(QFocusEvent* event) {
    makeImGuiCurrent();
    ImGui::GetIO().AddFocusEvent(false);  // releases held keys and buttons
    QOpenGLWidget::focusOutEvent(event);
    inputChanged();
}

void ImGuiCanvas::leaveEvent(QEvent* event) {
    makeImGuiCurrent();
    ImGui::GetIO().MousePos = ImVec2(-FLT_MAX, -FLT_MAX);
    QOpenGLWidget::leaveEvent(event);
    inputChanged();
}

}  // namespace kvlens::ui
